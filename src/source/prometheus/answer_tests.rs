//! The bounded reader on small answers: what is kept, what is counted as left out.

use super::*;

/// An answer's series and what was left out of it.
#[derive(Debug, Default)]
struct Answer {
    series: Vec<Series>,
    cut: Cut,
}

/// The whole answer kept, series by series, as these tests read it (the source hands each
/// series on as it is parsed: `read_each`).
fn read(body: &str, limits: &Limits) -> Result<Answer, String> {
    let mut series = Vec::new();
    let cut = read_each(body, limits, &mut |s| series.push(s))?;
    Ok(Answer { series, cut })
}

const SMALL: Limits = Limits {
    series: 2,
    label_bytes: 8,
    points: 3,
};

#[test]
fn answers_are_read_and_errors_named() {
    let v = r#"{"status":"success","data":{"resultType":"vector","result":[
        {"metric":{"__name__":"up","instance":"a:1","job":"x"},"value":[10.5,"1"]},
        {"metric":{"__name__":"up","instance":"b:1"},"value":[10.5,"NaN"]}]}}"#;
    let s = read(v, &LIMITS).unwrap().series;
    assert_eq!(s[0].points, [(10.5, 1.0)]);
    let mut kept = Labels::default();
    kept.insert("__name__", "up".into());
    kept.insert("instance", "a:1".into());
    assert_eq!(s[0].labels, kept, "job is not read");
    assert!(s[1].points.is_empty(), "NaN is no reading");
    let m = r#"{"status":"success","data":{"resultType":"matrix","result":[
        {"metric":{"uuid":"GPU-\u0031"},"values":[[1,"2"],[2,"3"]]}]}}"#;
    let s = read(m, &LIMITS).unwrap().series;
    assert_eq!(s[0].points, [(1.0, 2.0), (2.0, 3.0)]);
    assert_eq!(
        s[0].labels.get("uuid").unwrap(),
        "GPU-1",
        "escapes are read"
    );
    let e = r#"{"status":"error","errorType":"bad_data","error":"parse error at char 3"}"#;
    assert_eq!(
        read(e, &LIMITS).unwrap_err(),
        "Prometheus: parse error at char 3"
    );
    assert_eq!(error_text(e).unwrap(), "Prometheus: parse error at char 3");
    assert!(
        read("<html>", &LIMITS)
            .unwrap_err()
            .starts_with("not a Prometheus API answer")
    );
}

#[test]
fn series_labels_and_points_beyond_the_limits_are_counted_and_left_out() {
    let m = r#"{"status":"success","data":{"resultType":"matrix","result":[
        {"metric":{"uuid":"GPU-1","name":"much too long"},"values":[[1,"1"],[2,"2"],[3,"3"],[4,"4"],[5,"5"]]},
        {"metric":{"uuid":"GPU-2"},"values":[[1,"1"]]},
        {"metric":{"uuid":"GPU-3"},"values":[[1,"1"]]},
        {"metric":{"uuid":"GPU-4"},"values":[[1,"1"]]}]}}"#;
    let a = read(m, &SMALL).unwrap();
    assert_eq!(a.series.len(), 2);
    assert_eq!(a.series[0].points, [(3.0, 3.0), (4.0, 4.0), (5.0, 5.0)]);
    assert_eq!(
        a.series[0].labels.get("name"),
        None,
        "left out, not cut short"
    );
    assert_eq!(
        a.cut,
        Cut {
            series: 2,
            labels: 1,
            points: 2
        }
    );
}

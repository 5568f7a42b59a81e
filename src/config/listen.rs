//! The exporter conventions admins type by habit (issue 23): `--web.listen-address`, as
//! node_exporter and dcgm-exporter spell it (`HOST:PORT`, `[IPv6]:PORT`, `:PORT` for every
//! interface, a host name; repeatable), and `--web.telemetry-path`. Checks their form only:
//! names are looked up, and addresses bound, by `serve`.

use std::fmt;
use std::net::SocketAddr;

use super::SettingsError;
use super::file::Entry;
use super::values::{Got, Resolver};

/// One `--web.listen-address`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListenAddress {
    /// An IP address and port.
    Socket(SocketAddr),
    /// `:PORT`: every interface, IPv6 and IPv4.
    Every(u16),
    /// `HOST:PORT` with a host name: each address it resolves to.
    Host(String, u16),
}

impl fmt::Display for ListenAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddress::Socket(addr) => write!(f, "{addr}"),
            ListenAddress::Every(port) => write!(f, ":{port}"),
            ListenAddress::Host(host, port) => write!(f, "{host}:{port}"),
        }
    }
}

const FORMS: &str = "use HOST:PORT, [IPv6]:PORT or :PORT (every interface), e.g. :9445";

impl ListenAddress {
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if let Ok(addr) = text.parse::<SocketAddr>() {
            return Ok(ListenAddress::Socket(addr));
        }
        let (host, port) = text
            .rsplit_once(':')
            .ok_or_else(|| format!("no port: {FORMS}"))?;
        let port: u16 = port
            .parse()
            .map_err(|_| format!("{port:?} is not a port (0 to 65535): {FORMS}"))?;
        if host.is_empty() {
            return Ok(ListenAddress::Every(port));
        }
        let name_like = host.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
        if !name_like || host.len() > 253 {
            return Err(format!(
                "{host:?} is neither an IP address nor a host name: {FORMS}"
            ));
        }
        Ok(ListenAddress::Host(host.to_string(), port))
    }
}

/// Every `--web.listen-address`; an error when `--listen` is given too (two flags for one
/// thing: say which to keep rather than pick one).
pub(super) fn web_listen_addresses(
    given: &[String],
    listen_flag: bool,
) -> Result<Vec<ListenAddress>, SettingsError> {
    let origin = || "--web.listen-address".to_string();
    if !given.is_empty() && listen_flag {
        return Err(SettingsError::new(
            origin(),
            "given with --listen, which sets the same thing: keep one".into(),
            None,
        ));
    }
    given
        .iter()
        .map(|text| {
            ListenAddress::parse(text)
                .map_err(|why| SettingsError::new(origin(), why, Some(format!("{text:?}"))))
        })
        .collect()
}

/// `[serve] web_listen_address`, a list in the forms above, for when neither flag nor
/// variable sets the address: `--listen`/`GPUWATCH_LISTEN` and `--web.listen-address` are
/// layers above the file and win, and `[serve] listen` beside it in the file is refused (two
/// keys for one thing: say which to keep rather than pick one). `listen` is what the layers
/// made of `listen` (its origin says whether the file gave it). With the addresses, where
/// they were written (`FILE:LINE: serve.web_listen_address`).
pub(super) fn file_listen_addresses(
    r: &Resolver,
    entry: &Entry<Vec<String>>,
    listen: &Got<SocketAddr>,
) -> Result<Option<(Vec<ListenAddress>, String)>, SettingsError> {
    const KEY: &str = "serve.web_listen_address";
    let Some(entry) = entry else {
        return Ok(None);
    };
    if listen.given_for_this_run() {
        return Ok(None);
    }
    let bad = |why: String| Err(r.file_error(KEY, &entry.span(), why));
    if listen.given() {
        return bad("given with serve.listen, which sets the same thing: keep one".into());
    }
    if entry.get_ref().is_empty() {
        return bad(format!("names no address: {FORMS}"));
    }
    let mut addresses = Vec::new();
    for text in entry.get_ref() {
        match ListenAddress::parse(text) {
            Ok(address) => addresses.push(address),
            Err(why) => return bad(format!("{text:?}: {why}")),
        }
    }
    Ok(Some((addresses, r.file_place(KEY, &entry.span()))))
}

/// The routes besides the metrics, which the metrics must not hide.
const TAKEN: [&str; 4] = ["/", "/-/ready", "/-/healthy", "/api/v1/snapshot"];

/// `--web.telemetry-path` (default `/metrics`): an absolute path of plain characters.
pub(super) fn telemetry_path(given: Option<&str>) -> Result<String, SettingsError> {
    let Some(path) = given else {
        return Ok("/metrics".into());
    };
    let bad = |why: &str| {
        SettingsError::new(
            "--web.telemetry-path".into(),
            why.into(),
            Some(format!("{path:?}")),
        )
    };
    if !path.starts_with('/') || path.len() > 256 {
        return Err(bad("must be a path starting with /, e.g. /metrics"));
    }
    let plain = |b: u8| b.is_ascii_alphanumeric() || b"/-._~".contains(&b);
    if !path.bytes().all(plain) || path.contains("//") {
        return Err(bad(
            "may hold only letters, digits, / - . _ ~ (one / at a time)",
        ));
    }
    if TAKEN.contains(&path) {
        return Err(bad("is another page of the exporter's"));
    }
    Ok(path.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_take_the_forms_exporters_use() {
        use ListenAddress::*;
        let p = |t: &str| ListenAddress::parse(t);
        assert_eq!(p(":9400"), Ok(Every(9400)));
        assert_eq!(
            p("0.0.0.0:9445"),
            Ok(Socket("0.0.0.0:9445".parse().unwrap()))
        );
        assert_eq!(p("[::1]:9445"), Ok(Socket("[::1]:9445".parse().unwrap())));
        assert_eq!(p("localhost:9445"), Ok(Host("localhost".into(), 9445)));
        assert_eq!(
            p("gpu-1.example.org:1"),
            Ok(Host("gpu-1.example.org".into(), 1))
        );
        for bad in ["9445", ":", ":99999", "::1:9445", "a b:1", "host:", "-:x"] {
            assert!(p(bad).is_err(), "{bad} accepted");
        }
        let err = web_listen_addresses(&[":1".into()], true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("--listen"), "{err}");
        let err = web_listen_addresses(&["x:y".into()], false)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            format!(
                "--web.listen-address: \"y\" is not a port (0 to 65535): {FORMS} (got \"x:y\")"
            )
        );
    }

    #[test]
    fn the_telemetry_path_is_a_plain_absolute_path_of_its_own() {
        assert_eq!(telemetry_path(None).unwrap(), "/metrics");
        assert_eq!(
            telemetry_path(Some("/gpu/metrics")).unwrap(),
            "/gpu/metrics"
        );
        for bad in ["metrics", "/-/ready", "/", "/a b", "/a//b", "/a?x=1"] {
            assert!(telemetry_path(Some(bad)).is_err(), "{bad} accepted");
        }
    }
}

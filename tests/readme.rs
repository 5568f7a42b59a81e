//! The README stays true to the code: its keys table is the keymap table, and CI runs the
//! test command it names.

#[test]
fn readme_keys_table_is_the_keymap() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let table = gpuwatch::keymap::markdown_table();
    assert!(
        readme.contains(&table),
        "README's keys table is out of date; it should read:\n\n{table}"
    );
}

#[test]
fn ci_runs_the_readme_test_command() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let ci = std::fs::read_to_string(format!("{root}/.ci/run")).unwrap();
    let second = readme.lines().nth(4).unwrap();
    let command = second.split('#').next().unwrap().trim();
    assert_eq!(command, "cargo test --workspace");
    assert!(
        ci.lines().any(|l| l.trim() == command),
        ".ci/run must run `{command}`"
    );
}

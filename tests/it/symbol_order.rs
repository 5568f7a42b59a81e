//! The binary's code layout (issue 25): `build.rs` hands lld `link/hot-symbols.txt` for the
//! `gpuwatch` binary only, only where lld is the linker, and `scripts/hot-symbols.sh` makes
//! that file in the form lld reads. No release build here: the decision is pure, the file is
//! checked as text, and the script's listing step runs on made-up callgrind output.

#[path = "../../link/symbol_order.rs"]
mod decision;

use decision::{Decision, decide, rustc_links_with_lld};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const RUSTC: &str = "rustc 1.95.0 (59807616e 2026-04-14)";
const FILE: &str = "/src/gpuwatch/link/hot-symbols.txt";

/// `cargo build --release` on x86_64 Linux with nothing chosen, plus `extra`.
fn env_with(extra: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let mut vars: BTreeMap<String, String> = [
        ("PROFILE", "release"),
        ("TARGET", "x86_64-unknown-linux-gnu"),
        ("CARGO_ENCODED_RUSTFLAGS", ""),
    ]
    .iter()
    .chain(extra)
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    vars.retain(|_, v| v != "<unset>");
    move |name: &str| vars.get(name).cloned()
}

#[test]
fn a_release_build_for_x86_64_linux_gets_the_ordering_file_and_no_warnings() {
    assert_eq!(
        decide(&env_with(&[]), RUSTC, FILE),
        Decision::Order(vec![
            format!("-Wl,--symbol-ordering-file={FILE}"),
            "-Wl,--no-warn-symbol-ordering".to_string(),
        ])
    );
    // Flags that leave the linker alone do not stop it.
    let flags = "-Ctarget-cpu=native\u{1f}-Cforce-frame-pointers=yes";
    let env = env_with(&[("CARGO_ENCODED_RUSTFLAGS", flags)]);
    assert!(matches!(decide(&env, RUSTC, FILE), Decision::Order(_)));
}

/// A build the decision must leave alone: what it is, the variables it sets on top of
/// `env_with`'s, and what `rustc -V` says.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);

#[test]
fn every_build_whose_linker_may_not_be_lld_links_as_before() {
    let skipped: &[Case] = &[
        (
            "debug profile (tests, benches)",
            &[("PROFILE", "debug")],
            RUSTC,
        ),
        ("no profile given", &[("PROFILE", "<unset>")], RUSTC),
        (
            "aarch64 (GNU ld)",
            &[("TARGET", "aarch64-unknown-linux-gnu")],
            RUSTC,
        ),
        ("musl", &[("TARGET", "x86_64-unknown-linux-musl")], RUSTC),
        (
            "rustc 1.88 (cc picks GNU ld)",
            &[],
            "rustc 1.88.0 (6b00bc388 2025-06-23)",
        ),
        ("rustc -V failed", &[], ""),
        (
            "cargo-zigbuild's linker",
            &[("RUSTC_LINKER", "/tmp/zigcc-x86_64.sh")],
            RUSTC,
        ),
        (
            "linker from the environment",
            &[("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER", "clang")],
            RUSTC,
        ),
        (
            "lld turned off",
            &[(
                "CARGO_ENCODED_RUSTFLAGS",
                "-Copt-level=3\u{1f}-Clinker-features=-lld",
            )],
            RUSTC,
        ),
        (
            "mold",
            &[("CARGO_ENCODED_RUSTFLAGS", "-Clink-arg=-fuse-ld=mold")],
            RUSTC,
        ),
        (
            "a linker flag",
            &[("CARGO_ENCODED_RUSTFLAGS", "-Clinker=gcc")],
            RUSTC,
        ),
        (
            "the user's opt-out",
            &[("GPUWATCH_SYMBOL_ORDER", "off")],
            RUSTC,
        ),
        (
            "the user's opt-out, 0",
            &[("GPUWATCH_SYMBOL_ORDER", "0")],
            RUSTC,
        ),
    ];
    for (case, extra, rustc) in skipped {
        let decision = decide(&env_with(extra), rustc, FILE);
        assert!(
            matches!(decision, Decision::Skip(_)),
            "{case}: {decision:?}"
        );
    }
    // `-Wl,` would split a path with a comma into two arguments.
    let decision = decide(&env_with(&[]), RUSTC, "/src/a,b/link/hot-symbols.txt");
    assert!(matches!(decision, Decision::Skip(_)), "{decision:?}");
}

#[test]
fn rustc_versions_from_1_90_link_with_lld() {
    for (version, lld) in [
        ("rustc 1.95.0 (59807616e 2026-04-14)", true),
        ("rustc 1.90.0 (1159e78c4 2025-09-14)", true),
        ("rustc 1.92.0-nightly (abcdef123 2025-10-01)", true),
        ("rustc 2.0.0", true),
        ("rustc 1.89.0 (29483883e 2025-08-04)", false),
        ("rustc 1.9.0", false),
        ("rustc", false),
        ("", false),
        ("error: no such toolchain", false),
    ] {
        assert_eq!(rustc_links_with_lld(version), lld, "{version:?}");
    }
}

#[test]
fn the_build_script_orders_the_binary_only() {
    let script = std::fs::read_to_string(Path::new(ROOT).join("build.rs")).unwrap();
    assert!(script.contains("cargo:rustc-link-arg-bin=gpuwatch={arg}"));
    for other in [
        "cargo:rustc-link-arg=",
        "rustc-link-arg-tests",
        "rustc-link-arg-benches",
    ] {
        assert!(
            !script.contains(other),
            "build.rs passes link arguments beyond the binary: {other}"
        );
    }
}

#[test]
fn the_ordering_file_is_a_list_of_the_binarys_mangled_functions() {
    let text = std::fs::read_to_string(Path::new(ROOT).join("link/hot-symbols.txt")).unwrap();
    let names: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    // A TUI session runs about a thousand of the binary's functions; a short list is a
    // broken profile.
    assert!(names.len() > 500, "only {} names", names.len());
    let mut seen = BTreeSet::new();
    for name in &names {
        // lld reads a name a line, as it is: no callgrind prefixes, costs, ids or
        // recursion marks, no demangled paths.
        assert!(
            !name.is_empty() && !name.contains(char::is_whitespace),
            "{name:?}"
        );
        assert!(!name.contains(['=', '\'', '(', ':', '<']), "{name:?}");
        // Symbols are ASCII: letters, digits and `_$.` (legacy mangling's escapes, the
        // `.123` LLVM gives a local name twice over).
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_$.".contains(c)),
            "{name:?}"
        );
        assert!(!name.starts_with("0x"), "{name:?}");
        assert!(seen.insert(*name), "{name} twice");
    }
    // Mostly Rust names: legacy-mangled (`_ZN…17h<hash>E`) for the crates built here, v0
    // (`_R…`) for the standard library as shipped; the rest C (compiler builtins, main).
    let rust = names
        .iter()
        .filter(|n| n.starts_with("_ZN") || n.starts_with("_R"))
        .count();
    assert!(
        rust * 10 > names.len() * 9,
        "{rust} of {} are Rust names",
        names.len()
    );
}

/// Made-up callgrind output (`--demangle=no`, name compression on) of `gpuwatch` and libc.
const STEADY: &str = "version: 1
positions: line
events: Ir
ob=(1) /usr/lib/x86_64-linux-gnu/libc.so.6
fl=(1) ???
fn=(1) malloc
0 900
ob=(2) /work/target/release/gpuwatch
fl=(2) ???
fn=(2) _ZN8gpuwatch3app3run17h0123456789abcdefE
0 10
cob=(1)
cfn=(1)
calls=3 0
0 5000
cfn=(3) _ZN8gpuwatch2ui4draw17hfedcba9876543210E'2
calls=1 0
0 1000
fn=(3)
0 400
+1 5
fn=(4) 0x0000000000012345
0 7000
fn=(2)
* 3
";

const START: &str = "version: 1
positions: line
events: Ir
ob=(1) /work/target/release/gpuwatch
fl=(1) ???
fn=(1) _ZN8gpuwatch4main17h1111111111111111E
0 20000
fn=(2) _ZN8gpuwatch2ui4draw17hfedcba9876543210E
0 90000
fn=(3) main
0 1
";

#[test]
fn the_listing_puts_the_steady_state_first_by_cost_then_start_up_only_functions() {
    let dir = tempfile::tempdir().unwrap();
    let steady = dir.path().join("cg");
    let start = dir.path().join("cg.1");
    std::fs::write(&steady, STEADY).unwrap();
    std::fs::write(&start, START).unwrap();
    let out = Command::new("bash")
        .arg(Path::new(ROOT).join("scripts/hot-symbols.sh"))
        .args(["--order", "gpuwatch"])
        .args([&steady, &start])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // draw: 405 of its own (the line after `calls=` is the call's cost, not run's);
    // run: 13; libc's malloc and the unnamed 0x… block are left out; draw's recursion
    // mark is dropped and it is not listed again from start-up, where it cost more.
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "_ZN8gpuwatch2ui4draw17hfedcba9876543210E\n\
         _ZN8gpuwatch3app3run17h0123456789abcdefE\n\
         _ZN8gpuwatch4main17h1111111111111111E\n\
         main\n"
    );
}

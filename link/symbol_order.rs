//! When the `gpuwatch` binary is linked with its functions in `link/hot-symbols.txt`'s order
//! (issue 25: peak RSS). The kernel maps the 64 KiB of cached file around every code page a
//! process touches, and the code a TUI session runs was spread over the whole `.text`, so
//! most of the binary stayed resident; lld's `--symbol-ordering-file` puts the functions a
//! session runs next to each other. A pure decision over the build's environment, so
//! `build.rs` runs it and `tests/it/symbol_order.rs` tests it without linking anything.
//! It must never break a link: every build it cannot vouch for gets no extra argument.

/// What `build.rs` does for the binary.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Pass these to the linker driver for the `gpuwatch` binary only.
    Order(Vec<String>),
    /// Link as before; the reason, for `cargo build -vv`.
    Skip(&'static str),
}

/// The oldest rustc that links x86_64-unknown-linux-gnu with its own rust-lld by default
/// (1.90): before it the system's `cc` picks GNU ld, which rejects the option.
const FIRST_LLD_MINOR: u32 = 90;

/// Decides from the build script's environment (`env`), the output of `$RUSTC -V`
/// (`rustc_version`) and the ordering file's absolute path.
pub fn decide(
    env: &dyn Fn(&str) -> Option<String>,
    rustc_version: &str,
    order_file: &str,
) -> Decision {
    if env("GPUWATCH_SYMBOL_ORDER").is_some_and(|v| v == "0" || v == "off") {
        return Decision::Skip("GPUWATCH_SYMBOL_ORDER=off");
    }
    // Only the release profile: the names in the file are the release build's (legacy
    // mangling hashes the crate's metadata, which the profile is part of), so a debug
    // link would only read the file to match nothing.
    if env("PROFILE").as_deref() != Some("release") {
        return Decision::Skip("not the release profile");
    }
    // The one target whose default linker is rust-lld; aarch64 and the others link with
    // the system's (or a cross) `cc` and GNU ld.
    if env("TARGET").as_deref() != Some("x86_64-unknown-linux-gnu") {
        return Decision::Skip("not x86_64-unknown-linux-gnu");
    }
    if !rustc_links_with_lld(rustc_version) {
        return Decision::Skip("rustc older than 1.90 links with the system linker");
    }
    // A linker chosen by the user (cargo resolves `target.<triple>.linker` and
    // CARGO_TARGET_<TRIPLE>_LINKER into RUSTC_LINKER; cargo-zigbuild sets the latter) may
    // not be lld, and neither may one picked through the flags.
    if env("RUSTC_LINKER").is_some()
        || env("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some()
    {
        return Decision::Skip("a linker was chosen");
    }
    let flags = env("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let linker_flags = [
        "linker=",
        "linker-flavor",
        "linker-features",
        "link-self-contained",
        "fuse-ld",
    ];
    if flags
        .split('\u{1f}')
        .any(|flag| linker_flags.iter().any(|l| flag.contains(l)))
    {
        return Decision::Skip("the flags choose the linker");
    }
    // `-Wl,` splits its argument at commas.
    if order_file.contains(',') {
        return Decision::Skip("the ordering file's path has a comma");
    }
    Decision::Order(vec![
        format!("-Wl,--symbol-ordering-file={order_file}"),
        // Names that went away since the file was made (an edit, a new dependency) are
        // expected; they only cost the part of the layout they held.
        "-Wl,--no-warn-symbol-ordering".to_string(),
    ])
}

/// Whether `rustc -V`'s answer ("rustc 1.95.0 (59807616e 2026-04-14)") is 1.90 or later.
/// An answer it cannot read counts as older: no ordering rather than a failed link.
pub fn rustc_links_with_lld(rustc_version: &str) -> bool {
    let Some(release) = rustc_version.split_whitespace().nth(1) else {
        return false;
    };
    let mut parts = release.split(['.', '-']);
    let major = parts.next().and_then(|p| p.parse::<u32>().ok());
    let minor = parts.next().and_then(|p| p.parse::<u32>().ok());
    match (major, minor) {
        (Some(1), Some(minor)) => minor >= FIRST_LLD_MINOR,
        (Some(major), Some(_)) => major > 1,
        _ => false,
    }
}

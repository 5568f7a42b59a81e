//! Links the `gpuwatch` binary with the functions a TUI session runs placed together
//! (`link/hot-symbols.txt`, made by `scripts/hot-symbols.sh`), where the linker is known to
//! be lld; `link/symbol_order.rs` decides. Only the binary: tests, benches and examples
//! link as before. Nothing else is built or generated here.

#[path = "link/symbol_order.rs"]
mod symbol_order;

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=link/symbol_order.rs");
    println!("cargo:rerun-if-changed=link/hot-symbols.txt");
    for var in [
        "GPUWATCH_SYMBOL_ORDER",
        "RUSTC_LINKER",
        "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let order_file = Path::new(&manifest).join("link/hot-symbols.txt");
    // A copy of the crate without the file (a trimmed package) links as before.
    if !order_file.is_file() {
        return;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let version = Command::new(rustc)
        .arg("-V")
        .output()
        .ok()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default();
    let env = |name: &str| std::env::var(name).ok();
    match symbol_order::decide(&env, &version, &order_file.to_string_lossy()) {
        symbol_order::Decision::Order(args) => {
            for arg in args {
                println!("cargo:rustc-link-arg-bin=gpuwatch={arg}");
            }
        }
        // Said once per build script run, seen with `cargo build -vv`.
        symbol_order::Decision::Skip(why) => eprintln!("gpuwatch: no symbol ordering: {why}"),
    }
}

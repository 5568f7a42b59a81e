#!/usr/bin/env bash
# Release binaries for the GPU servers people have: x86_64 and aarch64 (Grace Hopper) Linux,
# linked against glibc 2.28 (RHEL/Rocky 8; Ubuntu 20.04 has 2.31) with cargo-zigbuild, which
# uses zig's bundled glibc stubs instead of the build host's newer glibc. Stripped (the
# release profile strips), with a SHA256SUMS file, and each binary's highest GLIBC symbol
# version checked (scripts/glibc-max.sh): the script fails if any needs more than 2.28.
#
#   scripts/release.sh            # → dist/gpuwatch-VERSION-TARGET, dist/share/man/man1/*.1.gz, dist/SHA256SUMS
#   OUT=/tmp/rel scripts/release.sh
#
# Needs: rustup, python3 with pip (installs cargo-zigbuild and ziglang from PyPI when absent).
set -euo pipefail
cd "$(dirname "$0")/.."

GLIBC=2.28
OUT=${OUT:-dist}
TARGETS=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu)

if ! command -v cargo-zigbuild >/dev/null 2>&1 || ! python3 -c 'import ziglang' 2>/dev/null; then
    echo "release: installing cargo-zigbuild and ziglang from PyPI"
    python3 -m pip install --quiet cargo-zigbuild ziglang
fi
rustup target add "${TARGETS[@]}" >/dev/null

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
mkdir -p "$OUT"
rm -f "$OUT"/gpuwatch-* "$OUT"/SHA256SUMS
rm -rf "$OUT"/share

for target in "${TARGETS[@]}"; do
    echo "release: building $target against glibc $GLIBC"
    cargo zigbuild --release --locked --bin gpuwatch --target "$target.$GLIBC"
    bin="$OUT/gpuwatch-$version-$target"
    cp "target/$target/release/gpuwatch" "$bin"
    needs=$(scripts/glibc-max.sh "$bin")
    size=$(stat -c %s "$bin")
    echo "release: $bin: $size bytes, needs GLIBC_$needs"
    if [ "$(printf '%s\n%s\n' "$needs" "$GLIBC" | sort -V | tail -1)" != "$GLIBC" ]; then
        echo "release: $bin needs glibc $needs, more than $GLIBC" >&2
        exit 1
    fi
    if file "$bin" | grep -q 'not stripped'; then
        echo "release: $bin is not stripped" >&2
        exit 1
    fi
done

# The man pages come from a binary that runs here: the release build for this machine's
# architecture, else a native build (the pages do not depend on the target).
host_bin="$OUT/gpuwatch-$version-$(uname -m)-unknown-linux-gnu"
if [ ! -x "$host_bin" ]; then
    cargo build --release --locked --bin gpuwatch
    host_bin=target/release/gpuwatch
fi
echo "release: man pages from $host_bin"
scripts/man-pages.sh "$host_bin" "$OUT"

(cd "$OUT" && sha256sum gpuwatch-* share/man/man1/*.1.gz > SHA256SUMS)
echo "release: done"
cat "$OUT/SHA256SUMS"

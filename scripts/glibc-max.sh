#!/usr/bin/env bash
# Prints the highest GLIBC_x.y symbol version an ELF binary needs (e.g. "2.28"): the oldest
# glibc it runs on. Reads the dynamic symbol table with `objdump -T`; falls back to
# `readelf -V` (architecture-independent) where this objdump cannot read the binary's
# architecture (an x86_64 binutils and an aarch64 binary).
set -euo pipefail
bin=${1:?usage: glibc-max.sh BINARY}
symbols=$(objdump -T "$bin" 2>/dev/null) || symbols=$(readelf -V --wide "$bin")
versions=$(grep -o 'GLIBC_[0-9][0-9.]*' <<<"$symbols" | sed 's/GLIBC_//' | sort -uV)
if [ -z "$versions" ]; then
    echo "glibc-max: no GLIBC symbol versions in $bin (static, or not a glibc binary)" >&2
    exit 1
fi
tail -1 <<<"$versions"

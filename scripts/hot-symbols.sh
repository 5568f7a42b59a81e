#!/usr/bin/env bash
# scripts/hot-symbols.sh — regenerates link/hot-symbols.txt, the order in which lld places the
# `gpuwatch` binary's functions (build.rs passes it as --symbol-ordering-file; issue 25). It
# runs an unstripped release build under callgrind in scripts/overhead.sh's tmux pane against
# the fake NVML (start-up, a few keys, DURATION seconds of 1 Hz samples at 200x50, quit),
# and lists every function of the binary that ran, by its mangled name: first those of the
# steady state and quit, the most instructions first, then those that ran only at start-up
# or for the keys. Functions that did not run keep the linker's order after them.
#
# When to run it: after a dependency or toolchain update, a change of the release profile,
# or a large change of the TUI's code, and whenever docs/performance.md's "binary KiB"
# figure from scripts/overhead.sh creeps up. Legacy symbol names carry a hash of the crate's
# metadata, not of the source, so an edit of gpuwatch's code keeps most names (the doc says
# how many); names that went away are skipped by the linker without a word.
#
# usage: scripts/hot-symbols.sh [DURATION_SECONDS]        (default 20; needs valgrind, tmux)
#        scripts/hot-symbols.sh --order NAME FILE...       (the listing step alone: the functions
#            of the object whose file name is NAME in these callgrind outputs, made with
#            --demangle=no, in that order of files; what the tests run)
# env:   GPUWATCH_BIN (an unstripped release binary of this tree: skip the build),
#        FAKE_NVML_LIB, OUT (default link/hot-symbols.txt), KEYS (default "j j k s ? ? G g"),
#        KEEP=DIR (keep callgrind's two outputs there: DIR/cg.1 start-up, DIR/cg the rest)
set -euo pipefail

# order NAME FILE...: the listing. Callgrind compresses names: "fn=(12) name" defines id 12,
# a later "fn=(12)" means it; cfn=, ob= and cob= work alike (fn/cfn and ob/cob share ids).
# A function's self cost is the sum of its cost lines, less the line after each "calls=",
# which is the call's inclusive cost.
order() {
    local name=$1
    shift
    local part
    for part in "$@"; do
        awk -v want="$name" '
            function define(kind, rest,   id, text) {
                if (match(rest, /^\([0-9]+\)/)) {
                    id = substr(rest, 2, RLENGTH - 2)
                    text = substr(rest, RLENGTH + 1)
                    sub(/^ /, "", text)
                    if (text != "") names[kind, id] = text
                    return names[kind, id]
                }
                return rest
            }
            /^ob=/ { ob = define("ob", substr($0, 4)); next }
            /^cob=/ { define("ob", substr($0, 5)); next }
            /^cfn=/ { define("fn", substr($0, 5)); next }
            /^fn=/ { fn = define("fn", substr($0, 4)); mine = (ob ~ ("(^|/)" want "$")); next }
            /^calls=/ { skip = 1; next }
            /^[0-9+*-]/ {
                if (skip) { skip = 0; next }
                # "0x…": code without a symbol; "(below main)": a frame of callgrind, not code.
                if (mine && fn !~ /^0x/ && fn !~ / /) cost[fn] += $2
                next
            }
            END { for (f in cost) printf "%d %s\n", cost[f], f }
        ' "$part" | sort -k1,1nr -k2,2 | cut -d' ' -f2-
    done |
        # callgrind names a recursive cycle of one function "name'2"; the symbol is "name".
        sed "s/'[0-9]*\$//" | awk '!seen[$0]++'
}

if [ "${1:-}" = "--order" ]; then
    shift
    [ $# -ge 2 ] || { echo "usage: scripts/hot-symbols.sh --order NAME FILE..." >&2; exit 2; }
    order "$@"
    exit 0
fi

# The rest works from the repository root (the listing step keeps the caller's directory,
# where its files are named).
cd "$(dirname "$0")/.."
DURATION=${1:-20}
OUT=${OUT:-link/hot-symbols.txt}
command -v valgrind >/dev/null || { echo "hot-symbols.sh: needs valgrind" >&2; exit 2; }
BIN=${GPUWATCH_BIN:-}
if [ -z "$BIN" ]; then
    # The shipped profile (fat LTO) with the symbols kept: -C strip=none on the final
    # rustc command only, which leaves every crate's metadata, so every name, as in
    # `cargo build --release`.
    echo "hot-symbols.sh: building the release binary with symbols ..." >&2
    cargo rustc --quiet --release -p gpuwatch --bin gpuwatch -- -C strip=none
    BIN=target/release/gpuwatch
fi
nm "$BIN" >/dev/null 2>&1 && [ -n "$(nm "$BIN" 2>/dev/null | head -1)" ] ||
    { echo "hot-symbols.sh: $BIN has no symbols" >&2; exit 2; }

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
GPUWATCH_BIN="$BIN" NO_NVTOP=1 ROUNDS=1 CALLGRIND="$WORK/cg" CALLGRIND_START=1 \
    CALLGRIND_ARGS=--demangle=no KEYS="${KEYS:-j j k s ? ? G g}" \
    scripts/overhead.sh "$DURATION" >&2
[ -f "$WORK/cg.1" ] && [ -f "$WORK/cg" ] ||
    { echo "hot-symbols.sh: callgrind wrote no start-up and steady parts: $(ls "$WORK")" >&2; exit 1; }
if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$WORK/cg" "$WORK/cg.1" "$KEEP/"; fi

{
    echo "# The gpuwatch binary's functions in the order lld places them (build.rs, issue 25):"
    echo "# made by scripts/hot-symbols.sh from $(git rev-parse --short HEAD), $(rustc -V | cut -d' ' -f2)."
    order "$(basename "$BIN")" "$WORK/cg" "$WORK/cg.1"
} >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"

# Every listed name must be a function of the binary, as lld will see it.
nm --defined-only "$BIN" | awk '$2 ~ /^[tTwW]$/ { print $3 }' | sort -u >"$WORK/defined"
grep -v '^#' "$OUT" | sort -u >"$WORK/listed"
listed=$(wc -l <"$WORK/listed")
missing=$(comm -23 "$WORK/listed" "$WORK/defined" | wc -l)
bytes=$(nm -S -t d --defined-only "$BIN" | awk 'NR == FNR { want[$1]; next } ($4 in want) { s += $2 } END { print s + 0 }' "$WORK/listed" -)
text=$(size -A "$BIN" | awk '$1 == ".text" { print $2 }')
echo "hot-symbols.sh: $OUT: $listed functions, $bytes bytes of code of .text's $text; $missing not among the binary's symbols"

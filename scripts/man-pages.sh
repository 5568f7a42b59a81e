#!/usr/bin/env bash
# The manual pages, written by the binary itself from its clap definitions (`gpuwatch man
# --dir`, so they cannot drift from --help) and gzipped where man(1) looks for them:
# PREFIX/share/man/man1/gpuwatch.1.gz plus one page per subcommand (gpuwatch-serve.1.gz, …).
# Used by scripts/release.sh and deploy/Dockerfile; tests/it/cli.rs runs it on the test build.
#
#   scripts/man-pages.sh BIN PREFIX     # e.g. scripts/man-pages.sh target/release/gpuwatch dist
set -euo pipefail
if [ $# -ne 2 ]; then
    echo "usage: $0 BIN PREFIX" >&2
    exit 2
fi
bin=$1
dir="$2/share/man/man1"
mkdir -p "$dir"
rm -f "$dir"/gpuwatch*.1 "$dir"/gpuwatch*.1.gz
"$bin" man --dir "$dir"
# -n: no name or time stamp inside, so the same binary gives the same bytes.
gzip -9n "$dir"/gpuwatch*.1

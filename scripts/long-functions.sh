#!/usr/bin/env bash
# scripts/long-functions.sh — lists Rust functions longer than LIMIT lines (default 60, the
# design guide's budget), as FILE:LINE NAME LENGTH. A report for the lead, not a CI gate.
# Relies on rustfmt layout: a function ends at the first later line that is its own
# indentation followed by `}`. Nested fns inside a long fn are not listed separately.
#
# usage: scripts/long-functions.sh [LIMIT] [PATH...]   (default: 60 src fake-nvml/src benches)
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT=${1:-60}
shift || true
[ $# -gt 0 ] || set -- src fake-nvml/src benches
find "$@" -name '*.rs' | sort | xargs awk -v LIMIT="$LIMIT" '
FNR == 1 { open = 0 }
{
  if (!open && match($0, /^( *)(pub(\([a-z:]+\))? )?(const )?(async )?(unsafe )?(extern "C" )?fn [A-Za-z_0-9]+/)) {
    if ($0 ~ /;[ ]*$/) next
    ind = $0; sub(/[^ ].*/, "", ind)
    name = $0; sub(/^.*fn /, "", name); sub(/[^A-Za-z_0-9].*/, "", name)
    start = FNR; open = 1; closing = ind "}"
    if ($0 ~ /\{.*\}[ ]*$/) open = 0
    next
  }
  if (open && index($0, closing) == 1 && substr($0, length(closing) + 1) ~ /^[ ,;)]*$/) {
    if (FNR - start + 1 > LIMIT) printf "%s:%d %s %d\n", FILENAME, start, name, FNR - start + 1
    open = 0
  }
}'

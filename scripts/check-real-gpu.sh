#!/usr/bin/env bash
# Compares what gpuwatch reads through NVML (its JSON, and `gpuwatch query`'s nvidia-smi-shaped
# CSV) with what nvidia-smi says on the same machine, and prints every field that differs (exit 1), or "no differences" (exit 0). Run it on any
# machine with an NVIDIA GPU: the fake NVML in CI can only check gpuwatch against itself.
#
#   scripts/check-real-gpu.sh                  # builds the release binary first
#   GPUWATCH=path/to/gpuwatch scripts/check-real-gpu.sh [extra gpuwatch flags]
#
# Readings that move between the two calls (utilisation, power, temperature, clocks, VRAM
# in use) are compared with a tolerance; identities, totals and limits exactly. nvidia-smi's
# "[N/A]" / "[Not Supported]" must be gpuwatch's null, and the reverse.
# Needs python3 (for the comparison; the CSV and JSON are parsed there).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${GPUWATCH:-}" ]; then
    cargo build --release --quiet
    GPUWATCH=target/release/gpuwatch
fi
SMI=${NVIDIA_SMI:-nvidia-smi}

# gpuwatch JSON field = nvidia-smi --query-gpu field, in this order.
FIELDS="index uuid name pci.bus_id utilization.gpu utilization.memory memory.total memory.used \
temperature.gpu power.draw enforced.power.limit fan.speed clocks.sm clocks.mem clocks.max.sm \
clocks.max.mem pstate pcie.link.gen.current pcie.link.width.current"
query=$(echo "$FIELDS" | tr -s ' ' ',')

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$GPUWATCH" --source nvml --once --json "$@" >"$tmp/gpuwatch.json"
"$GPUWATCH" query --source nvml --query-gpu="$query" --format=csv,noheader,nounits "$@" >"$tmp/query.csv"
"$SMI" --query-gpu="$query" --format=csv,noheader,nounits >"$tmp/gpus.csv"
"$SMI" --query-compute-apps=pid,used_memory,gpu_uuid --format=csv,noheader,nounits >"$tmp/apps.csv"

# Headers and units, field by field (one call each, so a field this driver's nvidia-smi does not
# know is said and the rest still checked): every nvidia-smi field and alias gpuwatch answers.
SHAPE_FIELDS="timestamp driver_version count name gpu_name index uuid gpu_uuid pci.bus_id gpu_bus_id \
pstate temperature.gpu temperature.memory utilization.gpu utilization.memory utilization.encoder \
utilization.decoder memory.total memory.reserved memory.used memory.free power.draw power.limit \
enforced.power.limit clocks.gr clocks.current.graphics clocks.sm clocks.current.sm clocks.mem \
clocks.current.memory clocks.max.gr clocks.max.graphics clocks.max.sm clocks.max.mem \
clocks.max.memory clocks.video clocks.current.video fan.speed pcie.link.gen.current pcie.link.gen.gpucurrent pcie.link.gen.max pcie.link.width.current \
pcie.link.width.max ecc.errors.corrected.volatile.total ecc.errors.uncorrected.volatile.total \
compute_mode persistence_mode mig.mode.current"
for f in $SHAPE_FIELDS; do
    for who in smi ours; do
        if [ "$who" = smi ]; then cmd=("$SMI"); else cmd=("$GPUWATCH" query --source nvml "$@"); fi
        if ! "${cmd[@]}" --query-gpu="$f" --format=csv -i 0 >"$tmp/shape.$who.$f" 2>&1; then
            echo "ERROR $(head -1 "$tmp/shape.$who.$f")" >"$tmp/shape.$who.$f"
        fi
    done
done

SHAPE_FIELDS="$SHAPE_FIELDS" python3 - "$tmp" "$FIELDS" <<'PY'
import csv, json, sys

tmp, fields = sys.argv[1], sys.argv[2].split()
doc = json.load(open(f"{tmp}/gpuwatch.json"))
MIB = 1 << 20
# nvidia-smi field -> (gpuwatch field, conversion of gpuwatch's value, tolerance).
# A tolerance is absolute in nvidia-smi's unit; None compares exactly.
MAP = {
    "index": ("index", None, None),
    "uuid": ("uuid", None, None),
    "name": ("name", None, None),
    "pci.bus_id": ("pci_bus_id", None, None),
    "utilization.gpu": ("utilization_gpu", None, 15),
    "utilization.memory": ("utilization_memory", None, 15),
    "memory.total": ("memory_total", lambda b: b / MIB, 1),
    "memory.used": ("memory_used", lambda b: b / MIB, 256),
    "temperature.gpu": ("temperature_gpu", None, 3),
    "power.draw": ("power_draw", None, 30),
    "enforced.power.limit": ("enforced_power_limit", None, 1),
    "fan.speed": ("fan_speed", None, 5),
    "clocks.sm": ("clocks_sm", None, 200),
    "clocks.mem": ("clocks_mem", None, 200),
    "clocks.max.sm": ("clocks_max_sm", None, None),
    "clocks.max.mem": ("clocks_max_mem", None, None),
    "pstate": ("pstate", lambda p: f"P{p}", None),
    "pcie.link.gen.current": ("pcie_link_gen_current", None, None),
    "pcie.link.width.current": ("pcie_link_width_current", None, None),
}
ABSENT = {"[N/A]", "[Not Supported]", "N/A", "[Unknown Error]", ""}
diffs = []

def same(smi, ours, conv, tol):
    if smi in ABSENT or ours is None:
        return (smi in ABSENT) == (ours is None)
    if conv is not None:
        ours = conv(ours)
    if tol is None:
        if isinstance(ours, (int, float)):
            try:
                return abs(float(smi) - float(ours)) < 1e-6
            except ValueError:
                return False
        # nvidia-smi writes PCI bus ids in upper case with 8 domain digits, as NVML does.
        return smi.strip().lower() == str(ours).strip().lower()
    try:
        return abs(float(smi) - float(ours)) <= tol
    except ValueError:
        return False

gpus = {g["index"]: g for g in doc["gpus"] if g.get("host") is None}
rows = [[c.strip() for c in r] for r in csv.reader(open(f"{tmp}/gpus.csv")) if r]
seen = set()
for row in rows:
    smi = dict(zip(fields, row))
    index = int(smi["index"])
    seen.add(index)
    g = gpus.get(index)
    if g is None:
        diffs.append(f"GPU {index}: nvidia-smi lists it, gpuwatch does not")
        continue
    for f in fields:
        key, conv, tol = MAP[f]
        if not same(smi[f], g.get(key), conv, tol):
            diffs.append(f"GPU {index} {f}: nvidia-smi {smi[f]!r}, gpuwatch {key}={g.get(key)!r}")
for index in sorted(set(gpus) - seen):
    diffs.append(f"GPU {index}: gpuwatch lists it, nvidia-smi does not")

# Compute processes: the same (pid, GPU) pairs, with the same memory (MiB).
ours = {}
for p in doc["processes"]:
    if p["type"] in ("C", "C+G"):
        ours[(p["pid"], p["gpu_uuid"])] = p["used_gpu_memory"]
theirs = {}
for r in csv.reader(open(f"{tmp}/apps.csv")):
    if len(r) >= 3 and r[0].strip().isdigit():
        theirs[(int(r[0]), r[2].strip())] = r[1].strip()
for key in sorted(set(ours) | set(theirs)):
    pid, uuid = key
    if key not in ours:
        diffs.append(f"process {pid} on {uuid}: nvidia-smi lists it, gpuwatch does not")
    elif key not in theirs:
        diffs.append(f"process {pid} on {uuid}: gpuwatch lists it, nvidia-smi does not")
    elif not same(theirs[key], ours[key], lambda b: b / MIB, 64):
        diffs.append(f"process {pid} on {uuid} used_memory: nvidia-smi {theirs[key]!r} MiB, gpuwatch {ours[key]!r} bytes")

# `gpuwatch query` against nvidia-smi cell by cell: the same question in the same shape and
# units on both sides (docs/query.md), with the same tolerances for readings that move.
queried = {}
for r in csv.reader(open(f"{tmp}/query.csv")):
    cells = [c.strip() for c in r]
    if cells and cells[0].isdigit():
        queried[int(cells[0])] = dict(zip(fields, cells))
for row in rows:
    smi = dict(zip(fields, row))
    index = int(smi["index"])
    q = queried.get(index)
    if q is None:
        diffs.append(f"query GPU {index}: nvidia-smi lists it, gpuwatch query does not")
        continue
    for f in fields:
        theirs_v, ours_v, tol = smi[f], q.get(f, ""), MAP[f][2]
        if theirs_v in ABSENT or ours_v in ABSENT:
            ok = (theirs_v in ABSENT) == (ours_v in ABSENT)
        elif tol is None:
            ok = theirs_v.lower() == ours_v.lower()
        else:
            try:
                ok = abs(float(theirs_v) - float(ours_v)) <= tol
            except ValueError:
                ok = False
        if not ok:
            diffs.append(f"query GPU {index} {f}: nvidia-smi {theirs_v!r}, gpuwatch query {ours_v!r}")

# The same field asked of both: the same header line (nvidia-smi's own name for an alias, its
# unit in brackets) and the same unit after the value; refused by both is fine.
import os, re
for f in os.environ["SHAPE_FIELDS"].split():
    theirs_t = open(f"{tmp}/shape.smi.{f}").read().splitlines()
    ours_t = open(f"{tmp}/shape.ours.{f}").read().splitlines()
    if theirs_t[:1] and theirs_t[0].startswith("ERROR"):
        if not (ours_t[:1] and ours_t[0].startswith("ERROR")):
            print(f"note: this nvidia-smi does not know {f!r} ({theirs_t[0][6:]}); gpuwatch answers it")
        continue
    if theirs_t[:1] != ours_t[:1]:
        diffs.append(f"header of {f}: nvidia-smi {theirs_t[:1]!r}, gpuwatch query {ours_t[:1]!r}")
    unit = lambda line: re.sub(r"^[-0-9.]+ ?", "", line) if re.match(r"^[-0-9.]+( |$)", line) else None
    t_unit, o_unit = (unit(t[1]) if len(t) > 1 else None for t in (theirs_t, ours_t))
    if None not in (t_unit, o_unit) and t_unit != o_unit:
        diffs.append(f"unit of {f}: nvidia-smi {theirs_t[1]!r}, gpuwatch query {ours_t[1]!r}")

for d in diffs:
    print(d)
if diffs:
    print(f"{len(diffs)} difference(s)", file=sys.stderr)
    sys.exit(1)
print(f"no differences ({len(rows)} GPUs, {len(theirs)} compute processes)")
PY

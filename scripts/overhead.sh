#!/usr/bin/env bash
# scripts/overhead.sh — measures what gpuwatch costs the machine it watches (issue 6): the
# release binary runs for DURATION seconds at 1 Hz in a real tmux pane against the fake
# NVML library (8 GPUs, 20 real `sleep` PIDs) and the script prints CPU seconds, peak RSS,
# bytes written to the terminal per second and the time to the first frame. A report, not a
# test: it asserts nothing and CI does not run it. Owns nothing but its own temp folder.
#
# usage: scripts/overhead.sh [DURATION_SECONDS]   (default 60; needs tmux)
# env:   CARGO_TARGET_DIR (where to build), WIDTH/HEIGHT (pane size, default 120x40),
#        GPUWATCH_ARGS (extra flags, e.g. "--compact"), GPUWATCH_BIN / FAKE_NVML_LIB (measure
#        these files instead of building them), KEEP_OUTPUT=FILE (keep what was
#        written to the terminal), PERF=FILE (perf record -g the run into FILE, at
#        PERF_FREQ samples/s, default 499),
#        SMAPS=FILE (copy /proc/PID/smaps at the end: which mappings the RSS is),
#        STRACE=FILE (strace -c -f the run: syscall counts), KEYS="0 d" (tmux send-keys
#        these, one by one, once the first data frame is up: measure a view, e.g. the GPU
#        detail view with "0 d" or the process detail view with "g Enter")
# Targets: <= 0.04 CPU-s per 60 s, peak RSS <= 5 MiB (8 MiB max), first frame <= 100 ms;
# to the terminal <= 3 KB/s in a 200x50 pane (WIDTH=200 HEIGHT=50: issue 11's budget, with
# the charts scrolling one column a second; a C/ncurses monitor writes 3.3 KB/s there).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${1:-60}
WIDTH=${WIDTH:-120}
HEIGHT=${HEIGHT:-40}
TARGET=${CARGO_TARGET_DIR:-target}
GPUS=8
PROCS=20

command -v tmux >/dev/null || { echo "overhead.sh: needs tmux" >&2; exit 2; }
BIN=${GPUWATCH_BIN:-$TARGET/release/gpuwatch}
LIB=${FAKE_NVML_LIB:-$TARGET/release/libfake_nvml.so}
# A given binary is measured as it is (comparing builds without rebuilding them).
if [ -z "${GPUWATCH_BIN:-}" ]; then
    echo "building release gpuwatch into $TARGET ..." >&2
    cargo build --quiet --release --bin gpuwatch -p gpuwatch
fi
if [ -z "${FAKE_NVML_LIB:-}" ]; then
    cargo build --quiet --release -p fake-nvml
fi
[ -x "$BIN" ] && [ -f "$LIB" ] || { echo "overhead.sh: missing $BIN or $LIB" >&2; exit 2; }

WORK=$(mktemp -d)
SOCKET="gpuwatch-overhead-$$"
SLEEPERS=()
cleanup() {
    tmux -L "$SOCKET" kill-server 2>/dev/null || true
    for p in "${SLEEPERS[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

# Real PIDs for the process table, so /proc lookups (user, command, CPU%) do real work.
for _ in $(seq "$PROCS"); do
    sleep $((DURATION + 120)) &
    SLEEPERS+=("$!")
done

# A list of TICKS values around BASE (+- SPREAD): readings change every second, the layout
# does not, which is the case the "<= 1 KB/s" target is about.
TICKS=$((DURATION + 30))
series() {
    local base=$1 spread=$2 out="" i
    for ((i = 0; i < TICKS; i++)); do
        out+="$((base + RANDOM % (2 * spread + 1) - spread)),"
    done
    echo "[${out%,}]"
}

RANDOM=42
{
    echo '{"driver_version": "550.54.15", "nvml_version": "12.550.54.15", "cuda_version": 12040, "gpus": ['
    for ((g = 0; g < GPUS; g++)); do
        [ "$g" -gt 0 ] && echo ','
        procs=""
        for ((p = g; p < PROCS; p += GPUS)); do
            procs+="{\"pid\": ${SLEEPERS[$p]}, \"kind\": \"compute\", \"used_memory\": $(((p + 1) * 1073741824)), \"sm_util\": $(series 50 40)},"
        done
        cat <<EOF
{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-00000000-0000-4000-8000-00000000000$g",
 "pci_bus_id": "00000000:1$g:00.0",
 "fields": {
  "util_gpu": $(series 60 35), "util_memory": $(series 30 20),
  "memory_total": 85899345920, "memory_reserved": 536870912,
  "memory_used": $(series 40000000 2000000 | sed 's/\([0-9]\+\)/\1000/g'),
  "temperature": $(series 65 5), "temperature_slowdown": 87, "temperature_shutdown": 92,
  "power_usage_mw": $(series 400000 150000), "power_limit_mw": 700000,
  "energy_mj": 123456789, "fan_speed": $(series 50 10),
  "clock_sm": $(series 1700 100), "clock_memory": 2619, "max_clock_sm": 1980,
  "max_clock_memory": 2619, "pstate": 0, "encoder_util": 0, "decoder_util": 0,
  "pcie_link_gen": 5, "pcie_link_width": 16,
  "pcie_tx_kbps": $(series 5000 4000), "pcie_rx_kbps": $(series 5000 4000),
  "throttle_reasons": 0, "ecc_uncorrected_volatile": 0,
  "mig_mode_current": 0, "mig_mode_pending": 0
 },
 "processes": [${procs%,}]}
EOF
    done
    echo ']}'
} >"$WORK/scenario.json"

OUT=$WORK/terminal.out
: >"$OUT"
# The pane's shell waits for Enter, so pipe-pane is attached before gpuwatch writes a byte;
# then it stamps the start time and execs gpuwatch (the pane's PID becomes gpuwatch's).
tmux -L "$SOCKET" -f /dev/null new-session -d -x "$WIDTH" -y "$HEIGHT" \
    env -i PATH="$PATH" HOME=/nonexistent TERM=xterm-256color \
    GPUWATCH_FAKE_NVML_SCENARIO="$WORK/scenario.json" \
    bash --norc --noprofile -c "read -r _; date +%s%N >'$WORK/start'; exec '$BIN' --nvml-lib '$LIB' ${GPUWATCH_ARGS:-}"
tmux -L "$SOCKET" pipe-pane -t 0 -o "cat >>'$OUT'"
sleep 0.3
tmux -L "$SOCKET" send-keys -t 0 Enter

# First frame: the table title is drawn before any sample; first data: a GPU name.
first_frame="" first_data=""
for _ in $(seq 2000); do
    now=$(date +%s%N)
    if [ -z "$first_frame" ] && grep -q "Processes" "$OUT" 2>/dev/null; then first_frame=$now; fi
    if [ -z "$first_data" ] && grep -q "H100" "$OUT" 2>/dev/null; then first_data=$now; fi
    [ -n "$first_frame" ] && [ -n "$first_data" ] && break
    sleep 0.002
done
start=$(cat "$WORK/start")
for key in ${KEYS:-}; do
    tmux -L "$SOCKET" send-keys -t 0 "$key"
    sleep 0.2
done
PID=$(tmux -L "$SOCKET" display-message -p -t 0 '#{pane_pid}')

if [ -n "${PERF:-}" ]; then
    perf record -F "${PERF_FREQ:-499}" --call-graph dwarf,16384 -o "$PERF" -p "$PID" -- sleep $((DURATION - 3)) >/dev/null 2>&1 &
    PERF_PID=$!
fi

if [ -n "${STRACE:-}" ]; then
    strace -c -f -o "$STRACE" -p "$PID" &
    STRACE_PID=$!
fi

# Bytes after the first two seconds are steady state: numbers changing, nothing else.
sleep 2
bytes_warm=$(stat -c %s "$OUT")
t_warm=$(date +%s%N)
sleep $((DURATION - 2))
bytes_end=$(stat -c %s "$OUT")
t_end=$(date +%s%N)

# utime+stime (+ waited-for children, fields 14-17) in clock ticks, read while it runs.
read -r -a stat < <(sed 's/^.*) //' "/proc/$PID/stat")
ticks=$((stat[11] + stat[12] + stat[13] + stat[14]))
hz=$(getconf CLK_TCK)
# The same from the scheduler, in ns: at ~1 ms of work a second the tick-based numbers
# above move in 0.01 s steps and jump between runs; this is what compares two builds.
# Live threads only (a thread that already exited is not counted).
sched_ns=0
for f in /proc/"$PID"/task/*/schedstat; do
    read -r ns _ <"$f"
    sched_ns=$((sched_ns + ns))
done
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$PID/status")
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$PID/status")
threads=$(awk '/^Threads/ {print $2}' "/proc/$PID/status")
if [ -n "${SMAPS:-}" ]; then cp "/proc/$PID/smaps" "$SMAPS"; fi
tmux -L "$SOCKET" send-keys -t 0 q
sleep 0.5
if [ -n "${STRACE_PID:-}" ]; then wait "$STRACE_PID" || true; fi
if [ -n "${KEEP_OUTPUT:-}" ]; then cp "$OUT" "$KEEP_OUTPUT"; fi
if [ -n "${PERF_PID:-}" ]; then wait "$PERF_PID" || true; fi

ms() { echo "scale=1; ($1 - $2) / 1000000" | bc; }
echo "gpuwatch overhead: ${DURATION}s at 1 Hz, ${GPUS} fake GPUs, ${PROCS} processes, ${WIDTH}x${HEIGHT} tmux pane ${GPUWATCH_ARGS:-}"
echo "  machine:           $(nproc) CPUs, $(lscpu | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print $2}')"
echo "  CPU time:          $(echo "scale=3; $ticks / $hz" | bc) s (utime+stime, incl. children; ${hz} ticks/s)"
echo "  CPU (schedstat):   $(echo "scale=4; $sched_ns / 1000000000" | bc) s on CPU (live threads, ns resolution)"
echo "  peak RSS (VmHWM):  $(echo "scale=2; $hwm / 1024" | bc) MiB (VmRSS now $(echo "scale=2; $rss / 1024" | bc) MiB, $threads threads)"
echo "  terminal output:   $(echo "scale=1; ($bytes_end - $bytes_warm) * 1000000000 / ($t_end - $t_warm)" | bc) B/s steady, $bytes_end B in all"
echo "  first frame:       $(ms "$first_frame" "$start") ms after exec"
echo "  first data frame:  $(ms "$first_data" "$start") ms after exec"

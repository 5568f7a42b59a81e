#!/usr/bin/env bash
# scripts/overhead.sh — what gpuwatch costs the machine it watches, measured beside nvtop in
# the same run (issue 25). Each program runs for DURATION seconds at 1 Hz in a real tmux pane
# against the project's fake NVML (GPUS fake GPUs, PROCS real `sleep` PIDs, readings that
# change every second by the wall clock); the two alternate for ROUNDS rounds, so both see
# the same machine load. It prints each run's CPU seconds, peak RSS, private (anonymous)
# memory, bytes written to the terminal, time to the first data frame and the program file's
# own resident pages (smaps Rss of its mappings), then gpuwatch's figures as ratios to
# nvtop's: the median of the rounds' ratios and their spread.
# A report, not a test: it asserts nothing and CI does not run it.
#
# usage: scripts/overhead.sh [DURATION_SECONDS]   (default 30; needs tmux; nvtop is
#        installed from Debian (contrib) when missing and apt-get can, else skipped)
# env:   ROUNDS (default 3), WIDTH/HEIGHT (pane size, default 200x50), GPUS (8), PROCS (20),
#        NO_NVTOP=1 (gpuwatch alone), WITH_NVITOP=1 (nvitop 1.x from PyPI as a third row,
#        `nvitop -m full --interval 1`; not in the ratios), CARGO_TARGET_DIR (where to build),
#        GPUWATCH_ARGS (extra flags, e.g. "--compact"), GPUWATCH_BIN / FAKE_NVML_LIB (measure
#        these files instead of building them), KEEP_OUTPUT=FILE (keep what gpuwatch wrote
#        to the terminal in its last round), PERF=FILE (perf record -g gpuwatch's last
#        round into FILE, at PERF_FREQ samples/s, default 499), SMAPS=FILE (copy gpuwatch's
#        /proc/PID/smaps at the end: which mappings the RSS is), STRACE=FILE (strace -c -f
#        gpuwatch's last round), KEYS="0 d" (tmux send-keys these to gpuwatch once its first
#        data frame is up: measure a view, e.g. the GPU detail view with "0 d"),
#        CALLGRIND=FILE (gpuwatch's last round under valgrind's callgrind, counting from two
#        seconds after its first data frame to the end: instructions executed, which the
#        machine's load does not move, per function; that round's CPU row is valgrind's),
#        CALLGRIND_START=1 (with CALLGRIND: count from the first instruction instead, and dump
#        the counts so far to FILE.1 at the two-second mark, so start-up and the keys are
#        told apart from the steady state and quit, which go to FILE: what
#        scripts/hot-symbols.sh reads),
#        CALLGRIND_ARGS (more valgrind options, e.g. --demangle=no),
#        THREADS=FILE (each program's threads at the end of its last round into FILE.NAME:
#        CPU, timeslices and context switches per thread: who wakes how often)
# Targets (issue 25, as ratios to nvtop at 8 GPUs / 20 processes / 200x50): CPU <= 0.5x,
# private memory <= 0.8x, peak RSS <= 1x, bytes to the terminal <= 1x; first frame <= 50 ms;
# at 64 GPUs and 1,000 processes CPU <= 1x.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${1:-30}
ROUNDS=${ROUNDS:-3}
WIDTH=${WIDTH:-200}
HEIGHT=${HEIGHT:-50}
TARGET=${CARGO_TARGET_DIR:-target}
GPUS=${GPUS:-8}
PROCS=${PROCS:-20}

command -v tmux >/dev/null || { echo "overhead.sh: needs tmux" >&2; exit 2; }
[ "$DURATION" -ge 5 ] || { echo "overhead.sh: DURATION must be at least 5 s" >&2; exit 2; }
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

# The anchor: Debian's nvtop (in contrib), which loads libnvidia-ml.so.1 by name.
NVTOP=""
if [ -z "${NO_NVTOP:-}" ]; then
    if ! command -v nvtop >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing Debian's nvtop (contrib) ..." >&2
        if ! apt-cache policy nvtop 2>/dev/null | grep -q Candidate:.*[0-9]; then
            cat >/etc/apt/sources.list.d/gpuwatch-contrib.sources <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: $(. /etc/os-release && echo "$VERSION_CODENAME")
Components: contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
            apt-get update -qq >/dev/null 2>&1 || true
        fi
        apt-get install -y -qq --no-install-recommends nvtop >/dev/null 2>&1 || true
    fi
    NVTOP=$(command -v nvtop || true)
    [ -n "$NVTOP" ] || echo "overhead.sh: nvtop not found and not installable: gpuwatch alone" >&2
fi

NVITOP_PY=""
if [ -n "${WITH_NVITOP:-}" ]; then
    NVITOP_PY=$(python3 -c 'import nvitop, sys; print(sys.executable)' 2>/dev/null || true)
    [ -n "$NVITOP_PY" ] || echo "overhead.sh: WITH_NVITOP: python3 cannot import nvitop (pip install nvitop)" >&2
fi

WORK=$(mktemp -d)
SOCKET="gpuwatch-overhead-$$"
SLEEPERS=()
cleanup() {
    tmux -L "$SOCKET" kill-server 2>/dev/null || true
    for p in "${SLEEPERS[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

# nvtop asks the loader for libnvidia-ml.so.1: a folder where that name is the fake.
mkdir "$WORK/lib"
ln -s "$(realpath "$LIB")" "$WORK/lib/libnvidia-ml.so.1"
ln -s "$(realpath "$LIB")" "$WORK/lib/libnvidia-ml.so"

# Real PIDs for the process tables, so /proc lookups (user, command, CPU%) do real work.
TOTAL=$(((DURATION + 10) * ROUNDS * 2 + 120))
for _ in $(seq "$PROCS"); do
    sleep "$TOTAL" &
    SLEEPERS+=("$!")
done

# A list of TICKS values around BASE (+- SPREAD): readings change every second, the layout
# does not. The fake ticks by the wall clock (tick_ms), so every run sees the same changes.
TICKS=$((TOTAL + 30))
series() {
    local base=$1 spread=$2 out="" i
    for ((i = 0; i < TICKS; i++)); do
        out+="$((base + RANDOM % (2 * spread + 1) - spread)),"
    done
    echo "[${out%,}]"
}

RANDOM=42
{
    echo '{"driver_version": "550.54.15", "nvml_version": "12.550.54.15", "cuda_version": 12040, "tick_ms": 1000, "gpus": ['
    for ((g = 0; g < GPUS; g++)); do
        [ "$g" -gt 0 ] && echo ','
        procs=""
        for ((p = g; p < PROCS; p += GPUS)); do
            procs+="{\"pid\": ${SLEEPERS[$p]}, \"kind\": \"compute\", \"used_memory\": $(((p % 64 + 1) * 1073741824)), \"sm_util\": $(series 50 40)},"
        done
        cat <<EOF
{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-00000000-0000-4000-8000-$(printf %012d "$g")",
 "pci_bus_id": "00000000:$(printf %02x "$g"):00.0",
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

kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }

# measure NAME MARKER LAST_ROUND COMMAND: one run in a fresh pane; appends one row
# "NAME cpu_s hwm_kib anon_kib bytes_per_s first_data_ms" to $WORK/rows.
measure() {
    local name=$1 marker=$2 last=$3 cmd=$4
    local out="$WORK/$name.out"
    : >"$out"
    # The pane's shell waits for Enter, so pipe-pane is attached before the program writes a
    # byte; then it stamps the start time and execs it (the pane's PID becomes the program's).
    tmux -L "$SOCKET" -f /dev/null new-session -d -x "$WIDTH" -y "$HEIGHT" \
        env -i PATH="$PATH" HOME="$WORK" TERM=xterm-256color LD_LIBRARY_PATH="$WORK/lib" \
        GPUWATCH_FAKE_NVML_SCENARIO="$WORK/scenario.json" \
        bash --norc --noprofile -c "read -r _; date +%s%N >'$WORK/start'; exec $cmd"
    tmux -L "$SOCKET" pipe-pane -t 0 -o "cat >>'$out'"
    sleep 0.3
    tmux -L "$SOCKET" send-keys -t 0 Enter
    local first="" now
    for _ in $(seq 5000); do
        now=$(date +%s%N)
        if grep -qE "$marker" "$out" 2>/dev/null; then first=$now; break; fi
        sleep 0.002
    done
    local start pid
    start=$(cat "$WORK/start")
    pid=$(tmux -L "$SOCKET" display-message -p -t 0 '#{pane_pid}')
    local perf_pid="" strace_pid=""
    if [ "$name" = gpuwatch ]; then
        for key in ${KEYS:-}; do
            tmux -L "$SOCKET" send-keys -t 0 "$key"
            sleep 0.2
        done
        if [ "$last" = 1 ] && [ -n "${PERF:-}" ]; then
            perf record -F "${PERF_FREQ:-499}" --call-graph dwarf,16384 -o "$PERF" -p "$pid" -- sleep $((DURATION - 3)) >/dev/null 2>&1 &
            perf_pid=$!
        fi
        if [ "$last" = 1 ] && [ -n "${STRACE:-}" ]; then
            strace ${STRACE_ARGS:--c} -f -o "$STRACE" -p "$pid" &
            strace_pid=$!
        fi
    fi
    # Bytes after the first two seconds are steady state: numbers changing, nothing else.
    sleep 2
    if [ "$name" = gpuwatch ] && [ "$last" = 1 ] && [ -n "${CALLGRIND:-}" ]; then
        if [ -n "${CALLGRIND_START:-}" ]; then
            callgrind_control --dump=start-up "$pid" >/dev/null
        else
            callgrind_control --instr=on "$pid" >/dev/null
        fi
    fi
    local bytes_warm t_warm bytes_end t_end warm_ns=0 ns
    for f in /proc/"$pid"/task/*/schedstat; do
        read -r ns _ <"$f"
        warm_ns=$((warm_ns + ns))
    done
    bytes_warm=$(stat -c %s "$out")
    t_warm=$(date +%s%N)
    sleep $((DURATION - 2))
    bytes_end=$(stat -c %s "$out")
    t_end=$(date +%s%N)
    # CPU from the scheduler, in ns, over the live threads: at ~1 ms of work a second the
    # tick-based utime+stime moves in 10 ms steps; this is what compares two programs.
    local sched_ns=0
    for f in /proc/"$pid"/task/*/schedstat; do
        read -r ns _ <"$f"
        sched_ns=$((sched_ns + ns))
    done
    local hwm anon own
    hwm=$(kib "$pid" VmHWM)
    anon=$(kib "$pid" RssAnon)
    # The program file's own resident pages (all its mappings: code, read-only data, relro):
    # most of the peak RSS above the private memory, and what the code's layout decides.
    own=$(awk -v f="$(readlink "/proc/$pid/exe")" '
        /^[0-9a-f]+-[0-9a-f]+ / { m = ($6 == f) }
        m && $1 == "Rss:" { s += $2 }
        END { print s + 0 }' "/proc/$pid/smaps")
    if [ "$name" = gpuwatch ] && [ "$last" = 1 ] && [ -n "${SMAPS:-}" ]; then cp "/proc/$pid/smaps" "$SMAPS"; fi
    if [ "$last" = 1 ] && [ -n "${THREADS:-}" ]; then
        for t in /proc/"$pid"/task/*; do
            read -r ns _ slices <"$t/schedstat"
            printf '%-16s cpu_ms %8.2f  slices %6d  voluntary %6d  involuntary %6d\n' \
                "$(cat "$t/comm")" "$(echo "$ns / 1000000" | bc -l)" "$slices" \
                "$(awk '$1 == "voluntary_ctxt_switches:" {print $2}' "$t/status")" \
                "$(awk '$1 == "nonvoluntary_ctxt_switches:" {print $2}' "$t/status")"
        done >"$THREADS.$name"
    fi
    tmux -L "$SOCKET" send-keys -t 0 q
    sleep 0.5
    # valgrind writes its counts as the program exits, which takes it a few seconds.
    if [ "$name" = gpuwatch ] && [ "$last" = 1 ] && [ -n "${CALLGRIND:-}" ]; then
        for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    tmux -L "$SOCKET" kill-server 2>/dev/null || true
    if [ -n "$strace_pid" ]; then wait "$strace_pid" || true; fi
    if [ -n "$perf_pid" ]; then wait "$perf_pid" || true; fi
    if [ "$name" = gpuwatch ] && [ "$last" = 1 ] && [ -n "${KEEP_OUTPUT:-}" ]; then cp "$out" "$KEEP_OUTPUT"; fi
    local first_ms="-"
    [ -n "$first" ] && first_ms=$(((first - start) / 1000000))
    echo "$name $sched_ns $hwm $anon $(((bytes_end - bytes_warm) * 1000000000 / (t_end - t_warm))) $first_ms $own $((sched_ns - warm_ns))" >>"$WORK/rows"
}

: >"$WORK/rows"
for ((r = 1; r <= ROUNDS; r++)); do
    last=0
    [ "$r" = "$ROUNDS" ] && last=1
    echo "round $r/$ROUNDS ..." >&2
    under=""
    if [ "$last" = 1 ] && [ -n "${CALLGRIND:-}" ]; then
        instr_at=no
        [ -n "${CALLGRIND_START:-}" ] && instr_at=yes
        under="valgrind --tool=callgrind --instr-atstart=$instr_at ${CALLGRIND_ARGS:-} --callgrind-out-file='$(realpath -m "$CALLGRIND")'"
    fi
    # A data frame: the GPU's name in the panels, or, where the GPUs are rows of a table
    # without names (64 GPUs), the driver version the header shows once sampled.
    measure gpuwatch "H100|driver 550" "$last" "$under '$(realpath "$BIN")' --nvml-lib '$(realpath "$LIB")' ${GPUWATCH_ARGS:-}"
    if [ -n "$NVTOP" ]; then
        measure nvtop "Device 0" "$last" "'$NVTOP' -d 10"
    fi
    if [ -n "$NVITOP_PY" ]; then
        measure nvitop "NVITOP" "$last" "'$NVITOP_PY' -m nvitop -m full --interval 1"
    fi
done

echo "overhead: ${DURATION}s per run at 1 Hz, ${GPUS} fake GPUs, ${PROCS} processes, ${WIDTH}x${HEIGHT} tmux pane, $ROUNDS rounds ${GPUWATCH_ARGS:-}"
echo "  machine: $(nproc) CPUs, $(lscpu | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print $2}'); load now $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "$NVTOP" ] && echo "  anchor:  $("$NVTOP" --version 2>&1 | head -1)"
printf '  %-9s %10s %10s %12s %12s %12s %12s %12s\n' run "CPU s" "peak RSS" "private MiB" "term B/s" "first data" "binary KiB" "steady CPU"
awk '{printf "  %-9s %10.4f %7.2f MiB %12.2f %12d %9s ms %12d %7.3f ms/s\n", $1, $2 / 1e9, $3 / 1024, $4 / 1024, $5, $6, $7, $8 / 1e6 / (duration - 2)}' duration="$DURATION" "$WORK/rows"
if [ -n "$NVTOP" ]; then
    # Ratios per round (gpuwatch's run over the nvtop run right after it), then the median
    # and the spread of those ratios: one slow moment of the machine moves one round only.
    awk '
        $1 == "gpuwatch" { g[++n] = $0 }
        $1 == "nvtop" { v[++m] = $0 }
        function median(a, k,   i, j, t) {
            for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
        }
        END {
            split("CPU|peak RSS|private memory|bytes to the terminal", names, "|")
            split(cpu_target "|1|0.8|1", targets, "|")
            for (c = 2; c <= 5; c++) {
                lo = 1e18; hi = 0
                for (i = 1; i <= n; i++) {
                    split(g[i], a, " "); split(v[i], b, " ")
                    r[i] = (b[c] > 0) ? a[c] / b[c] : 0
                    if (r[i] < lo) lo = r[i]; if (r[i] > hi) hi = r[i]
                }
                med = median(r, n)
                printf "  gpuwatch / nvtop, %-22s %5.2fx (rounds %.2f-%.2f; target <= %sx: %s)\n", names[c - 1] ":", med, lo, hi, targets[c - 1], (med <= targets[c - 1]) ? "met" : "missed"
            }
            # Not a target, a reading aid: the CPU ratio with the start-up of neither program.
            for (i = 1; i <= n; i++) { split(g[i], a, " "); split(v[i], b, " "); r[i] = (b[8] > 0) ? a[8] / b[8] : 0 }
            printf "  gpuwatch / nvtop, %-22s %5.2fx (start-up left out: from 2 s after the first data frame)\n", "steady CPU:", median(r, n)
        }' cpu_target="$([ "$GPUS" -ge 64 ] && echo 1 || echo 0.5)" "$WORK/rows"
fi

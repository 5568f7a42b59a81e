#!/usr/bin/env python3
"""Key-to-frame latency of gpuwatch in a real pseudo-terminal.

Starts `gpuwatch --demo --interval I` on a pty of its own (the pty is its controlling
terminal, as in a tmux pane), waits for the first data frame, then types KEYS keys
(`j` and `k` in turn: each moves the selection, so each changes the screen) at random
moments between GAP/2 and GAP*3/2 apart, and times each key to the first byte the program
writes after it. Prints p50, p99 and the worst per interval, then exits 1 if any key went
unanswered for 5 s.

At 1 s a sample's frame may land right after a key and be counted as the key's; keys are
sent at random phases, so that costs at most a few of the 50 and shows only in p99.

With `--prometheus-gpus N` it watches a stand-in Prometheus on 127.0.0.1 instead of the
demo: N GPUs of gpuwatch exporters (125 hosts x 8 GPUs per 1,000), every native series,
a 300-point window the first time: keys typed while a fleet's answer is applied (issue 26
§10: within 50 ms at 10,000 GPUs).

Usage: scripts/key-latency.py [--bin PATH] [--keys 50] [--gap 0.3] [--intervals 1s,5s]
       [--size 120x40] [--prometheus-gpus 10000]
"""

import argparse
import fcntl
import http.server
import json
import os
import random
import select
import struct
import subprocess
import sys
import termios
import threading
import time


NATIVE = [
    "gpuwatch_gpu_info", "gpuwatch_gpu_lost", "gpuwatch_gpu_utilization_ratio",
    "gpuwatch_gpu_memory_utilization_ratio", "gpuwatch_gpu_memory_total_bytes",
    "gpuwatch_gpu_memory_used_bytes", "gpuwatch_gpu_temperature_celsius",
    "gpuwatch_gpu_power_watts", "gpuwatch_gpu_power_limit_watts",
    "gpuwatch_gpu_sm_clock_hertz", "gpuwatch_gpu_memory_clock_hertz",
    "gpuwatch_gpu_fan_speed_ratio", "gpuwatch_gpu_pcie_transmit_bytes_per_second",
    "gpuwatch_gpu_pcie_receive_bytes_per_second",
]


def fleet_labels(n):
    for i in range(n):
        host, gpu = divmod(i, 8)
        yield {"instance": f"10.{host // 250}.{host % 250}.1:9401", "job": "gpuwatch",
               "gpu": str(gpu), "uuid": f"GPU-n{host:05d}-{gpu}", "name": "NVIDIA H100 80GB HBM3"}


def stand_in_prometheus(gpus):
    """A Prometheus API on 127.0.0.1 answering every instant query with the fleet's
    series and every range query with a 300-point window: the shapes the example
    `prometheus_scale` serves. Returns the base URL."""
    now = time.time()
    value = {"gpuwatch_gpu_info": "1", "gpuwatch_gpu_lost": "0"}
    vector = [{"metric": dict(l, __name__=name), "value": [now, value.get(name, "0.5")]}
              for l in fleet_labels(gpus) for name in NATIVE]
    vector += [{"metric": {"__name__": "up", "instance": l["instance"]}, "value": [now, "1"]}
               for l in fleet_labels(gpus) if l["gpu"] == "0"]
    window = [[now - 300 + i, "42"] for i in range(300)]
    bodies = {
        "vector": json.dumps({"status": "success", "data": {"resultType": "vector", "result": vector}}).encode(),
        "matrix": json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
            {"metric": l, "values": window} for l in fleet_labels(gpus)]}}).encode(),
    }

    class Api(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = bodies["matrix" if "query_range" in self.path else "vector"]
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:
                pass  # gpuwatch gave up on a slow answer (its timeout): its own report says so

        do_POST = do_GET

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def spawn(binary, interval, cols, rows, source=("--demo",)):
    master, slave = os.openpty()
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def controlling_tty():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    env = {"PATH": os.environ.get("PATH", ""), "HOME": "/nonexistent", "TERM": "xterm-256color"}
    child = subprocess.Popen(
        [binary, *source, "--interval", interval],
        stdin=slave, stdout=slave, stderr=slave, env=env,
        preexec_fn=controlling_tty, close_fds=True,
    )
    os.close(slave)
    return master, child


class Output:
    """Reads the master on a thread; keeps every chunk's arrival time."""

    def __init__(self, master):
        self.master = master
        self.text = bytearray()
        self.times = []
        self.lock = threading.Lock()
        self.done = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while not self.done:
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            now = time.monotonic()
            with self.lock:
                self.text += chunk
                self.times.append(now)

    def first_after(self, t):
        """The arrival time of the first chunk at or after `t`, if any yet."""
        with self.lock:
            later = [w for w in self.times[-64:] if w >= t]
        return min(later) if later else None

    def quiet_for(self, seconds):
        with self.lock:
            last = self.times[-1] if self.times else 0
        return time.monotonic() - last >= seconds


def measure(binary, interval, keys, gap, cols, rows, source=("--demo",), ready=b"alice"):
    master, child = spawn(binary, interval, cols, rows, source)
    out = Output(master)
    deadline = time.monotonic() + 30
    while ready not in out.text:
        if time.monotonic() > deadline:
            sys.exit(f"key-latency: no data frame within 30 s at -i {interval}")
        time.sleep(0.05)
    while not out.quiet_for(0.2):
        time.sleep(0.02)
    delays = []
    for i in range(keys):
        sent = time.monotonic()
        os.write(master, b"j" if i % 2 == 0 else b"k")
        while True:
            first = out.first_after(sent)
            if first is not None:
                delays.append(first - sent)
                break
            if time.monotonic() - sent > 5:
                delays.append(None)
                break
            time.sleep(0.0005)
        time.sleep(max(0.0, sent + random.uniform(gap / 2, gap * 1.5) - time.monotonic()))
    sent = time.monotonic()
    os.write(master, b"q")
    try:
        child.wait(timeout=20)
        quit_s = time.monotonic() - sent
    except subprocess.TimeoutExpired:
        child.kill()
        quit_s = None
    out.done = True
    os.close(master)
    return delays, quit_s


def percentile(sorted_values, p):
    return sorted_values[min(len(sorted_values) - 1, int(round(p / 100 * (len(sorted_values) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--bin", default=os.path.join(here, "..", "target", "release", "gpuwatch"))
    ap.add_argument("--keys", type=int, default=50)
    ap.add_argument("--gap", type=float, default=0.3, help="mean seconds between keys")
    ap.add_argument("--intervals", default="1s,5s")
    ap.add_argument("--size", default="120x40")
    ap.add_argument("--prometheus-gpus", type=int, default=0)
    args = ap.parse_args()
    source, ready = ("--demo",), b"alice"
    if args.prometheus_gpus:
        source, ready = ("--prometheus", stand_in_prometheus(args.prometheus_gpus)), b"10.0.0.1"
    cols, rows = (int(x) for x in args.size.split("x"))
    failed = False
    print(f"binary: {args.bin}  size {cols}x{rows}  {args.keys} keys ~{args.gap}s apart")
    for interval in args.intervals.split(","):
        delays, quit_s = measure(args.bin, interval, args.keys, args.gap, cols, rows, source, ready)
        answered = sorted(d * 1000 for d in delays if d is not None)
        lost = len(delays) - len(answered)
        failed |= lost > 0
        if answered:
            print(
                f"-i {interval:>4}: p50 {percentile(answered, 50):7.1f} ms  "
                f"p99 {percentile(answered, 99):7.1f} ms  max {answered[-1]:7.1f} ms  "
                f"unanswered {lost}  q exits in "
                + (f"{quit_s * 1000:.0f} ms" if quit_s is not None else "never (killed)")
            )
        else:
            print(f"-i {interval:>4}: no key answered within 5 s")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

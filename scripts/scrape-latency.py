#!/usr/bin/env python3
"""Scrape latency and the exporter's own CPU per sample (issue 25: `serve` at 64 GPUs, a
scrape <= 5 ms p99). A benchmark to run by hand, never a test: the numbers go in
docs/performance.md.

Starts `gpuwatch --demo --demo-gpus N --interval I serve --listen 127.0.0.1:PORT [EXTRA...]`,
waits for its first answer, then scrapes /metrics SCRAPES times one after another over one
keep-alive connection (as Prometheus does) at random moments, timing each request to the
last byte of its answer. Meanwhile it reads the exporter's CPU time from /proc and divides
by the samples taken. Prints p50, p99 and the worst scrape, the answer's size, and CPU
milliseconds per sample (with the scrapes' share included, since a scrape costs CPU too:
also printed alone from an idle window without scrapes).

Usage: scripts/scrape-latency.py [--bin target/release/gpuwatch] [--gpus 64]
       [--scrapes 2000] [--interval 1s] [--idle 20] [-- EXTRA SERVE FLAGS, e.g. --dcgm-compat]
"""

import argparse
import http.client
import os
import random
import socket
import subprocess
import sys
import time


def cpu_seconds(pid):
    """User + system CPU of `pid` so far, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(sorted_values, p):
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * p))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/gpuwatch")
    ap.add_argument("--gpus", type=int, default=64)
    ap.add_argument("--scrapes", type=int, default=2000)
    ap.add_argument("--interval", default="1s")
    ap.add_argument("--idle", type=float, default=20.0, help="seconds of CPU measured without scrapes")
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    interval_s = float(a.interval.rstrip("s"))
    port = free_port()
    cmd = [a.bin, "--demo", "--demo-gpus", str(a.gpus), "--interval", a.interval,
           "serve", "--listen", f"127.0.0.1:{port}", *a.extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/metrics")
                body = c.getresponse().read()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    sys.exit(f"gpuwatch did not answer: {proc.stderr.read().decode()[:500]}")
                time.sleep(0.1)
        # Idle: what sampling and rendering cost with nobody scraping.
        cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(a.idle)
        idle_ms = (cpu_seconds(proc.pid) - cpu0) * 1000 / ((time.monotonic() - t0) / interval_s)
        # Scrapes over one keep-alive connection, spaced at random within a sample period (a
        # fresh one: the exporter ends a connection idle for --http-header-timeout).
        c.close()
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        times = []
        cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
        for _ in range(a.scrapes):
            time.sleep(random.uniform(0, 0.01))
            start = time.perf_counter()
            c.request("GET", "/metrics")
            r = c.getresponse()
            body = r.read()
            times.append((time.perf_counter() - start) * 1000)
            if r.status != 200:
                sys.exit(f"scrape answered {r.status}")
        elapsed = time.monotonic() - t0
        busy_ms = (cpu_seconds(proc.pid) - cpu0) * 1000 / (elapsed / interval_s)
        times.sort()
        series = sum(1 for line in body.decode().splitlines() if line and not line.startswith("#"))
        print(f"{a.gpus} GPUs, {len(body)} bytes, {series} series per scrape, {a.scrapes} scrapes in {elapsed:.1f} s")
        print(f"scrape ms: p50 {percentile(times, 0.5):.2f}  p99 {percentile(times, 0.99):.2f}  max {times[-1]:.2f}")
        print(f"exporter CPU per {a.interval} sample: {idle_ms:.2f} ms idle, {busy_ms:.2f} ms while scraped")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()

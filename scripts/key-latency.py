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

Usage: scripts/key-latency.py [--bin PATH] [--keys 50] [--gap 0.3] [--intervals 1s,5s]
       [--size 120x40]
"""

import argparse
import fcntl
import os
import random
import select
import struct
import subprocess
import sys
import termios
import threading
import time


def spawn(binary, interval, cols, rows):
    master, slave = os.openpty()
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def controlling_tty():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    env = {"PATH": os.environ.get("PATH", ""), "HOME": "/nonexistent", "TERM": "xterm-256color"}
    child = subprocess.Popen(
        [binary, "--demo", "--interval", interval],
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


def measure(binary, interval, keys, gap, cols, rows):
    master, child = spawn(binary, interval, cols, rows)
    out = Output(master)
    deadline = time.monotonic() + 30
    while b"alice" not in out.text:
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
    args = ap.parse_args()
    cols, rows = (int(x) for x in args.size.split("x"))
    failed = False
    print(f"binary: {args.bin}  size {cols}x{rows}  {args.keys} keys ~{args.gap}s apart")
    for interval in args.intervals.split(","):
        delays, quit_s = measure(args.bin, interval, args.keys, args.gap, cols, rows)
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

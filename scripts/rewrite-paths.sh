#!/usr/bin/env bash
# Rewrites the module paths the LAYERS move changed (issue 21 §2) in Rust sources:
#   crate::source::{GpuReading, Sample, …, fields, health, mig, throttle, workload, lookup}
#       → crate::reading::…
#   crate::source::wire::…  → crate::wire::…
#   crate::select::…        → crate::reading::device_list::…
# and the same under `gpuwatch::` (tests, benches, examples, main.rs) and through `super::`
# chains that reach `source` from a backend's files. Brace groups that mix moved and staying
# items (`use crate::source::{GpuReading, GpuSource};`) are split into one `use` per root.
# Idempotent: a second run changes nothing. Run `cargo fmt --all` afterwards (the split
# imports are not sorted).
#
# Usage: scripts/rewrite-paths.sh [FILE…]   (no argument: every .rs under src/ tests/ benches/ examples/)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
if [ "$#" -eq 0 ]; then
    set -- $(find src tests benches examples -name '*.rs' 2>/dev/null | sort)
fi
exec python3 - "$@" <<'PY'
import re, sys

# What left `source` for `reading` (its data types and vocabulary modules).
READING = {
    "GpuId", "Sample", "HistoryPoint", "HostStatus", "HostInfo", "HostLoad", "Vendor",
    "ComputeMode", "GpuStatus", "GpuReading", "ProcKind", "ProcReading", "HostProc",
    "Visibility", "ProcDetails", "fields", "health", "mig", "throttle", "workload", "lookup",
}

def remap(segs):
    """The new path (segments after the root) for an old one; None when unchanged."""
    if len(segs) >= 2 and segs[0] == "source" and segs[1] in READING:
        return ["reading"] + segs[1:]
    if len(segs) >= 2 and segs[0] == "source" and segs[1] == "wire":
        return segs[1:]
    if segs and segs[0] == "select":
        return ["reading", "device_list"] + segs[1:]
    return None

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
WS = re.compile(r"(?:\s|//[^\n]*\n)*")

class Fail(Exception):
    pass

def ws(s, i):
    return WS.match(s, i).end()

def parse_tree(s, i):
    """A use-tree at i: returns (leaves, end); a leaf is (segments, alias)."""
    i = ws(s, i)
    if s.startswith("{", i):
        leaves, i = [], i + 1
        while True:
            i = ws(s, i)
            if s.startswith("}", i):
                return leaves, i + 1
            sub, i = parse_tree(s, i)
            leaves += sub
            i = ws(s, i)
            if s.startswith(",", i):
                i += 1
            elif not s.startswith("}", i):
                raise Fail()
    if s.startswith("*", i):
        return [(["*"], None)], i + 1
    m = IDENT.match(s, i)
    if not m:
        raise Fail()
    name, i = m.group(), m.end()
    j = ws(s, i)
    if s.startswith("::", j):
        k = ws(s, j + 2)
        if k < len(s) and (s[k] in "{*" or IDENT.match(s, k)):
            sub, end = parse_tree(s, k)
            return [([name] + segs, alias) for segs, alias in sub], end
        return [([name], None)], i  # `X::<T>` or `X::` then something else: the path ends at X
    m = re.compile(r"\s+as\s+([A-Za-z_][A-Za-z0-9_]*)").match(s, i)
    if m:
        return [([name], m.group(1))], m.end()
    return [([name], None)], i

def render(leaves):
    """The shortest tree for leaves, keeping their first-seen order."""
    order, groups, here = [], {}, []
    for segs, alias in leaves:
        if len(segs) == 1:
            here.append(segs[0] + (f" as {alias}" if alias else ""))
            continue
        if segs[0] not in groups:
            order.append(segs[0])
            groups[segs[0]] = []
        groups[segs[0]].append((segs[1:], alias))
    parts = []
    for t in here:
        parts.append(t)
    for head in order:
        parts.append(head + "::" + render(groups[head]))
    return parts[0] if len(parts) == 1 else "{" + ", ".join(parts) + "}"

def top_children(leaves):
    order, groups = [], {}
    for segs, alias in leaves:
        if segs[0] not in groups:
            order.append(segs[0])
            groups[segs[0]] = []
        groups[segs[0]].append((segs, alias))
    return [groups[h] for h in order]

def rewrite(text, path):
    depth = super_depth(path)
    roots = r"(?<![A-Za-z0-9_:$])(crate|gpuwatch)::"
    if depth:
        roots = r"(?<![A-Za-z0-9_:$])(crate|gpuwatch|" + "::".join(["super"] * depth) + r")::"
    out, pos = [], 0
    for m in re.finditer(roots, text):
        if m.start() < pos:
            continue
        root = m.group(1)
        base = ["source"] if root.startswith("super") else []
        try:
            leaves, end = parse_tree(text, m.end())
        except Fail:
            continue
        leaves = [(base + segs, alias) for segs, alias in leaves]
        new, changed = [], False
        for segs, alias in leaves:
            n = remap(segs)
            if n is not None:
                changed = True
                # Keep the name the file uses (`use crate::select;` → `… device_list as select`).
                if alias is None and n[-1] != segs[-1] and segs[-1] not in ("self", "*"):
                    alias = segs[-1]
                segs = n
            new.append((segs, alias))
        if not changed:
            continue
        if root.startswith("super"):
            root = "crate"
        stmt = re.search(r"(?m)^([ \t]*(?:pub(?:\([^)]*\))?\s+)?use\s+)$", text[: m.start()])
        children = top_children(new)
        if stmt and len(children) > 1 and text[:m.start()].endswith(stmt.group(1)):
            body = (";\n" + stmt.group(1) + root + "::").join(render(c) for c in children)
        else:
            body = render(new)
        out.append(text[pos:m.start()] + root + "::" + body)
        pos = end
    out.append(text[pos:])
    return "".join(out)

def super_depth(path):
    """How many `super::` reach `crate::source` from a backend's file (0: not under src/source/)."""
    if not path.startswith("src/source/"):
        return 0
    parts = path[len("src/source/"):].split("/")
    if parts == ["mod.rs"]:
        return 0
    depth = len(parts) - (1 if parts[-1] == "mod.rs" else 0)
    if parts[-1].endswith("_tests.rs"):
        depth += 1
    return depth

changed = 0
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as f:
        old = f.read()
    new = rewrite(old, path)
    if new != old:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
        changed += 1
        print(f"rewrote {path}")
print(f"{changed} file(s) rewritten", file=sys.stderr)
PY

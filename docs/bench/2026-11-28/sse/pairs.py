#!/usr/bin/env python3
"""Pairs the b3 bench peak runs of one directory: out-plain-N with
out-enc-N (run one after the other, alternating), and prints per cell the
plain and encrypted MB/s of every round, the per-round ratio enc/plain and
the median ratio. Usage: pairs.py DIR"""
import glob, json, os, statistics, sys

root = sys.argv[1]
rounds = {}
for kind in ("plain", "enc"):
    for d in glob.glob(os.path.join(root, "out-%s-*" % kind)):
        n = int(d.rsplit("-", 1)[1])
        f = glob.glob(os.path.join(d, "*.json"))[0]
        cells = json.load(open(f))["cells"]
        rounds.setdefault(n, {})[kind] = {(c["op"], c["size"]): c for c in cells}
keys = sorted({k for r in rounds.values() for k in r["plain"]}, key=lambda k: (k[1], k[0] != "upload"))
print("| op | size | plain MB/s per round | encrypted MB/s per round | enc/plain per round | median ratio | p50 ms plain / enc (median) |")
print("|---|---|---|---|---|---|---|")
for op, size in keys:
    p, e, r, lp, le = [], [], [], [], []
    for n in sorted(rounds):
        a, b = rounds[n]["plain"][(op, size)], rounds[n]["enc"][(op, size)]
        p.append(a["mb_per_sec"]); e.append(b["mb_per_sec"]); r.append(b["mb_per_sec"] / a["mb_per_sec"])
        lp.append(a["latency_ms"]["p50"]); le.append(b["latency_ms"]["p50"])
    name = "%d KiB" % (size >> 10) if size < 1 << 20 else "%d MiB" % (size >> 20)
    print("| %s | %s | %s | %s | %s | **%.2f** | %.2f / %.2f |" % (op, name, " ".join("%.0f" % x for x in p),
          " ".join("%.0f" % x for x in e), " ".join("%.2f" % x for x in r), statistics.median(r),
          statistics.median(lp), statistics.median(le)))

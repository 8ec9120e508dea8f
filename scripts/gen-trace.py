#!/usr/bin/env python3
"""Deterministic large synthetic traces for replay throughput runs.

usage: gen-trace.py msr|fiu RECORDS > FILE
  msr: MSR Cambridge CSV, 60% writes of 4-64 KiB at 4 KiB offsets over 3 GiB.
  fiu: FIU lines, 80% 4 KiB writes over 2 GiB, content from a skewed pool of
       200k hashes (the minimum of two uniform draws).
"""
import random
import sys

if len(sys.argv) != 3 or sys.argv[1] not in ("msr", "fiu") or not sys.argv[2].isdigit():
    print(__doc__.strip(), file=sys.stderr)
    sys.exit(2)
kind, n = sys.argv[1], int(sys.argv[2])
r = random.Random(11)
out = sys.stdout
if kind == "msr":
    t = 128166372003061629
    for _ in range(n):
        t += r.randrange(20000)
        op = "Write" if r.random() < 0.6 else "Read"
        out.write(f"{t},hm,1,{op},{r.randrange(3 << 18) * 4096},{(1 + r.randrange(16)) * 4096},{r.randrange(5000)}\n")
else:
    ts = 89966527019504
    for _ in range(n):
        ts += r.randrange(3000000)
        op = "R" if r.random() < 0.2 else "W"
        h = min(r.randrange(200000), r.randrange(200000))
        out.write(f"{ts} 4318 nfsd {r.randrange(1 << 19) * 8} 8 {op} 8 0 {h:032x}\n")

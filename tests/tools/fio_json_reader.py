#!/usr/bin/env python3
"""Reads fio --output-format=json the way fio users' scripts do (fio-plot,
pandas notebooks): one line per job and direction that did I/O.

Usage: fio_json_reader.py RESULT.json
"""
import json
import sys

if len(sys.argv) != 2:
    sys.exit(__doc__.strip())
with open(sys.argv[1]) as f:
    data = json.load(f)
print("fio", data["fio version"], "global", sorted(data["global options"]))
for job in data["jobs"]:
    for ddir in ("read", "write", "trim"):
        s = job[ddir]
        if s["total_ios"] == 0:
            continue
        clat = s["clat_ns"]
        print(
            job["jobname"],
            ddir,
            job["job options"].get("rw"),
            "ios", s["total_ios"],
            "kbytes", s["io_kbytes"],
            "bytes", s["io_bytes"],
            "iops>0", s["iops"] > 0,
            "bw_ok", abs(s["bw"] - s["bw_bytes"] / 1024) <= 1,
            "runtime>=0", s["runtime"] >= 0,
            "p99_int", isinstance(clat["percentile"]["99.000000"], int),
            "N", clat["N"] == s["total_ios"] == s["lat_ns"]["N"],
            "slat", s["slat_ns"]["mean"] >= 0,
            "lat>=clat", s["lat_ns"]["mean"] >= clat["mean"] - 1e-6,
        )

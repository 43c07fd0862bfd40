#!/usr/bin/env python3
"""How long each emulated link was not busy during a bulk transfer: the transfer's time less
the time the bytes the emulator forwarded on that path take at the path's configured rate.

Usage: idle.py bulk.jsonl (from `cargo xtask peers bulk`)."""
import json
import sys

RATES = {"pb-high": [10e6, 40e6], "pb-low": [25e6, 25e6]}

print("| scenario | peer | variant | seconds | path 0 not busy ms | path 1 not busy ms |")
print("|---|---|---|---:|---:|---:|")
for line in open(sys.argv[1]):
    run = json.loads(line)
    if not run["ok"] or run["scenario"] not in RATES:
        continue
    busy = [b * 8 / r for b, r in zip(run["forwarded_bytes"], RATES[run["scenario"]])]
    idle = " | ".join(f"{(run['seconds'] - b) * 1e3:.1f}" for b in busy)
    print(f"| {run['scenario']} | {run['peer']} | {run['variant']} | {run['seconds']:.3f} | {idle} |")

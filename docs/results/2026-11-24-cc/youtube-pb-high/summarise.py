#!/usr/bin/env python3
"""Summarise page_client JSON (RepeatedReport): per-load queue drops and FRT spread."""
import json, sys, statistics
for path in sys.argv[1:]:
    r = json.load(open(path))
    runs = r["runs"]
    drops = [sum(d["uplink_queue"] + d["downlink_queue"] for d in run.get("link_drops", {}).values()) for run in runs]
    frt = sorted(run["frt_ms"] for run in runs)
    plt = [run["plt_ms"] for run in runs]
    def pct(xs, q):
        k = (len(xs) - 1) * q; lo = int(k); hi = min(lo + 1, len(xs) - 1)
        return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)
    med, p90 = pct(frt, 0.5), pct(frt, 0.9)
    print(f"{path}: loads {len(runs)}, queue drops per load min/median/max {min(drops)}/{statistics.median(drops)}/{max(drops)}, "
          f"FRT median {med:.1f} ms p90 {p90:.1f} ms (p90/median {p90/med:.2f}), FRT mean {statistics.mean(frt):.1f}, PLT mean {statistics.mean(plt):.1f} ms")

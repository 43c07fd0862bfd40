"""FRT per scheduler of one page in one preset, from loads.csv files: mean, its standard
error, median, p90 and p90/median; loads without re-injection are left out (files written
before the `reinjection` column cannot tell them apart). Usage: dist.py PAGE:PRESET loads.csv
[loads.csv ...]"""
import collections
import csv
import statistics as st
import sys


def p90(xs):
    xs = sorted(xs)
    k = 0.9 * (len(xs) - 1)
    i = int(k)
    return xs[i] + (xs[min(i + 1, len(xs) - 1)] - xs[i]) * (k - i)


page, preset = sys.argv[1].split(":")
frt = collections.defaultdict(list)
for path in sys.argv[2:]:
    for row in csv.DictReader(open(path)):
        if row.get("reinjection", "on") != "on":
            continue
        if row["page"] == page and row["scenario"] == preset and not row["error"]:
            frt[row["scheduler"]].append(float(row["frt_ms"]))
for scheduler, xs in frt.items():
    se = st.stdev(xs) / len(xs) ** 0.5
    print(f"{scheduler:30} n={len(xs)} mean {st.mean(xs):6.1f} se {se:4.1f} "
          f"median {st.median(xs):6.1f} p90 {p90(xs):6.1f} p90/med {p90(xs) / st.median(xs):.2f}")

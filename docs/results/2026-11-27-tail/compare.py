"""Mean FRT and PLT per (scenario, page, scheduler) of two page runs, the first against the
second, with the difference in standard errors: python3 compare.py A.csv B.csv"""
import csv
import statistics as st
import sys


def load(path):
    cells = {}
    for r in csv.DictReader(open(path)):
        if r["error"]:
            continue
        key = (r["scenario"], r["page"], r["scheduler"])
        cells.setdefault(key, []).append((float(r["frt_ms"]), float(r["plt_ms"])))
    return cells


def se(x):
    return st.stdev(x) / len(x) ** 0.5 if len(x) > 1 else 0.0


def compare(a, b):
    diff = st.mean(a) - st.mean(b)
    return f"{st.mean(a):7.1f} vs {st.mean(b):7.1f} ({diff / st.mean(b) * 100:+5.1f}%, {diff / ((se(a) ** 2 + se(b) ** 2) ** 0.5 + 1e-9):+.1f} SE)"


A, B = load(sys.argv[1]), load(sys.argv[2])
for key in sorted(A):
    if key not in B:
        continue
    a, b = A[key], B[key]
    print(f"{key[0]:14s} {key[1]:16s} {key[2]:16s} FRT {compare([x[0] for x in a], [x[0] for x in b])}"
          f"  PLT {compare([x[1] for x in a], [x[1] for x in b])} n={len(a)},{len(b)}")

# lte per cell: mean FRT and PLT of the idle-flights run's two builds (bound off / on, ddb7985)
# and of this run, with this run's standard error. usage: ltecmp.py OFF.csv ON.csv NOW.csv
import csv, sys, statistics as st, collections
def load(p):
    d = collections.defaultdict(list)
    for r in csv.DictReader(open(p)):
        if r.get('error') or r['paths'] != 'all':
            continue
        d[(r['page'], r['scheduler'])].append((float(r['frt_ms']), float(r['plt_ms'])))
    return d
off, on, now = (load(p) for p in sys.argv[1:4])
def mean(d, k, i):
    v = [x[i] for x in d.get(k, [])]
    return '%.1f' % st.mean(v) if v else '-'
def se(d, k, i):
    v = [x[i] for x in d.get(k, [])]
    return st.stdev(v) / len(v) ** .5 if len(v) > 1 else 0.0
print('| page | row | FRT off | FRT on | FRT now | PLT off | PLT on | PLT now |')
print('|---|---|---:|---:|---:|---:|---:|---:|')
for k in sorted(now):
    print('| %s | %s | %s | %s | %s ± %.1f | %s | %s | %s ± %.1f |' % (
        k[0], k[1], mean(off, k, 0), mean(on, k, 0), mean(now, k, 0), se(now, k, 0),
        mean(off, k, 1), mean(on, k, 1), mean(now, k, 1), se(now, k, 1)))

# Quick matrix against 2026-11-22's: mean FRT and PLT per cell of mpquic's two-path rows
# (priority-bucket, lrf, sec; default controller), and how far apart in pooled SDs.
import csv, sys, statistics as st, collections
# Within a repetition the main row of a scheduler comes first; a later row with the same
# scheduler, controller and paths is a variant (no delivery reports), which the CSV does not name.
def load(path):
    rows = collections.defaultdict(list)
    seen = set()
    default_cc = None
    for r in csv.DictReader(open(path)):
        default_cc = default_cc or r['cc']
        if r.get('error') or r['paths'] != 'all' or r.get('client', 'replay') != 'replay':
            continue
        if r['scheduler'] not in ('priority-bucket', 'lrf', 'sec') or r['cc'] != default_cc:
            continue
        key = (r['scenario'], r['page'], r['scheduler'])
        if (key, r['rep']) in seen:
            continue
        seen.add((key, r['rep']))
        rows[key].append((float(r['frt_ms']), float(r['plt_ms'])))
    return rows
old, new = load(sys.argv[1]), load(sys.argv[2])
print('| cell | scheduler | FRT 2026-11-22 | FRT now | PLT 2026-11-22 | PLT now |')
print('|---|---|---:|---:|---:|---:|')
for k in sorted(old):
    if k not in new: continue
    o, n = old[k], new[k]
    cells = []
    for i in (0, 1):
        a = [x[i] for x in o]; b = [x[i] for x in n]
        d = st.mean(b) - st.mean(a)
        cells.append((st.mean(a), st.mean(b), 100 * d / st.mean(a)))
    print('| %s %s | %s | %.1f | %.1f (%+.1f%%) | %.1f | %.1f (%+.1f%%) |' % (k[0], k[1], k[2], cells[0][0], cells[0][1], cells[0][2], cells[1][0], cells[1][1], cells[1][2]))

import json, sys, statistics as st, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line); rep = r.get('report')
    if not rep or not r.get('reinjection', True): continue
    rows[(r['scenario'], r['page'], r['scheduler'])].append(rep['frt_ms'])
def se(xs): return st.stdev(xs)/len(xs)**0.5
for (s,p,sch) in sorted(rows):
    if sch != 'priority-bucket': continue
    pb = rows[(s,p,sch)]
    out = []
    ok = True
    for o in ('lrf','sec'):
        x = rows.get((s,p,o))
        if not x: continue
        d = st.mean(pb)-st.mean(x); tse = 2*(se(pb)**2+se(x)**2)**0.5
        behind = d > tse
        ok = ok and not behind
        out.append(f"{o} {st.mean(x):7.1f} (PB {d:+.1f} ms, 2SE {tse:.1f})")
    print(f"{s:14} {p:20} PB {st.mean(pb):7.1f}  " + "  ".join(out) + ("  HOLDS" if ok else "  BEHIND"))

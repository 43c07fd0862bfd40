import json, sys, statistics as st, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    rep = r.get('report')
    if not rep: continue
    reinj = r.get('reinjection', True)
    key = (r['scenario'], r['page'], r['scheduler'] + ('' if reinj else '-noR'))
    drops = sum(d.get('uplink_queue',0)+d.get('downlink_queue',0) for d in rep.get('link_drops',{}).values())
    rows[key].append((rep['frt_ms'], rep['plt_ms'], rep.get('duplicate_bytes',0), rep['bytes'], drops))
def p90(xs):
    xs = sorted(xs); k = 0.9*(len(xs)-1); f = int(k); c = min(f+1, len(xs)-1)
    return xs[f] + (xs[c]-xs[f])*(k-f)
def se(xs): return st.stdev(xs)/len(xs)**0.5 if len(xs)>1 else 0
scen = sorted({k[0] for k in rows}); pages = sorted({k[1] for k in rows})
for s in scen:
    gains=[]; red=[]; tot=[]
    for p in pages:
        pb = rows.get((s,p,'priority-bucket')); lr = rows.get((s,p,'lrf-noR')); l = rows.get((s,p,'lrf')); sc = rows.get((s,p,'sec'))
        if not pb or not lr: continue
        f=[x[0] for x in pb]; pl=[x[1] for x in pb]; lf=[x[0] for x in lr]; lp=[x[1] for x in lr]
        g = 1 - st.mean(f)/st.mean(lf)
        if p != "inversion-synthetic": gains.append(g)
        d = st.mean(pl)-st.mean(lp); dse = (se(pl)**2+se(lp)**2)**0.5
        if p != "inversion-synthetic": red += [x[2] for x in pb]; tot += [x[3] for x in pb]
        print(f"{s:14} {p:20} n={len(pb)} FRT {st.mean(f):7.1f} vs lrf-noR {st.mean(lf):7.1f} gain {100*g:5.1f}%  p90/med {p90(f)/st.median(f):.2f}  PLT {st.mean(pl):7.1f} vs lrf-noR {st.mean(lp):7.1f} ({100*d/st.mean(lp):+.1f}%, {d/dse if dse else 0:+.1f} SE) lrf {st.mean([x[1] for x in l]) if l else float('nan'):7.1f}  sec FRT {st.mean([x[0] for x in sc]) if sc else float('nan'):7.1f} drops/load {st.mean([x[4] for x in pb]):.1f}")
    print(f"{s} mean FRT gain over the five bundled pages (synthetic page left out) {100*st.mean(gains):.1f} redundant (five pages) {100*sum(red)/sum(tot):.2f} %")

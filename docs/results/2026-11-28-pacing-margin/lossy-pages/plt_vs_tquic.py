import csv, sys, statistics as st, collections
rows = collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    if r['error'] or r['client'] != 'replay': continue
    rows[(r['scenario'], r['page'], r['scheduler'], r['cc'], r['paths'])].append((float(r['frt_ms']), float(r['plt_ms'])))
scen = sorted({k[0] for k in rows}); pages = sorted({k[1] for k in rows})
def m(s, sch, cc, paths='all', i=1):
    vals = [st.mean([x[i] for x in rows[(s,p,sch,cc,paths)]]) for p in pages if (s,p,sch,cc,paths) in rows]
    return st.mean(vals) if len(vals)==len(pages) else float('nan')
print("| preset | priority-bucket PLT | lrf PLT | tquic minrtt+BBR PLT | tquic minrtt+CUBIC PLT | PB vs tquic BBR | PB FRT vs lrf |")
print("|---|---:|---:|---:|---:|---:|---:|")
for s in scen:
    pb=m(s,'priority-bucket','bbr'); l=m(s,'lrf','bbr'); tb=m(s,'tquic minrtt','bbr'); tc=m(s,'tquic minrtt','cubic')
    fg = 1 - m(s,'priority-bucket','bbr',i=0)/m(s,'lrf','bbr',i=0)
    print(f"| {s} | {pb:.1f} | {l:.1f} | {tb:.1f} | {tc:.1f} | {100*(pb/tb-1):+.1f}% | {100*fg:.1f}% below |")

import json,sys,math
def load(f):
    return {(x['scenario'],x['page']):x['r'] for x in map(json.loads,open(f))}
b=load(sys.argv[1]); t=load(sys.argv[2]) if len(sys.argv)>2 else b
behind=[];fr=[];pl=[]
for k in b:
    bp=b[k]['priority-bucket']; tp=t[k]['priority-bucket']
    fr.append(tp['frt_ms']/bp['frt_ms']-1); pl.append(tp['plt_ms']/bp['plt_ms']-1)
    for o in ('sec','lrf'):
        if o in b[k]:
            ob=b[k][o]; n=tp['runs']
            se=math.sqrt(tp['frt_sd_ms']**2/n+ob['frt_sd_ms']**2/n)
            d=tp['frt_ms']-ob['frt_ms']
            if d>2*se and d>0.5: behind.append((k,o,round(tp['frt_ms'],1),round(ob['frt_ms'],1),round(2*se,1)))
print('PB FRT change mean %+.2f%% max %+.2f%% min %+.2f%%; PLT mean %+.2f%% max %+.2f%%'%(100*sum(fr)/len(fr),100*max(fr),100*min(fr),100*sum(pl)/len(pl),100*max(pl)))
for k,bp in sorted(((k,b[k]['priority-bucket']) for k in b), key=lambda x: -(t[x[0]]['priority-bucket']['frt_ms']/x[1]['frt_ms'])):
    tp=t[k]['priority-bucket']; r=tp['frt_ms']/bp['frt_ms']-1; q=tp['plt_ms']/bp['plt_ms']-1
    if abs(r)>0.01 or abs(q)>0.01: print('  %-15s %-22s FRT %7.1f -> %7.1f (%+.1f%%)  PLT %7.1f -> %7.1f (%+.1f%%)'%(k[0],k[1],bp['frt_ms'],tp['frt_ms'],100*r,bp['plt_ms'],tp['plt_ms'],100*q))
print('behind (PB vs other, >2SE):')
for x in behind: print('  ',x)

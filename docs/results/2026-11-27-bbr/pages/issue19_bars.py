import json, statistics as st, math, sys
from collections import defaultdict
d=defaultdict(list)
for l in open(sys.argv[1]):
    r=json.loads(l)
    if not r.get('report'): continue
    key=(r['scenario'],r['page'],r['scheduler'],r.get('reinjection',True))
    d[key].append(r['report'])
def q(v,p):
    v=sorted(v); k=(len(v)-1)*p; f=math.floor(k); c=math.ceil(k)
    return v[f]+(v[c]-v[f])*(k-f)
for sc in ['pb-high','pb-high-lossy']:
    gains=[];red=[];byt=[]
    for pg in ['bing-2013','bing.com-2024','google.com-2021','wikipedia.org','youtube-2013']:
        pb=d[(sc,pg,'priority-bucket',True)]; ln=d[(sc,pg,'lrf',False)]; lr=d[(sc,pg,'lrf',True)]; se=d[(sc,pg,'sec',True)]
        f=[x['frt_ms'] for x in pb]; fl=[x['frt_ms'] for x in ln]
        p=[x['plt_ms'] for x in pb]; pl=[x['plt_ms'] for x in ln]
        gain=100*(st.mean(fl)-st.mean(f))/st.mean(fl); gains.append(gain)
        sed=math.sqrt(st.variance(p)/len(p)+st.variance(pl)/len(pl))
        dp=st.mean(p)-st.mean(pl)
        drops=st.mean(sum(k['uplink_queue']+k['downlink_queue'] for k in x['link_drops'].values()) for x in pb)
        red+= [x['duplicate_bytes'] for x in pb]; byt+=[x['bytes'] for x in pb]
        print(f"{sc:14} {pg:16} n={len(f)} FRT {st.mean(f):6.1f} vs lrf-noR {st.mean(fl):6.1f} gain {gain:5.1f}%  p90/med {q(f,0.9)/st.median(f):.2f}  PLT {st.mean(p):6.1f} vs lrf-noR {st.mean(pl):6.1f} ({100*dp/st.mean(pl):+.1f}%, {dp/sed:+.1f} SE) lrf {st.mean(x['plt_ms'] for x in lr):6.1f}  sec FRT {st.mean(x['frt_ms'] for x in se):6.1f} drops/load {drops:.1f}")
    print(f"{sc} mean FRT gain over pages {st.mean(gains):.1f} redundant {100*sum(red)/sum(byt):.2f} %")

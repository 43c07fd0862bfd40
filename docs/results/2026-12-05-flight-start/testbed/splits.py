import csv,re,sys,statistics as st
d=sys.argv[1]; t=sys.argv[2]
loads=[r for r in csv.DictReader(open(d+'/loads.csv')) if r['scheduler']=='priority-bucket']
allocs=[l for l in open(t) if 'need=100000' in l]
print(len(loads),len(allocs), 'PLT mean %.1f'%st.mean(float(r['plt_ms']) for r in loads))
for r,a in zip(loads,allocs):
    bws=re.findall(r'\[p(\d) bw=([\d.]+)Mb',a); sh=re.search(r'shares=\[(\d+), (\d+)\]',a).groups()
    print(r['rep'], r['frt_ms'], r['plt_ms'], bws, sh)

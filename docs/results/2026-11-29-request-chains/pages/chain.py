# bing.com-2024's request chain on the testbed: when widget-initializer.js, experience.js and
# the page's last object completed, mean over the loads of each scheduler (from raw.jsonl).
import json, sys, statistics as st, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    rep = r.get('report')
    if not rep or rep['page'] != 'bing.com-2024':
        continue
    name = r['scheduler'] + ('' if r.get('reinjection', True) else ', no re-injection')
    done = {o['url'].rsplit('/', 1)[-1].split('.')[0]: o['completed_ms'] for o in rep['objects']}
    rows[(r['scenario'], name)].append(
        (done['widget-initializer'], done['experience'], rep['plt_ms']))
print('| preset | scheduler | widget-initializer done | experience.js done | PLT |')
print('|---|---|---:|---:|---:|')
for (scenario, name), xs in sorted(rows.items()):
    w, e, p = (st.mean(x[i] for x in xs) for i in range(3))
    print(f'| {scenario} | {name} | {w:.0f} | {e:.0f} | {p:.0f} |')

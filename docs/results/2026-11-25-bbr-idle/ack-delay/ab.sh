#!/bin/bash
# A/B of two page_client builds, copied to /tmp/pc-base (c504ddb) and /tmp/pc-ack (with the
# requested 5 ms max_ack_delay), each load set run one after the other per page.
# usage: ab.sh scenario sched reps pages...
sc=$1; sched=$2; reps=$3; shift 3
for page in "$@"; do
 for bin in base ack; do
  timeout 900 /tmp/pc-$bin --mode netns --scenario $sc --page $page --scheduler $sched --time-scale 0 --reps $reps 2>/dev/null > /tmp/ab-$sc-$sched-$page-$bin.json
  python3 -c "
import json,statistics as st
d=json.load(open('/tmp/ab-$sc-$sched-$page-$bin.json'))
f=sorted(r['frt_ms'] for r in d['runs']); p=[r['plt_ms'] for r in d['runs']]
med=st.median(f); p90=f[int(0.9*(len(f)-1)+0.5)]
print('$bin', '$page', '$sc', '$sched', 'n %d FRT %.1f±%.1f med %.1f p90/med %.2f PLT %.1f±%.1f' % (len(f), st.mean(f), st.stdev(f), med, p90/med, st.mean(p), st.stdev(p)))
"
 done
done

#!/bin/bash
# usage: mx40.sh OUT.jsonl SCHEDS runs
out=$1; s=$2; n=${3:-40}; : > $out
export s n
run() { sc=$1; pg=$2; r=$(./target/release/lab sim --scenario $sc --page $pg --runs $n --schedulers $s --json 2>/dev/null); echo "{\"scenario\":\"$sc\",\"page\":\"$pg\",\"r\":$r}"; }
export -f run
for sc in pb-high pb-high-lossy; do for pg in bing-2013 youtube-2013 bing.com-2024 google.com-2021 wikipedia.org inversion-synthetic aftonbladet.se linkedin nytimes.com google.ru-search-2018 en.wikipedia.org-wpt; do echo "$sc $pg"; done; done | xargs -P 2 -n 2 bash -c 'run "$0" "$1"' >> $out

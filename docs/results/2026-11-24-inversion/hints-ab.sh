#!/bin/bash
# Interleaved A/B on the namespace testbed: priority-bucket on the synthetic inversion page,
# with and without the page server's dependency hints, 10 loads each, alternating.
cd "$(git rev-parse --show-toplevel)"
cargo build --release -q -p mpquic-lab --bin page_client
for scenario in pb-high pb-high-lossy; do
  for i in $(seq 1 10); do
    for hints in on off; do
      flag=""; [ "$hints" = off ] && flag="--no-dependency-hints"
      out=$(target/release/page_client --mode netns --har pages/inversion-synthetic.har \
        --scenario $scenario --scheduler priority-bucket --time-scale 0 --reps 1 $flag 2>/dev/null)
      echo "{\"scenario\":\"$scenario\",\"hints\":\"$hints\",\"rep\":$i,\"report\":$out}"
    done
  done
done

#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for SECONDS each with cargo fuzz, one after the
# other, and prints each target's executions and coverage; fails on the first crash.
#
#   fuzz/run.sh 600                    # the 10-minute run whose figures docs/results keeps
#   fuzz/run.sh 20                     # CI's smoke run
#   fuzz/run.sh 60 reassembly har      # some targets
#
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Corpora grow in
# fuzz/corpus/<target> from the seeds in fuzz/seeds/<target> where there are any; crashes land
# in fuzz/artifacts/<target>. FUZZ_SUMMARY=path also writes
# the summary table there.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:?usage: fuzz/run.sh SECONDS [TARGET...]}"
shift
if [ "$#" -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
else
  targets=("$@")
fi
# One build for all, before any clock starts.
cargo +nightly fuzz build
summary="| target | seconds | executions | coverage (edges) | features | corpus |
|---|---|---|---|---|---|"
for target in "${targets[@]}"; do
  log="$(mktemp)"
  echo "==> fuzz $target for ${seconds}s"
  corpora=("corpus/$target")
  if [ -d "seeds/$target" ]; then
    corpora+=("seeds/$target")
  fi
  mkdir -p "corpus/$target"
  if ! cargo +nightly fuzz run "$target" "${corpora[@]}" -- -max_total_time="$seconds" \
      -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "fuzz: $target FAILED (input in fuzz/artifacts/$target)" >&2
    rm -f "$log"
    exit 1
  fi
  execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')"
  last="$(grep -E '^#[0-9]+' "$log" | tail -n 1)"
  cov="$(grep -o 'cov: [0-9]*' <<<"$last" | grep -o '[0-9]*' || echo '?')"
  ft="$(grep -o 'ft: [0-9]*' <<<"$last" | grep -o '[0-9]*' || echo '?')"
  corp="$(grep -o 'corp: [0-9]*' <<<"$last" | grep -o '[0-9]*' || echo '?')"
  echo "    $target: $execs executions, cov $cov, ft $ft, corpus $corp, no crash"
  summary+="
| $target | $seconds | $execs | $cov | $ft | $corp |"
  rm -f "$log"
done
echo
echo "$summary"
if [ -n "${FUZZ_SUMMARY:-}" ]; then
  echo "$summary" >"$FUZZ_SUMMARY"
fi

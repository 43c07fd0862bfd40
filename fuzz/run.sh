#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for SECONDS each with cargo fuzz, one after the
# other, and prints each target's executions and coverage; exits non-zero if any crashed.
#
#   fuzz/run.sh 600                    # the 10-minute run
#   fuzz/run.sh 20                     # CI's smoke run (the last step of `cargo xtask ci`)
#   fuzz/run.sh 60 reassembly har      # some targets
#   FUZZ_SUMMARY=summary.md fuzz/run.sh 600   # the summary table in a file too
#
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Corpora grow in
# fuzz/corpus/<target> from the seeds in fuzz/seeds/<target> where there are any; a crashing
# input lands in fuzz/artifacts/<target>/; each run's libFuzzer output is kept in
# fuzz/target/logs/<target>.log.
set -euo pipefail
start="$PWD"
cd "$(dirname "$0")"
seconds="${1:?usage: fuzz/run.sh SECONDS [TARGET...]}"
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz/run.sh: SECONDS must be a positive whole number, not '$seconds'" >&2
  exit 2
fi
shift
if [ "$#" -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
else
  targets=("$@")
fi
# One build for all, before any clock starts.
cargo +nightly fuzz build
mkdir -p target/logs

# `stat::NAME: VALUE` from libFuzzer's final statistics (-print_final_stats=1).
final_stat() {
  grep -ao "stat::$1: *[0-9]*" "$2" | grep -ao '[0-9]*$' | tail -n 1 || true
}
# `NAME: VALUE` from libFuzzer's last status line (`#N DONE cov: X ft: Y corp: Z/...`).
status() {
  grep -aE '^#[0-9]+' "$2" | tail -n 1 | grep -ao "$1: [0-9]*" | grep -ao '[0-9]*$' || true
}

summary="| target | seconds | result | executions | execs/s | coverage (edges) | features | corpus | peak RSS (MB) |
|---|---|---|---|---|---|---|---|---|"
failed=()
for target in "${targets[@]}"; do
  # This run's own output (another run may be going on), kept as <target>.log at the end.
  run_log="target/logs/$target.$$.log"
  log="target/logs/$target.log"
  echo "==> fuzz $target for ${seconds}s"
  corpora=("corpus/$target")
  if [ -d "seeds/$target" ]; then
    corpora+=("seeds/$target")
  fi
  mkdir -p "corpus/$target"
  result=ok
  if ! cargo +nightly fuzz run "$target" "${corpora[@]}" -- -max_total_time="$seconds" \
      -timeout=10 -print_final_stats=1 >"$run_log" 2>&1; then
    result=FAILED
    failed+=("$target")
    tail -n 40 "$run_log"
  fi
  execs="$(final_stat number_of_executed_units "$run_log")"
  rate="$(final_stat average_exec_per_sec "$run_log")"
  rss="$(final_stat peak_rss_mb "$run_log")"
  cov="$(status cov "$run_log")"
  ft="$(status ft "$run_log")"
  corp="$(status corp "$run_log")"
  mv -f "$run_log" "$log"
  if [ "$result" != ok ]; then
    echo "fuzz: $target FAILED: input in fuzz/artifacts/$target/, output in fuzz/$log" >&2
  fi
  echo "    $target: $result, ${execs:-?} executions (${rate:-?}/s), cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}"
  summary+="
| $target | $seconds | $result | ${execs:-?} | ${rate:-?} | ${cov:-?} | ${ft:-?} | ${corp:-?} | ${rss:-?} |"
done
echo
echo "$summary"
if [ -n "${FUZZ_SUMMARY:-}" ]; then
  # Relative to where the script was started, not fuzz/.
  case "$FUZZ_SUMMARY" in
    /*) out="$FUZZ_SUMMARY" ;;
    *) out="$start/$FUZZ_SUMMARY" ;;
  esac
  echo "$summary" >"$out"
  echo "summary written to $out"
fi
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: failed (crash, timeout, out of memory or no such target): ${failed[*]}" >&2
  exit 1
fi

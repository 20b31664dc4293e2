#!/usr/bin/env bash
# Builds the libFuzzer targets (preset fuzz: clang-14, ASan + UBSan) and runs each
# for SECONDS, two at a time, on a copy of its seed corpus
# (tests/fuzz/corpus/<target>/). Prints, per target, the executions, the
# coverage (libFuzzer's cov: and ft:) and any
# finding; a crash, leak, timeout or out-of-memory input is saved under
# build/fuzz/findings/<target>/, its path and stack are printed, and the script
# exits 1. Logs: build/fuzz/logs/<target>.log.
# Usage: scripts/fuzz.sh [SECONDS]   (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
start=$(date +%s)

bash scripts/setup.sh
bash scripts/build.sh fuzz
echo "fuzz: built after $(($(date +%s) - start)) s"

# target:max_len. Lengths leave room above the largest seed for the mutator to grow.
targets=(
  safetensors_fuzzer:4096
  tar_shards_fuzzer:16384
  tar_index_fuzzer:2048
  mnist_fuzzer:4096
  cifar10_fuzzer:8192
  image_decode_fuzzer:8192
  jpeg_restart_fuzzer:8192
  trace_reader_fuzzer:4096
  transform_spec_fuzzer:256
  model_spec_fuzzer:128
  mixture_json_fuzzer:2048
)

out=build/fuzz
bin=$out/tests/fuzz
rm -rf "$out/corpus" "$out/findings" "$out/logs" "$out/tmp"
mkdir -p "$out/logs" "$out/tmp"
# The targets' scratch files (and any a crashed run leaves) stay inside the build tree.
export TMPDIR=$PWD/$out/tmp
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# One target for SECONDS from its committed corpus, with a fixed mutation seed (a
# run here explores what CI's run of the same length explores); its exit status
# goes to its log's .rc file.
run_target() {
  local name=$1 max_len=$2
  local corpus=$out/corpus/$name findings=$out/findings/$name log=$out/logs/$name.log
  rm -rf "$corpus" "$findings"
  mkdir -p "$corpus" "$findings"
  cp tests/fuzz/corpus/"$name"/* "$corpus"/
  local rc=0
  "$bin/$name" -seed=1 -max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb=2048 \
    -timeout=10 -print_final_stats=1 -artifact_prefix="$findings/" "$corpus" \
    >"$log" 2>&1 || rc=$?
  echo "$rc" >"$log.rc"
}

# Two at a time, one per core: each target is one single-threaded process.
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  for entry in "${targets[@]:i:2}"; do
    run_target "${entry%%:*}" "${entry##*:}" &
  done
  wait
done

failed=()
printf '%-24s %12s %8s %8s  %s\n' target executions cov ft findings
for entry in "${targets[@]}"; do
  name=${entry%%:*}
  findings=$out/findings/$name
  log=$out/logs/$name.log
  rc=$(cat "$log.rc" 2>/dev/null || echo "?")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  # The last status line ("#N DONE cov: X ft: Y ..." or the one before a crash).
  cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2 || true)
  ft=$(grep -Eo 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2 || true)
  reproducers=$(find "$findings" -type f | sort)
  if [[ $rc == 0 ]] && [[ -z $reproducers ]]; then
    printf '%-24s %12s %8s %8s  %s\n' "$name" "${execs:-?}" "${cov:-?}" "${ft:-?}" none
    continue
  fi
  failed+=("$name")
  printf '%-24s %12s %8s %8s  %s\n' "$name" "${execs:-?}" "${cov:-?}" "${ft:-?}" \
    "FOUND (exit $rc): ${reproducers:-no reproducer written, see $log}"
  # The report: from the sanitizer's or libFuzzer's first error line on.
  awk '/^==[0-9]+==ERROR|runtime error:|deadly signal|ERROR: libFuzzer|^==[0-9]+== ERROR/ {p=1} p' \
    "$log" | head -80 | sed "s/^/  $name: /"
done

echo "fuzz: ${#targets[@]} targets ran ${seconds} s each; done after $(($(date +%s) - start)) s"
if ((${#failed[@]})); then
  echo "fuzz: findings in ${failed[*]}; reproduce with $bin/TARGET FILE" >&2
  exit 1
fi

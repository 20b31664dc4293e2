#!/usr/bin/env bash
# Runs every benchmark program once, briefly (Google Benchmark's minimum time cut
# to 10 ms where a bench does not fix its own), so the benches keep building and
# running. Figures from this run are not measurements: the benches themselves,
# run by hand, are. Usage: scripts/bench_smoke.sh [BUILD_DIR] (default build/default)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/default}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=()

run() {  # run NAME COMMAND...
  local name=$1
  shift
  local t0=$SECONDS
  if timeout 300 "$@" >"$log" 2>&1; then
    echo "bench-smoke: $name ok ($((SECONDS - t0)) s)"
  else
    echo "bench-smoke: $name FAILED (exit $?)"
    tail -20 "$log"
    failed+=("$name")
  fi
}

for b in rng_bench audit_bench loader_overhead_bench loader_transport_bench \
  transforms_bench datasets_memory mixture_bench; do
  run "$b" "$build/bench/$b" --benchmark_min_time=0.01
done
if [[ -x $build/bench/ddp_allreduce_bench ]]; then
  mpi=(mpirun --allow-run-as-root --oversubscribe -np 2)
  run ddp_allreduce_bench "${mpi[@]}" "$build/bench/ddp_allreduce_bench" \
    --benchmark_min_time=0.01
  run ddp_overlap_bench "${mpi[@]}" "$build/bench/ddp_overlap_bench" \
    --benchmark_min_time=0.01
fi
run shard_locality "$build/bench/shard_locality" --shards 64 --cache-shards 4
run mixture_methods /usr/bin/python3 bench/mixture_methods.py
run mixture_throughput /usr/bin/python3 bench/mixture_throughput.py --quick --build "$build"
run seedloader-bench "$build/tools/seedloader_bench/seedloader-bench" \
  --data synthetic:512 --transform rrc:64,hflip,normalize:imagenet --batch-size 32 \
  --workers 2 --batches 4 --warmup 1 --json
# The decode-only reference needs JPEGs: 64 small ones from bench/pybench.py.
jpegs=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$jpegs"' EXIT
if /usr/bin/python3 -c "import PIL, numpy" 2>/dev/null &&
  /usr/bin/python3 bench/pybench.py make_image_folder "$jpegs" 64 64 48; then
  run seedloader-bench-decode-reference "$build/tools/seedloader_bench/seedloader-bench" \
    --data "imagefolder:$jpegs" --transform rrc:32,hflip,u8 --batch-size 16 \
    --workers 1 --batches 4 --warmup 1 --decode-reference 16 --json
else
  echo "bench-smoke: seedloader-bench --decode-reference skipped (no PIL/numpy for" \
    "/usr/bin/python3)"
fi

# The Python package's benches, from the installed package (build/venv).
[[ -x build/venv/bin/python ]] || bash scripts/python_env.sh
run compare_torch build/venv/bin/python bench/compare_torch.py --quick \
  --binary "$build/tools/seedloader_bench/seedloader-bench"
run python_tiny_batches build/venv/bin/python bench/python_tiny_batches.py --quick
run iterable_bench build/venv/bin/python bench/iterable_bench.py --quick
run python_dataset_compare build/venv/bin/python bench/python_dataset_compare.py --quick
run kept_batches build/venv/bin/python bench/kept_batches.py --quick
run remote_bench build/venv/bin/python bench/remote_bench.py --quick --build "$build"
run ray_fleet build/venv/bin/python bench/ray_fleet.py --quick --rounds 1
run node_locality build/venv/bin/python bench/node_locality.py --quick --build "$build"
run shard_syscalls build/venv/bin/python bench/shard_syscalls.py --images 256 --build "$build"

if ((${#failed[@]})); then
  echo "bench-smoke: FAILED: ${failed[*]}"
  exit 1
fi
echo "bench-smoke: every bench ran"

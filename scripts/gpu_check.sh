#!/usr/bin/env bash
# gpu_check.sh: on a machine with an NVIDIA GPU, build seedloader with CUDA in
# build/gpu, run the GPU-labelled tests (loader prefetch, ddp layers, NCCL), the
# loader and NCCL all-reduce benchmarks and seedloader-bench --device (synthetic
# data, then a generated JPEG folder with uint8 and float32 output), and write
# everything to $OUT/gpu_check.log (default: build/gpu_check_out/).
#
#   OUT=/some/dir scripts/gpu_check.sh          # whole project
#   GPU_CHECK_TARGETS="loader_gpu_test" scripts/gpu_check.sh   # only these
#   GPU_CHECK_BUILD=build/default GPU_CHECK_PREBUILT=1 scripts/gpu_check.sh
#       # binaries built before (with CUDA, for this GPU's architecture), e.g. on
#       # a machine that has the build dependencies: no configure, no build; each
#       # test folder's ctest runs on its own, so only the GPU ones need be there
#
# Exit status: 0 when every step passed, 1 when any failed (the log says which),
# 2 when there is no usable GPU or toolchain.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$ROOT/build/gpu_check_out}
BUILD=${GPU_CHECK_BUILD:-$ROOT/build/gpu}
[[ $BUILD == /* ]] || BUILD=$ROOT/$BUILD
JOBS=${JOBS:-$(nproc)}
mkdir -p "$OUT"
LOG=$OUT/gpu_check.log

failed=()
step() {  # step NAME COMMAND...: runs and records the outcome, never aborts
  local name=$1; shift
  echo; echo "=== $name: $*"
  local t0=$SECONDS
  if "$@"; then
    echo "=== $name: ok ($((SECONDS - t0)) s)"
  else
    echo "=== $name: FAILED (exit $?, $((SECONDS - t0)) s)"
    failed+=("$name")
  fi
}

# make_jpeg_folder DIR N: N 320x240 JPEGs in DIR (kept for the next run) with
# bench/pybench.py, through the first python that has PIL and numpy.
make_jpeg_folder() {
  local py
  for py in "$ROOT/build/venv/bin/python" /usr/bin/python3 python3; do
    if command -v "$py" >/dev/null && "$py" -c "import PIL, numpy" 2>/dev/null; then
      "$py" "$ROOT/bench/pybench.py" make_image_folder "$1" "$2" 320 240 && return 0
    fi
  done
  return 1
}

main() {
  echo "gpu_check on $(hostname) at $(date -u +%FT%TZ), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
  if ! command -v nvidia-smi >/dev/null || ! nvidia-smi; then
    echo "no NVIDIA GPU visible (nvidia-smi failed); nothing to check"; exit 2
  fi
  if [ -n "${GPU_CHECK_PREBUILT:-}" ]; then
    echo "=== prebuilt binaries in $BUILD: no configure, no build"
    local dir
    for dir in tests/loader tests/ddp; do
      step "gpu-tests-${dir#tests/}" ctest --test-dir "$BUILD/$dir" -L gpu --output-on-failure \
        --timeout 300
    done
  else
    build_and_test
  fi
  benches

  echo
  if [ ${#failed[@]} -eq 0 ]; then
    echo "gpu_check: all steps passed; log in $LOG"
    exit 0
  fi
  echo "gpu_check: FAILED steps: ${failed[*]}; log in $LOG"
  exit 1
}

# Configures and builds $BUILD, then runs its GPU-labelled tests.
build_and_test() {
  NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  if [ ! -x "$NVCC" ]; then echo "nvcc not found"; exit 2; fi
  ARCH=${CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)}
  step configure cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSEEDLOADER_WITH_CUDA=ON -DCMAKE_CUDA_COMPILER="$NVCC" \
    -DCMAKE_CUDA_ARCHITECTURES="${ARCH:-90}"
  if [ -n "${GPU_CHECK_TARGETS:-}" ]; then
    # shellcheck disable=SC2086
    step build cmake --build "$BUILD" -j"$JOBS" --target $GPU_CHECK_TARGETS \
      loader_overhead_bench loader_transport_bench
  else
    step build cmake --build "$BUILD" -j"$JOBS"
    if [[ " ${failed[*]} " == *" build "* ]]; then
      # Still check what can be built: the loader's GPU test and benches.
      step build-loader cmake --build "$BUILD" -j"$JOBS" --target loader_gpu_test \
        loader_overhead_bench loader_transport_bench
    fi
  fi
  step gpu-tests ctest --test-dir "$BUILD" -L gpu --output-on-failure --timeout 300
}

# The loader, NCCL and device-copy benchmarks, and the torch overhead comparison.
benches() {
  for bench in loader_overhead_bench loader_transport_bench; do
    if [ -x "$BUILD/bench/$bench" ]; then
      step "$bench" "$BUILD/bench/$bench" --benchmark_out="$OUT/$bench.json" \
        --benchmark_out_format=json
    else
      echo "=== $bench: not built"; failed+=("$bench")
    fi
  done
  if [ -x "$BUILD/bench/ddp_nccl_allreduce_bench" ]; then
    step nccl-allreduce mpirun --allow-run-as-root -np 1 \
      "$BUILD/bench/ddp_nccl_allreduce_bench" --benchmark_out="$OUT/nccl_allreduce.json" \
      --benchmark_out_format=json
  fi
  SL_BENCH=$BUILD/tools/seedloader_bench/seedloader-bench
  if [ -x "$SL_BENCH" ]; then
    # Batches copied into GPU memory from the registered shared slots, beside a
    # plain pinned cudaMemcpyAsync of the same size.
    step device-copy "$SL_BENCH" --data synthetic:4096 --transform rrc:224,normalize:imagenet \
      --batch-size 64 --workers 4 --batches 100 --warmup 10 --device
    step device-copy-json "$SL_BENCH" --data synthetic:4096 \
      --transform rrc:224,normalize:imagenet --batch-size 64 --workers 4 --batches 100 \
      --warmup 10 --device --json
    # The same from decoded JPEGs, uint8 and float32 out: the device GB/s of each
    # beside the plain pinned cudaMemcpyAsync rate seedloader-bench prints with it.
    local jpegs=$OUT/jpeg-folder data
    if make_jpeg_folder "$jpegs" 1024; then
      data=imagefolder:$jpegs
    else
      echo "=== device-jpeg: no JPEG folder (no python3 with PIL and numpy); synthetic data"
      data=synthetic:4096
    fi
    step device-jpeg-u8 "$SL_BENCH" --data "$data" --transform rrc:224,hflip,u8 \
      --batch-size 64 --workers 4 --batches 100 --warmup 10 --device
    step device-jpeg-float "$SL_BENCH" --data "$data" \
      --transform rrc:224,hflip,normalize:imagenet --batch-size 64 --workers 4 \
      --batches 100 --warmup 10 --device
  fi
  local py
  for py in /usr/bin/python3 python3 none; do
    if [ "$py" = none ]; then
      echo "=== torch-overhead: skipped (no python3 with torch)"
    elif command -v "$py" >/dev/null && "$py" -c "import torch" 2>/dev/null; then
      step torch-overhead "$py" "$ROOT/bench/torch_overhead.py"
      break
    fi
  done
}

main "$@" 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"

#!/usr/bin/env bash
# gpu_bundle.sh: runs scripts/gpu_check.sh on a GPU machine that has CUDA's
# driver, cuBLAS and NCCL (a PyTorch image, say) but not seedloader's build
# dependencies (Boost, OpenCV, OpenMPI, ...).
#
#   scripts/gpu_bundle.sh pack [BUILD] [FILE]
#       here, after a CUDA build (scripts/build.sh default builds with CUDA when
#       /usr/local/cuda has nvcc; sm_90 unless CMAKE_CUDA_ARCHITECTURES says
#       otherwise): FILE (default gpu_bundle.tar.xz) holds the GPU tests, the
#       benchmarks gpu_check runs, the shared libraries they load other than
#       glibc, libstdc++, the CUDA driver, cuBLAS and NCCL, and the OpenMPI
#       runtime (its programs, plugins and help files, under their own paths).
#   scripts/gpu_bundle.sh run FILE [SECONDS]
#       there, in a checkout of the same commit: unpacks FILE, installs the
#       OpenMPI files where they are missing, finds cuBLAS and NCCL, and runs
#       gpu_check on the prebuilt binaries (GPU_CHECK_PREBUILT) for at most
#       SECONDS (default 480); its log goes to $OUT (default build/gpu_check_out).
# The binaries keep the absolute paths of the checkout they were built in
# (ctest's files name them): `run` links that path to this checkout when it is
# free.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# The binaries gpu_check runs, relative to the build folder.
BINARIES=(tests/loader/loader_gpu_test tests/ddp/ddp_gpu_test
  bench/loader_overhead_bench bench/loader_transport_bench
  bench/ddp_nccl_allreduce_bench tools/seedloader_bench/seedloader-bench)
MPI_PATHS=(/usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2
  /usr/share/openmpi /usr/share/pmix /etc/openmpi /usr/bin/orterun /usr/bin/orted)
# Libraries the GPU machine's own system and CUDA provide.
SYSTEM_LIBS='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libgcc_s|libstdc\+\+|libcuda\.so|libnvidia|libcublas|libnccl)'

pack() {
  local build=${1:-build/default} file=${2:-gpu_bundle.tar.xz}
  [[ $build == /* ]] || build=$ROOT/$build
  local stage
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' RETURN
  local rel=${build#"$ROOT"/} b d p
  for b in "${BINARIES[@]}"; do
    [ -x "$build/$b" ] || { echo "gpu_bundle: $build/$b is not built (a CUDA build?)" >&2; exit 1; }
    mkdir -p "$stage/tree/$rel/$(dirname "$b")"
    strip --strip-debug -o "$stage/tree/$rel/$b" "$build/$b"
  done
  for d in tests/loader tests/ddp; do  # ctest's files, with the tests' paths
    find "$build/$d" -maxdepth 1 -name '*.cmake' -exec cp {} "$stage/tree/$rel/$d/" \;
  done
  mkdir -p "$stage/lib" "$stage/bin" "$stage/root"
  for p in "${MPI_PATHS[@]}"; do
    [ -e "$p" ] || continue
    mkdir -p "$stage/root$(dirname "$p")"
    cp -a "$p" "$stage/root$(dirname "$p")/"
  done
  ln -s /usr/bin/orterun "$stage/bin/mpirun"
  {
    for b in "${BINARIES[@]}"; do ldd "$build/$b"; done
    find "${MPI_PATHS[@]}" -type f \( -name '*.so*' -o -perm -u+x \) 2>/dev/null |
      xargs -r ldd 2>/dev/null || true  # not every executable file is an ELF one
  } | awk '/=> \// {print $1, $3}' | sort -u | while read -r name path; do
    [[ $name =~ $SYSTEM_LIBS ]] && continue
    [ -e "$stage/lib/$name" ] || cp -L "$path" "$stage/lib/$name"
  done
  echo "$ROOT" >"$stage/built_in"
  echo "$rel" >"$stage/build_dir"
  tar -C "$stage" -cf - . | xz -T2 -6 >"$file"
  echo "gpu_bundle: $file ($(du -h "$file" | cut -f1)), built in $ROOT"
}

run() {
  local file=$1 seconds=${2:-480}
  local unpacked=$ROOT/build/gpu_bundle
  rm -rf "$unpacked" && mkdir -p "$unpacked"
  tar -C "$unpacked" -xJf "$file"
  local built_in rel
  built_in=$(cat "$unpacked/built_in")
  rel=$(cat "$unpacked/build_dir")
  if [ "$built_in" != "$ROOT" ]; then
    if [ -e "$built_in" ]; then
      echo "gpu_bundle: $built_in exists and is not this checkout; ctest cannot find the tests" >&2
      exit 2
    fi
    mkdir -p "$(dirname "$built_in")" && ln -s "$ROOT" "$built_in"
  fi
  cp -an "$unpacked/root/." /
  cp -a "$unpacked/tree/." "$ROOT/"
  local cuda_libs
  cuda_libs=$(find /opt /usr/local /usr/lib \( -name 'libcublasLt.so.13*' -o -name 'libnccl.so.2*' \) \
    2>/dev/null | xargs -r -n1 dirname | awk '!seen[$0]++' | paste -sd:)
  echo "gpu_bundle: cuBLAS and NCCL from ${cuda_libs:-nowhere}"
  export LD_LIBRARY_PATH=$unpacked/lib${cuda_libs:+:$cuda_libs}
  export PATH=$unpacked/bin:$PATH
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  local b missing=0
  for b in "${BINARIES[@]}"; do
    if ldd "$ROOT/$rel/$b" 2>/dev/null | grep 'not found'; then missing=1; fi
  done
  ((missing == 0)) || echo "gpu_bundle: libraries above are missing; their steps will fail"
  GPU_CHECK_PREBUILT=1 GPU_CHECK_BUILD=$rel timeout "$seconds" bash "$ROOT/scripts/gpu_check.sh"
}

case ${1:-} in
  pack) shift; pack "$@" ;;
  run) shift; [ $# -ge 1 ] || { echo "usage: gpu_bundle.sh run FILE [SECONDS]" >&2; exit 2; }; run "$@" ;;
  *) echo "usage: gpu_bundle.sh pack [BUILD] [FILE] | run FILE [SECONDS]" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# The README's first command: builds seedloader, writes a small deterministic
# ImageFolder of JPEGs, trains a small CNN on it data-parallel with 2 ranks
# (mpirun; NCCL when GPUs are present, MPI on CPUs), 2 loader workers per rank,
# random crops and flips, 2 epochs, saves a checkpoint, and audits the same
# pipeline's random streams with seed-audit (it must report "clean"). Then the
# same from Python: torch DDP fed by seedloader.DataLoader
# (examples/python/train_ddp.py, 2 ranks), with the package from the same build.
# A few minutes on 2 cores, most of it compiling.
# SEEDLOADER_DEMO_BUILD=DIR runs it on a build of the default preset instead (its
# programs, and the package that `pip install .` put in build/venv), building
# nothing: CI runs the demo after the test suite made both.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --demo-build
export PATH="$PATH:/usr/local/cuda/bin"
mkdir -p build
# torch, numpy and Pillow (the Python part's) install while the engine builds.
bash scripts/setup.sh --demo-python >build/setup-python.log 2>&1 &
python_setup=$!

build=${SEEDLOADER_DEMO_BUILD:-build/demo}
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [[ -z ${SEEDLOADER_DEMO_BUILD:-} ]]; then
  echo "== Python tools (scripts/python_env.sh --tools-only -> build/venv)"
  bash scripts/python_env.sh --tools-only
  cuda=OFF  # CUDA code is compiled only where a GPU will run it
  if [[ "${gpus:-0}" -gt 0 ]]; then cuda=ON; fi
  echo "== build (preset demo: ddp-train, seed-audit, the image writer, the Python package)"
  # One build makes the engine for the programs and for the Python package, which
  # lands whole in $build/python (PYTHONPATH below); `pip install .` is the way to
  # install it for good. The same -O2 as the default preset, without debug info.
  cmake --preset demo -DSEEDLOADER_WITH_CUDA=$cuda \
    -DPython_EXECUTABLE="$PWD/build/venv/bin/python" >/dev/null
  cmake --build --preset demo
fi

data=$build/images
echo "== data: 1024 JPEGs, 4 classes, 48x48 (deterministic) under $data"
rm -rf "$data"
$build/examples/ddp_make_images "$data" 1024 4 48

backend=mpi
if [[ "${gpus:-0}" -gt 0 ]]; then backend=nccl; fi
seed=1234
pipeline=(--data "imagefolder:$data" --transform rrc:32,hflip --batch-size 32 --workers 2
          --seed "$seed")
echo "== train: mpirun -np 2 ddp-train, backend $backend"
mpirun --allow-run-as-root --oversubscribe -np 2 $build/tools/ddp-train "${pipeline[@]}" \
  --model cnn:small:4 --epochs 2 --lr 0.05 --momentum 0.9 --backend "$backend" \
  --save $build/checkpoint.safetensors --log-json $build/log.jsonl
echo "checkpoint: $build/checkpoint.safetensors ($(stat -c %s $build/checkpoint.safetensors) bytes)"

echo "== seed-audit run on the same configuration (2 ranks x 2 workers x 2 epochs)"
$build/tools/seed-audit run "${pipeline[@]}" --epochs 2 --world-size 2 --shuffle

echo
echo "== reproduce any worker's stream in Python: seed-audit derive"
$build/tools/seed-audit derive --seed "$seed" --purpose worker --epoch 0 --rank 1 --worker 1 --count 3

echo
if ! wait $python_setup; then
  cat build/setup-python.log >&2
  exit 1
fi
echo "== Python: torch DDP, 2 ranks (torch.multiprocessing.spawn), 2 workers each"
rm -rf $build/py_images $build/train_ddp.pt
PYTHONPATH=$build/python build/venv/bin/python examples/python/train_ddp.py --spawn 2 --make-data 256 \
  --data $build/py_images --epochs 2 --checkpoint $build/train_ddp.pt
echo "checkpoint: $build/train_ddp.pt (model, optimizer, loader state)"

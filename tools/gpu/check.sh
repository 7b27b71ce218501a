#!/usr/bin/env bash
# The device check, on a machine with an NVIDIA GPU, CUDA 13 libraries in Python's nvidia-* packages, no network
# and no Node (tools/gpu/README.md). Run from the repository root (its test-fixtures/ are used).
#
#   tools/gpu/check.sh add-part FILE.. keep one part of tools/gpu/pack.sh's output in $VLMKIT_GPU_DIR/parts
#                                      (one per transfer) and say what is there
#   tools/gpu/check.sh run [PARTS_DIR] reassemble and verify the parts (default: $VLMKIT_GPU_DIR/parts), unpack,
#                                      run the fixture cases on CUDA and on CPU, print the table, then the medium
#                                      benchmark against PyTorch on the same GPU (bench.mjs), nvidia-smi
#   tools/gpu/check.sh bench           only the medium benchmark, from the stage `run` unpacked
#   tools/gpu/check.sh env             only show the GPU and the CUDA libraries the loader will find
#
# Logs and the JSON results go to $OUT when set (the device tool's folder that comes back), else $VLMKIT_GPU_DIR.
set -uo pipefail
dir=${VLMKIT_GPU_DIR:-/tmp/vlmkit-gpu}
out=${OUT:-$dir}
device=${VLMKIT_GPU_DEVICE:-cuda} # cpu: the dry run of the whole path on a machine without a GPU
mkdir -p "$dir/parts" "$out"

cuda_env() {
  # The CUDA 13 runtime, cuBLAS, cuRAND and cuDNN from pip's nvidia-* packages, and the driver's folder.
  local libs
  libs=$(python3 -c 'import nvidia, glob, os; print(":".join(sorted({os.path.dirname(p) for d in nvidia.__path__ for p in glob.glob(d + "/**/lib*.so*", recursive=True)})))' 2>/dev/null)
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do [ -d "$d" ] && libs=$libs:$d; done
  export LD_LIBRARY_PATH=${libs#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

show_env() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv 2>&1
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libcurand.so.10 libcudnn.so.9 libcuda.so.1; do
    found=$(for d in ${LD_LIBRARY_PATH//:/ }; do [ -e "$d/$lib" ] && echo "$d/$lib" && break; done)
    [ -z "$found" ] && found=$(ldconfig -p 2>/dev/null | awk -v l="$lib" '$1 == l { print $NF; exit }')
    echo "  $lib: ${found:-NOT FOUND}"
  done
}

run_bench() {
  # The medium ERNIE against PyTorch eager on the same device (tools/gpu/bench.mjs): the checkpoint is made here
  # by torch_side.py (python3 must hold torch and transformers 5.17), graphs built into $dir.
  local stage=$1
  echo "== medium benchmark on $device (vlmkit host loop / graph loop / compute dtypes vs PyTorch eager)"
  (cd "$stage" && timeout "${VLMKIT_GPU_BENCH_TIMEOUT:-420}" bin/node tools/gpu/bench.mjs --device "$device" \
    --dir "$dir/ernie-medium" --out "$out/gpu-bench.json" ${VLMKIT_GPU_BENCH_ARGS:-})
  echo "bench exit $?"
}

case "${1:-}" in
  add-part)
    shift
    [ $# -gt 0 ] || { echo "usage: check.sh add-part FILE..."; exit 2; }
    cp "$@" "$dir/parts/" || exit 1
    ls -la "$dir/parts"
    ;;
  env)
    cuda_env
    show_env
    ;;
  run)
    parts=${2:-$dir/parts}
    cuda_env
    {
      echo "== $(date -u +%FT%TZ) $(hostname)"
      show_env
      echo "== reassembling $(ls "$parts"/stage.tar.xz.part-* | wc -l) parts"
      cat "$parts"/stage.tar.xz.part-* > "$dir/stage.tar.xz" || exit 1
      (cd "$dir" && sha256sum -c "$parts/stage.tar.xz.sha256") || exit 1
      rm -rf "$dir/stage" && mkdir -p "$dir/stage"
      if command -v xz > /dev/null; then
        xz -dc "$dir/stage.tar.xz" | tar x -C "$dir/stage" || exit 1
      else
        python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$dir/stage.tar.xz" |
          tar x -C "$dir/stage" || exit 1
      fi
      rm -f "$dir/stage.tar.xz"
      stage=$dir/stage
      echo "== stage: $(cat "$stage/STAGE_INFO"), node $("$stage/bin/node" --version)"
      ep=$stage/node_modules/.pnpm/onnxruntime-node@1.29.0/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime_providers_cuda.so
      echo "== ldd $(basename "$ep") (missing ones):"
      ldd "$ep" | grep -i 'not found' || echo "  none"
      check="$stage/bin/node $stage/tools/gpu/fixture-check.mjs --device $device --fixtures $PWD/test-fixtures"
      echo "== fixture cases, $device vs cpu, float32/float16/bfloat16, loop graph vs host (ORT's CUDA EP default: TF32 allowed in float32 matmul/conv)"
      timeout 420 $check --out "$out/fixture-check.json"
      echo "fixture-check exit $?"
      # onnxruntime-node cannot set the EP's use_tf32 option; cuBLAS and cuDNN honour this variable instead (float32 only).
      echo "== fixture cases, $device vs cpu, NVIDIA_TF32_OVERRIDE=0 (strict float32)"
      NVIDIA_TF32_OVERRIDE=0 timeout 200 $check --no-placement --dtype float32 --out "$out/fixture-check-no-tf32.json"
      echo "fixture-check exit $?"
      run_bench "$stage"
      echo "== nvidia-smi"
      nvidia-smi || echo "(no nvidia-smi: a dry run without a GPU)"
    } 2>&1 | tee "$out/check.log"
    ;;
  bench)
    cuda_env
    run_bench "$dir/stage" 2>&1 | tee "$out/bench.log"
    ;;
  *)
    sed -n 2,13p "$0"
    exit 2
    ;;
esac

#!/usr/bin/env bash
# Writes `vlmkit forward` and `vlmkit generate` outputs for every fixture case into OUT_DIR,
# so a refactor can be checked to change no number: run before and after, then
# `node tools/dev/compare-outputs.mjs BEFORE AFTER` (exact equality).
# Needs `pnpm build` first. Usage: tools/dev/cli-outputs.sh OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: cli-outputs.sh OUT_DIR}
mkdir -p "$out"
cache=$(mktemp -d)
for model in ernie-tiny granite-tiny; do
  for c in test-fixtures/$model/cases/*/; do
    name=$(basename "$c")
    dir=test-fixtures/$model; extra=()
    [ "$name" = lora ] && extra=(--adapter test-fixtures/granite-tiny-lora)
    [ -f "$c/model/config.json" ] && dir=$c/model
    [ "$name" = bf16 ] || [ "$name" = bf16-fp32-compute ] && dir=test-fixtures/ernie-tiny-bf16
    node packages/cli/dist/bin.js forward --model "$dir" --inputs "$c/inputs.safetensors" \
      --out "$out/$model-$name-forward.safetensors" --device cpu --cache-dir "$cache" "${extra[@]}" > /dev/null
    node packages/cli/dist/bin.js generate --model "$dir" --inputs "$c/inputs.safetensors" --max-new-tokens 8 \
      --out "$out/$model-$name-generate.safetensors" --device cpu --cache-dir "$cache" "${extra[@]}" > /dev/null
    echo "$model/$name"
  done
done
rm -rf "$cache"

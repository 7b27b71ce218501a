#!/usr/bin/env bash
# Packs what tools/gpu/check.sh needs on a GPU machine without network or Node into .gpu-parts/:
# Node itself, the committed tree (HEAD, built here: other people's uncommitted edits stay out) with its dist/
# folders and the node_modules it needs at run time, onnxruntime-node's linux/x64 binding with the CUDA EP
# installed by tools/gpu/install-cuda-ep.mjs, tools/gpu and the two sides of the bench (tools/bench). One .tar.xz, split into parts small enough to travel
# with the working tree in one transfer each (PART_MIB, default 40), plus its sha256.
# usage: [REF=commit] [OVERLAY="path..."] tools/gpu/pack.sh [CUDA_EP_TGZ]
#   CUDA_EP_TGZ: the npm pack of com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9 (fetched with npm when not given)
#   REF: the commit to build (default HEAD; pick one that builds when others' commits are half-way)
#   OVERLAY: paths taken from HEAD over REF before building (e.g. a fix the check needs); tools/gpu always comes
#            from the working tree. STAGE_INFO in the stage records all three.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
ep_tgz=${1:-}
part_mib=${PART_MIB:-40}
work=$(mktemp -d /tmp/vlmkit-gpu-pack.XXXXXX)
trap 'rm -rf "$work"' EXIT
build=$work/build
stage=$work/stage
mkdir -p "$build" "$stage/bin"

commit=$(git -C "$repo" rev-parse "${REF:-HEAD}")
echo "building $commit in $build"
git -C "$repo" archive "$commit" | tar x -C "$build"
for p in ${OVERLAY:-}; do git -C "$repo" show "HEAD:$p" > "$build/$p"; done
ln -s "$repo/node_modules" "$build/node_modules"
for d in "$repo"/packages/*/node_modules; do
  p=$(basename "$(dirname "$d")")
  [ -d "$build/packages/$p" ] && cp -a "$d" "$build/packages/$p/"
done
(cd "$build" && npx turbo run build --filter=@vlmkit/cli... --output-logs=errors-only)

echo "staging"
cp "$(command -v node)" "$stage/bin/node"
echo "$commit" > "$stage/COMMIT"
echo "commit $commit${OVERLAY:+ + from $(git -C "$repo" rev-parse --short HEAD): $OVERLAY}; tools/gpu from the working tree" > "$stage/STAGE_INFO"
node --version > "$stage/NODE_VERSION"
cp "$build/package.json" "$stage/"
mkdir -p "$stage/tools"
cp -a "$repo/tools/gpu" "$stage/tools/"
# The GPU bench (tools/gpu/bench.mjs) runs the two sides of `pnpm bench`; the checkpoint maker needs make_fixtures.py.
mkdir -p "$stage/tools/bench" "$stage/tools/fixtures"
cp "$repo/tools/bench/torch_side.py" "$repo/tools/bench/vlmkit_side.mjs" "$stage/tools/bench/"
cp "$repo/tools/fixtures/make_fixtures.py" "$stage/tools/fixtures/"
for p in "$build"/packages/*/; do
  name=$(basename "$p")
  [ -d "$p/dist" ] || continue
  mkdir -p "$stage/packages/$name"
  cp -a "$p/package.json" "$p/dist" "$stage/packages/$name/"
  [ -d "$p/node_modules" ] && cp -a "$p/node_modules" "$stage/packages/$name/"
done
mkdir -p "$stage/node_modules/.pnpm"
node "$repo/tools/gpu/deps.mjs" "$build" "$build"/packages/*/ > "$work/deps.txt"
while read -r entry; do
  # Copy the entry with its symlinks as they are (relative, inside .pnpm); onnxruntime-node without the
  # binaries of other platforms (230 MB of darwin/win32/arm64).
  (cd "$repo" && tar c --exclude='*/bin/napi-v6/darwin' --exclude='*/bin/napi-v6/win32' --exclude='*/bin/napi-v6/linux/arm64' "$entry") |
    tar x -C "$stage"
done < "$work/deps.txt"
ort_bin=$stage/node_modules/.pnpm/onnxruntime-node@1.29.0/node_modules/onnxruntime-node/bin/napi-v6/linux/x64
node "$repo/tools/gpu/install-cuda-ep.mjs" --dest "$ort_bin" ${ep_tgz:+--from "$ep_tgz"}

echo "checking the stage runs (CPU, here)"
(cd "$stage" && bin/node -e "import('./packages/models/dist/index.js').then((m) => console.log('models exports', Object.keys(m).length))")
du -sh "$stage"

out=$repo/.gpu-parts
rm -rf "$out"
mkdir -p "$out"
echo "compressing (xz -6, $(nproc) threads)"
tar c -C "$stage" bin COMMIT STAGE_INFO NODE_VERSION package.json tools packages node_modules | xz -6 -T"$(nproc)" > "$work/stage.tar.xz"
(cd "$work" && sha256sum stage.tar.xz) > "$out/stage.tar.xz.sha256"
split -b "${part_mib}M" -d -a 2 "$work/stage.tar.xz" "$out/stage.tar.xz.part-"
echo "$commit" > "$out/COMMIT"
ls -la "$out"

#!/usr/bin/env bash
# Counts import cycles in each package's sources with madge (fetched by npx; not a project dependency).
# Two counts: runtime imports only (type-only imports skipped, as TypeScript erases them), and all imports.
# Usage: tools/dev/import-cycles.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$(pwd)
# madge reads its options from .madgerc in the folder it runs in.
mkdir -p "$tmp/runtime" "$tmp/all"
echo '{"detectiveOptions":{"ts":{"skipTypeImports":true}}}' > "$tmp/runtime/.madgerc"
echo '{}' > "$tmp/all/.madgerc"
for kind in runtime all; do
  total=0
  for p in packages/*/; do
    # Only the package's own sources: other packages are reached through their dist/ and not followed.
    n=$(cd "$tmp/$kind" && npx --yes madge@8 --circular --extensions ts --ts-config "$root/$p/tsconfig.json" \
      --exclude '(dist|node_modules)/' "$root/$p/src" 2>/dev/null \
      | grep -cE '^[0-9]+\)' || true)
    [ "$n" -gt 0 ] && echo "  $kind: $p $n"
    total=$((total + n))
  done
  echo "$kind import cycles: $total"
done

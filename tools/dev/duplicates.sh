#!/usr/bin/env bash
# Counts duplicated source passages (six or more shared lines) in the packages' sources,
# tests excluded (*.test.ts and test-utils/), with the `duplicates` command of the
# development machines (not a project dependency). Usage: tools/dev/duplicates.sh [--most N]
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git ls-files --cached --others --exclude-standard 'packages/*/src/*' \
  | grep -E '\.ts$' | grep -v '\.test\.ts$' | grep -v '/test-utils/' \
  | while read -r f; do [ -f "$f" ] && mkdir -p "$tmp/$(dirname "$f")" && cp "$f" "$tmp/$f"; done
duplicates --repo "$tmp" --seconds 60 "$@"

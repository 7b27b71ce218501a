#!/usr/bin/env bash
# Scaffold a workspace package: tools/new-package.sh <dir> "<description>" [dep ...]
set -euo pipefail
dir=$1; desc=$2; shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
p="$root/packages/$dir"
mkdir -p "$p/src"
deps=""
for d in "$@"; do deps="$deps\"@vlmkit/$d\": \"workspace:*\","; done
deps=${deps%,}
cat > "$p/package.json" <<JSON
{
  "name": "@vlmkit/$dir",
  "version": "0.0.0",
  "description": "$desc",
  "license": "Apache-2.0",
  "type": "module",
  "exports": {
    ".": {
      "@vlmkit/source": "./src/index.ts",
      "types": "./dist/index.d.ts",
      "import": "./dist/index.js"
    }
  },
  "main": "./dist/index.js",
  "types": "./dist/index.d.ts",
  "files": ["dist", "src/**/*.ts", "!src/**/*.test.ts", "!src/**/test-utils/**"],
  "sideEffects": false,
  "publishConfig": { "access": "public" },
  "engines": { "node": ">=20.19" },
  "scripts": {
    "build": "tsc -p tsconfig.build.json",
    "typecheck": "tsc -p tsconfig.json --noEmit",
    "lint": "tsc -p tsconfig.json --noEmit --noUnusedLocals --noUnusedParameters",
    "test": "vitest run"
  },
  "dependencies": { $deps }
}
JSON
cat > "$p/tsconfig.json" <<JSON
{
  "extends": "../../tsconfig.base.json",
  "compilerOptions": { "customConditions": ["@vlmkit/source"], "noEmit": true },
  "include": ["src", "vitest.config.ts"]
}
JSON
cat > "$p/tsconfig.build.json" <<JSON
{
  "extends": "../../tsconfig.base.json",
  "compilerOptions": { "rootDir": "src", "outDir": "dist" },
  "include": ["src"],
  "exclude": ["src/**/*.test.ts", "src/**/test-utils/**"]
}
JSON
cat > "$p/vitest.config.ts" <<TS
import { defineConfig } from 'vitest/config';
import { sharedTestConfig } from '../../vitest.shared.js';

export default defineConfig(sharedTestConfig);
TS
[ -f "$p/src/index.ts" ] || echo "export {};" > "$p/src/index.ts"

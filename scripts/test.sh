#!/usr/bin/env bash
# npm test: set-up as needed, build the package, then every test layer.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/setup.sh
node scripts/build.mjs

printf '\n== 1/4 the pure core, natively\n'
cargo test

printf '\n== 2/4 the IndexedDB backend in headless Chromium (wasm-bindgen-test)\n'
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
  cargo test --target wasm32-unknown-unknown --test indexeddb

printf '\n== 3/4 TypeScript declarations (tsc --strict)\n'
npx tsc -p tests/types/tsconfig.decls.json
npx tsc -p tests/types/tsconfig.json
echo "declarations compile; IndexedDbSession and MemorySession are @openai/agents Sessions"

printf '\n== 4/4 the built package in headless Chromium (playwright-core)\n'
node --test tests/browser/*.test.mjs

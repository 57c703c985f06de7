#!/usr/bin/env bash
# npm run bench: set-up as needed, build the package, then the benchmark in headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/setup.sh
node scripts/build.mjs
node bench/run.mjs "$@"

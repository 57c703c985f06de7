#!/usr/bin/env bash
# npm run build: set-up as needed, then the package into pkg/.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/setup.sh
node scripts/build.mjs

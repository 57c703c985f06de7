#!/usr/bin/env bash
# npm run demo: set-up as needed, build the package, copy it next to the demo page, serve www/.
# PORT (default 8080) and HOST (default 127.0.0.1) choose where.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/setup.sh
node scripts/build.mjs
node www/build.mjs
exec node scripts/serve.mjs www "${PORT:-8080}"

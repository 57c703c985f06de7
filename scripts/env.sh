# Sourced by the other scripts: tools installed by cargo are on PATH even in a fresh shell.
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export CHROMIUM_PATH="${CHROMIUM_PATH:-/usr/bin/chromium}"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"

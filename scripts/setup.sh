#!/usr/bin/env bash
# Installs what building and testing need, skipping whatever is already there:
# the wasm32 Rust target, the wasm-bindgen CLI at the version Cargo.toml pins, Chromium and
# ChromeDriver (Debian packages), and the npm dependencies from package-lock.json.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

step() { printf '\n== setup: %s\n' "$*"; }

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  step "adding the wasm32-unknown-unknown Rust target"
  rustup target add wasm32-unknown-unknown
fi

wb_version=$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)"/\1/p' Cargo.toml)
if [ -z "$wb_version" ]; then
  echo "setup: Cargo.toml must pin wasm-bindgen exactly (wasm-bindgen = \"=X.Y.Z\")" >&2
  exit 1
fi
if [ "$(wasm-bindgen --version 2>/dev/null || true)" != "wasm-bindgen $wb_version" ]; then
  step "installing wasm-bindgen-cli $wb_version (a few minutes, once)"
  cargo install wasm-bindgen-cli --version "$wb_version"
fi

if [ ! -x "$CHROMIUM_PATH" ] || [ ! -x "$CHROMEDRIVER" ]; then
  step "installing Chromium and ChromeDriver"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update
  $sudo apt-get install -y --no-install-recommends chromium chromium-driver
fi

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  step "installing npm dependencies"
  npm ci --no-audit --no-fund
fi

#!/usr/bin/env bash
# The whole test suite: Rust unit and integration tests, the Zulip client compatibility suite
# (in a Python venv it creates), and a quick benchmark smoke run. Works on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo test"
cargo test --all-targets

echo "== Python client compatibility (official zulip package)"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check -r tests/compat/requirements.txt
CHRONICLE_BIN="$PWD/target/debug/chronicle" .venv/bin/python -m pytest -q tests/compat

echo "== benchmark smoke run (asserts nothing about speed)"
cargo run --release --quiet -- bench --quick --out target/bench-quick

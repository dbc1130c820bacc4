#!/usr/bin/env bash
# The whole test suite: Rust unit and integration tests, the Zulip client compatibility suite
# (in a Python venv it creates), and a quick benchmark smoke run. Works on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

echo "== cargo test"
cargo test --all-targets 2>&1 | tee "$logs/cargo.log"

echo "== Python client compatibility (official zulip package)"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check -r tests/compat/requirements.txt
CHRONICLE_BIN="$PWD/target/debug/chronicle" .venv/bin/python -m pytest -q tests/compat 2>&1 \
    | tee "$logs/pytest.log"

echo "== benchmark smoke run (asserts nothing about speed)"
cargo run --release --quiet -- bench --quick --out target/bench-quick

# One closing line for the whole suite (every step above already stopped the script on failure).
rust=$(grep -oE '^test result: ok\. [0-9]+ passed' "$logs/cargo.log" | awk '{s += $4} END {print s + 0}')
python=$(grep -oE '[0-9]+ passed' "$logs/pytest.log" | tail -1 | awk '{print $1 + 0}')
echo "suite: $((rust + python)) passed, 0 failed"

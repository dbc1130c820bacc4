#!/usr/bin/env bash
# Usage: scripts/fuzz.sh [SECONDS] [--dev]
# Runs each cargo-fuzz target (fuzz/fuzz_targets) for SECONDS seconds (default 10) on the stable
# toolchain (`--sanitizer none`: libFuzzer's coverage guidance without a sanitizer, which would
# need nightly), and prints how many inputs each tried. Installs cargo-fuzz when it is missing.
# A crash leaves its input in fuzz/artifacts/TARGET/ and fails the script. `--dev` builds
# unoptimized (half the build time, for the test suite's smoke run).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
profile=${2:---release}
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install --quiet --locked cargo-fuzz
fi
total=0
for target in params narrow markdown log_record upload_names avatar_image; do
    log=$(mktemp)
    cargo fuzz run --sanitizer none "$profile" "$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=1024 2>"$log" || {
        tail -40 "$log"
        exit 1
    }
    runs=$(grep -oE 'Done [0-9]+ runs' "$log" | awk '{print $2}' | tail -1)
    echo "fuzz $target: ${runs:-0} inputs in ${seconds} s, no crash"
    total=$((total + ${runs:-0}))
    rm -f "$log"
done
echo "fuzz: $total inputs in all, no crash"

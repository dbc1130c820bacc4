#!/usr/bin/env bash
# A local cluster on loopback, for trying the cluster mode and for its tests:
#
#   scripts/cluster.sh start [DIR] [BASE_PORT]   three NATS servers (JetStream, synced writes),
#                                                the log's stream, and three Chronicle nodes
#   scripts/cluster.sh nats [DIR] [BASE_PORT]    the NATS servers and the stream only
#   scripts/cluster.sh stop [DIR]                stops what start (or nats) started
#
# nats-server comes from PyPI into the project's venv (.venv). NATS clients listen on
# BASE_PORT..BASE_PORT+2 (default 4222), routes on BASE_PORT+100.., and the Chronicle nodes on
# CHRONICLE_PORT..CHRONICLE_PORT+2 (default 9991). CHRONICLE_BIN picks the binary (default: a
# release build).
# NATS_MAX_PAYLOAD sets the servers' largest message (default 1 MiB, NATS's own).
set -euo pipefail
cd "$(dirname "$0")/.."
action=${1:-start}
dir=$(realpath -m "${2:-./cluster}")
base=${3:-4222}
urls="nats://127.0.0.1:$base,nats://127.0.0.1:$((base + 1)),nats://127.0.0.1:$((base + 2))"

stop() {
    if [ -f "$dir/pids" ]; then
        # The Chronicle nodes (started last) first, while NATS can still take their lease
        # back; then wait for everything to exit, so that the ports are free again.
        pids=$(tac "$dir/pids")
        for pid in $pids; do
            kill "$pid" 2>/dev/null || true
            # At most 10 s each (a process another program started, and has not reaped, stays
            # visible after it exits).
            for _ in $(seq 1 100); do
                kill -0 "$pid" 2>/dev/null || break
                grep -qs '^State:.*Z' "/proc/$pid/status" && break
                sleep 0.1
            done
        done
        rm -f "$dir/pids"
    fi
}

case "$action" in
stop)
    stop
    exit 0
    ;;
start | nats) ;;
*)
    echo "usage: $0 start|nats|stop [DIR] [BASE_PORT]" >&2
    exit 2
    ;;
esac

if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
if [ ! -x .venv/bin/nats-server ]; then
    .venv/bin/pip install --quiet --disable-pip-version-check --require-hashes \
        -r tests/cluster/requirements.txt
fi
bin=${CHRONICLE_BIN:-}
if [ -z "$bin" ]; then
    cargo build --release --quiet
    bin=target/release/chronicle
fi

mkdir -p "$dir"
stop
routes=""
for i in 0 1 2; do
    routes="$routes nats-route://127.0.0.1:$((base + 100 + i))"
done
for i in 0 1 2; do
    name="n$((i + 1))"
    mkdir -p "$dir/$name"
    cat > "$dir/$name.conf" <<CONF
server_name: $name
listen: 127.0.0.1:$((base + i))
max_payload: ${NATS_MAX_PAYLOAD:-1048576}
jetstream {
    store_dir: "$dir/$name"
    # Every write is synced before it is acknowledged (the default syncs every two minutes).
    sync_interval: always
}
cluster {
    name: chronicle
    listen: 127.0.0.1:$((base + 100 + i))
    routes: [$(echo $routes | sed 's/ /, /g')]
}
CONF
    .venv/bin/nats-server -c "$dir/$name.conf" > "$dir/$name.log" 2>&1 &
    echo $! >> "$dir/pids"
done

# The stream can be made once the servers have elected a JetStream leader.
for attempt in $(seq 1 60); do
    if "$bin" cluster init --cluster "$urls" > "$dir/init.log" 2>&1; then
        break
    fi
    if [ "$attempt" = 60 ]; then
        cat "$dir/init.log" >&2
        stop
        exit 1
    fi
    sleep 0.5
done
cat "$dir/init.log"
if [ "$action" = nats ]; then
    echo "NATS: $urls"
    exit 0
fi

port=${CHRONICLE_PORT:-9991}
# Starts node N (1-3) on port+N-1 and waits until it answers.
node() {
    local n=$1 p=$((port + $1 - 1))
    "$bin" serve --cluster "$urls" --data-dir "$dir/node$n" --bind "127.0.0.1:$p" \
        > "$dir/node$n.log" 2>&1 &
    echo $! >> "$dir/pids"
    for attempt in $(seq 1 100); do
        if curl -fs "http://127.0.0.1:$p/api/v1/server_settings" > /dev/null; then
            echo "Chronicle node $n: http://127.0.0.1:$p"
            return 0
        fi
        sleep 0.2
    done
    cat "$dir/node$n.log" >&2
    stop
    exit 1
}
# The first node creates the organization; the others share its secret (API keys derive
# from it).
mkdir -p "$dir/node1"
node 1
for n in 2 3; do
    mkdir -p "$dir/node$n"
    chmod 700 "$dir/node$n"
    cp "$dir/node1/secret.key" "$dir/node$n/secret.key"
    node "$n"
done
echo "NATS: $urls"
echo "credentials: $dir/node1/zuliprc (any node answers any request)"
echo "stop with: $0 stop $dir"

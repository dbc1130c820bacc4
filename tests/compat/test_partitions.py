"""Network partitions in a cluster. Three NATS servers and three Chronicle nodes each run in a
network namespace of their own that the test makes, on a private bridge in one more namespace
(the test's own requests go out from there); nothing touches the host's network. A partition
is a pair of blackhole routes between two addresses, so the test can cut one Chronicle node off
from every NATS server, or the stream's leader off from the other two servers while the
Chronicle nodes still reach all three, and then heal.

What must hold: nothing acknowledged is lost; a node that cannot reach the stream refuses writes
with a clear error, still answers reads, and says `stale` in `/ready`; after healing every node
converges on the same state, which is a replay of the stream, and the hash chain verifies."""

import contextlib
import ctypes
import json
import os
import pathlib
import secrets
import subprocess
import threading
import time

import pytest
import requests

from conftest import ROOT, chronicle_binary

BIN = chronicle_binary()
NATS = ROOT / ".venv" / "bin" / "nats-server"
SUBNET = "10.77.0"
CLONE_NEWNET = 0x40000000

def ip(*args):
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, f"ip {' '.join(args)}: {done.stderr}"


class Network:
    """Namespaces on one bridge; members by name, each with one address."""

    def __init__(self):
        self.tag = secrets.token_hex(3)
        self.hub = f"chp{self.tag}-hub"
        self.members = {}
        self.cuts = set()
        ip("netns", "add", self.hub)
        ip("-n", self.hub, "link", "set", "lo", "up")
        ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        ip("-n", self.hub, "addr", "add", f"{SUBNET}.1/24", "dev", "br0")
        ip("-n", self.hub, "link", "set", "br0", "up")

    def add(self, name, host):
        namespace = f"chp{self.tag}-{name}"
        ip("netns", "add", namespace)
        ip("link", "add", "v0", "netns", namespace, "type", "veth", "peer", "name", f"b{name}",
           "netns", self.hub)
        ip("-n", namespace, "addr", "add", f"{SUBNET}.{host}/24", "dev", "v0")
        ip("-n", namespace, "link", "set", "v0", "up")
        ip("-n", namespace, "link", "set", "lo", "up")
        ip("-n", self.hub, "link", "set", f"b{name}", "master", "br0", "up")
        self.members[name] = (namespace, f"{SUBNET}.{host}")
        return self.members[name][1]

    def address(self, name):
        return self.members[name][1]

    def start(self, name, argv, log):
        """Runs `argv` inside member `name`'s namespace."""
        return subprocess.Popen(["ip", "netns", "exec", self.members[name][0], *argv],
                                stdout=log, stderr=subprocess.STDOUT)

    def cut(self, side, other):
        """No packet between any member of `side` and any of `other`, either way."""
        for a in side:
            for b in other:
                for here, there in ((a, b), (b, a)):
                    ip("-n", self.members[here][0], "route", "add", "blackhole",
                       f"{self.address(there)}/32")
                    self.cuts.add((here, there))

    def heal(self):
        for here, there in sorted(self.cuts):
            ip("-n", self.members[here][0], "route", "del", "blackhole",
               f"{self.address(there)}/32")
        self.cuts.clear()

    @contextlib.contextmanager
    def joined(self):
        """This thread's sockets (and the processes it starts) in the hub's namespace."""
        libc = ctypes.CDLL(None, use_errno=True)
        home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        hub = os.open(f"/run/netns/{self.hub}", os.O_RDONLY)
        try:
            assert libc.setns(hub, CLONE_NEWNET) == 0, os.strerror(ctypes.get_errno())
            try:
                yield
            finally:
                assert libc.setns(home, CLONE_NEWNET) == 0, os.strerror(ctypes.get_errno())
        finally:
            os.close(home)
            os.close(hub)

    def close(self):
        for namespace, _ in self.members.values():
            subprocess.run(["ip", "netns", "del", namespace], timeout=30)
        subprocess.run(["ip", "netns", "del", self.hub], timeout=30)


def wait_for(what, check, seconds=60):
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out: {what}"
        time.sleep(0.2)


def answer(method, url, **kwargs):
    """The JSON answer and status, or `None` when the node does not answer."""
    try:
        reply = requests.request(method, url, timeout=30, **kwargs)
        return reply.status_code, reply.json()
    except (requests.RequestException, ValueError):
        return None


def serving(url):
    got = answer("GET", f"{url}/api/v1/server_settings")
    return got is not None and got[0] == 200


class Cluster:
    SERVERS = ("n1", "n2", "n3")
    NODES = ("c1", "c2", "c3")

    def __init__(self, net, directory):
        self.net, self.dir = net, directory
        self.processes = {}
        for i, name in enumerate(self.SERVERS):
            net.add(name, 11 + i)
        for i, name in enumerate(self.NODES):
            net.add(name, 21 + i)
        self.nats = {name: f"nats://{net.address(name)}:4222" for name in self.SERVERS}
        self.urls = ",".join(self.nats.values())
        routes = ", ".join(f"nats-route://{net.address(n)}:6222" for n in self.SERVERS)
        for name in self.SERVERS:
            (directory / name).mkdir()
            conf = directory / f"{name}.conf"
            conf.write_text(
                f"server_name: {name}\nlisten: {net.address(name)}:4222\n"
                f"jetstream {{\n  store_dir: \"{directory / name}\"\n  sync_interval: always\n}}\n"
                f"cluster {{\n  name: partitions\n  listen: {net.address(name)}:6222\n"
                f"  routes: [{routes}]\n}}\n")
            self.run(name, [str(NATS), "-c", str(conf)])

    def run(self, name, argv):
        log = open(self.dir / f"{name}.log", "a")
        self.processes[name] = self.net.start(name, argv, log)

    def chronicle(self, *args, check=True):
        done = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=120)
        if check:
            assert done.returncode == 0, done.stderr
        return done

    def status(self, urls=None):
        done = self.chronicle("cluster", "status", "--cluster", urls or self.urls, "--stream",
                              "part", check=False)
        if done.returncode != 0:
            return {}
        lines = done.stdout.splitlines()
        status = dict(line.split(": ", 1) for line in lines if ": " in line)
        status["replicas"] = [line for line in lines if line.startswith("replica: ")]
        return status

    def settled(self):
        """A stream leader, both replicas current, and a writer holding the lease."""
        status = self.status()
        return (status.get("leader", "-") != "-" and len(status["replicas"]) == 2
                and all(" current " in r for r in status["replicas"])
                and status.get("writer", "-").startswith("http"))

    def node_url(self, name):
        return f"http://{self.net.address(name)}:9000"

    def start_node(self, name):
        data = self.dir / name
        server = self.SERVERS[self.NODES.index(name)]
        # Each node is given its own NATS server (it learns the others from it).
        self.run(name, [BIN, "serve", "--data-dir", str(data), "--cluster", self.nats[server],
                        "--stream", "part", "--bind", f"{self.net.address(name)}:9000",
                        "--rate-limit-user", "0", "--rate-limit-ip", "0", "--heartbeat-secs", "2"])
        # Until the state is loaded the address answers every request with a 503 of Zulip's
        # shape (and the first node writes secret.key only then), so only a 200 means serving.
        wait_for(f"{name} did not start", lambda: serving(self.node_url(name)))

    def stop(self):
        for name in (*self.NODES, *self.SERVERS):
            process = self.processes.get(name)
            if process and process.poll() is None:
                process.terminate()
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


@pytest.fixture
def cluster(tmp_path):
    """The cluster, with the test in the hub's namespace."""
    assert os.geteuid() == 0, "network namespaces need root (as CI and this suite run)"
    assert NATS.exists(), "nats-server is not installed (the test command installs it)"
    net = Network()
    cluster = None
    try:
        with net.joined():
            cluster = Cluster(net, tmp_path)
            wait_for("the stream could not be made",
                     lambda: cluster.chronicle("cluster", "init", "--cluster", cluster.urls,
                                               "--stream", "part", check=False).returncode == 0)
            cluster.start_node("c1")
            secret = (tmp_path / "c1" / "secret.key").read_bytes()
            for name in ("c2", "c3"):
                (tmp_path / name).mkdir(mode=0o700)
                (tmp_path / name / "secret.key").write_bytes(secret)
                cluster.start_node(name)
            wait_for("the cluster did not settle", cluster.settled)
            yield cluster
    finally:
        if cluster:
            cluster.stop()
        net.close()


def owner(cluster):
    rc = dict(line.split("=", 1) for line in
              (cluster.dir / "c1" / "zuliprc").read_text().splitlines() if "=" in line)
    return rc["email"], rc["key"]


def send(url, auth, content):
    return answer("POST", f"{url}/api/v1/messages", auth=auth,
                  data={"type": "stream", "to": "cut", "topic": "partition", "content": content})


def served(url, auth):
    """Every message of the channel as the node at `url` serves it: id -> content."""
    found, anchor = {}, 0
    narrow = json.dumps([{"operator": "channel", "operand": "cut"}])
    while True:
        got = answer("GET", f"{url}/api/v1/messages", auth=auth,
                     params={"anchor": anchor, "num_before": 0, "num_after": 1000,
                             "apply_markdown": "false", "narrow": narrow})
        assert got and got[0] == 200, got
        page = got[1]
        found.update({m["id"]: m["content"] for m in page["messages"]})
        if page["found_newest"] or not page["messages"]:
            return found
        anchor = page["messages"][-1]["id"] + 1


def cut_off_clearly(url, auth, acked):
    """Waits until the node at `url` refuses writes because it cannot reach the stream, then
    checks that it still answers reads and that `/ready` says it is stale. A write it takes
    before it notices counts as acknowledged."""
    refusal = {}

    def refused():
        got = send(url, auth, "through a cut-off node")
        if got and got[1].get("result") == "success":
            acked[got[1]["id"]] = "through a cut-off node"
            return False
        if got and got[1].get("code") == "STORAGE_UNAVAILABLE" \
                and "cluster's log" in got[1]["msg"]:
            refusal.update(status=got[0], body=got[1])
            return True
        return False

    wait_for(f"{url} did not refuse writes with a clear error", refused, 90)
    assert refusal["status"] == 503, refusal
    got = answer("GET", f"{url}/api/v1/messages", auth=auth,
                 params={"anchor": "newest", "num_before": 5, "num_after": 0})
    assert got and got[0] == 200 and got[1]["messages"], got
    ready = answer("GET", f"{url}/ready")
    assert ready and ready[0] == 503, ready
    assert ready[1]["status"] == "stale" and ready[1]["writes"] == "unreachable", ready
    assert ready[1]["unreachable_seconds"] >= 10, ready


def takes_writes_again(url, auth, acked):
    """Waits until the node at `url` takes a write again."""
    def took():
        got = send(url, auth, f"after healing, through {url}")
        if got and got[1].get("result") == "success":
            acked[got[1]["id"]] = f"after healing, through {url}"
            return True
        return False

    wait_for(f"{url} did not take writes after healing", took, 90)


def holds(found, acked):
    return all(found.get(i) == content for i, content in acked.items())


def converged(cluster, auth, acked):
    """Waits until every node serves every acknowledged message and all hold the same state,
    which must be a replay of the stream; then checks the chain."""
    urls = [cluster.node_url(n) for n in cluster.NODES]
    for url in urls:
        wait_for(f"{url} did not become ready again",
                 lambda url=url: (answer("GET", f"{url}/ready") or (0,))[0] == 200)
        wait_for(f"{url} misses acknowledged messages",
                 lambda url=url: holds(served(url, auth), acked))
    dumps = {}

    def same_state():
        nonlocal dumps
        dumps = {url: (answer("GET", f"{url}/api/v1/admin/projections", auth=auth) or (0, {}))[1]
                 .get("projections") for url in urls}
        return None not in dumps.values() and len({d["seq"] for d in dumps.values()}) == 1

    wait_for("the nodes did not converge on one seq", same_state)
    states = list(dumps.values())
    assert states[0] == states[1] == states[2], "the nodes hold different states"
    replayed = json.loads(cluster.chronicle(
        "dump", "--data-dir", str(cluster.dir / "c1"), "--cluster", cluster.urls, "--stream",
        "part", "--at-seq", str(states[0]["seq"])).stdout)
    assert replayed == states[0], "a replay of the stream differs from what the nodes serve"
    verified = cluster.chronicle("verify", "--data-dir", str(cluster.dir / "c1"), "--cluster",
                                 cluster.urls, "--stream", "part")
    assert "chain: intact" in verified.stdout, verified.stdout


def test_a_node_cut_off_from_nats_refuses_writes_serves_reads_and_catches_up(cluster):
    auth = owner(cluster)
    urls = {n: cluster.node_url(n) for n in cluster.NODES}
    made = answer("POST", f"{urls['c2']}/api/v1/users/me/subscriptions", auth=auth,
                  data={"subscriptions": json.dumps([{"name": "cut"}])})
    assert made and made[1]["result"] == "success", made
    acked = {}
    for name in cluster.NODES:
        got = send(urls[name], auth, f"before, through {name}")
        assert got and got[1]["result"] == "success", got
        acked[got[1]["id"]] = f"before, through {name}"
    # The node holding the writer's lease is the one cut off: the lease must move.
    writer = cluster.status()["writer"].split()[0]
    victim = next(n for n in cluster.NODES if urls[n] == writer)
    others = [n for n in cluster.NODES if n != victim]
    cluster.net.cut([victim], cluster.SERVERS)

    cut_off_clearly(urls[victim], auth, acked)

    # The others take the writes once the lease has moved (it expires in seconds).
    for i in range(20):
        content = f"during the cut, {i}"
        got = None

        def took():
            nonlocal got
            got = send(urls[others[i % 2]], auth, content)
            return got is not None and got[1].get("result") == "success"

        wait_for("the nodes that reach NATS did not take writes", took, 60)
        acked[got[1]["id"]] = content
    status = cluster.status()
    assert status["writer"].split()[0] in (urls[o] for o in others), status
    still = send(urls[victim], auth, "still cut off")
    assert still and still[1].get("code") == "STORAGE_UNAVAILABLE", still

    cluster.net.heal()
    # Back: it folds what it missed, and takes writes again.
    takes_writes_again(urls[victim], auth, acked)
    converged(cluster, auth, acked)
    log = (cluster.dir / f"{victim}.log").read_text()
    assert "cannot reach the cluster's log" in log
    assert "the cluster's log answers again" in log


def test_the_stream_leader_cut_off_from_the_other_servers_loses_nothing(cluster):
    auth = owner(cluster)
    urls = [cluster.node_url(n) for n in cluster.NODES]
    made = answer("POST", f"{urls[0]}/api/v1/users/me/subscriptions", auth=auth,
                  data={"subscriptions": json.dumps([{"name": "cut"}])})
    assert made and made[1]["result"] == "success", made
    leader = cluster.status()["leader"]
    rest = [s for s in cluster.SERVERS if s != leader]
    stranded = urls[cluster.SERVERS.index(leader)]

    acked, lock, stop = {}, threading.Lock(), threading.Event()
    errors = []

    def sender(first):
        # Each message through one node after another, as a load balancer would, until
        # one acknowledges it. (Threads started here are in the hub's namespace too.)
        node, i = first, 0
        session = requests.Session()
        while not stop.is_set():
            content = f"client {first}, message {i}"
            while not stop.is_set():
                try:
                    reply = session.post(
                        f"{urls[node]}/api/v1/messages", auth=auth, timeout=30,
                        data={"type": "stream", "to": "cut", "topic": "leader",
                              "content": content})
                    body = reply.json()
                    if body.get("result") == "success":
                        with lock:
                            acked[body["id"]] = content
                        break
                    if reply.status_code not in (502, 503, 504):
                        errors.append(body)
                except (requests.RequestException, ValueError):
                    pass
                node = (node + 1) % 3
                time.sleep(0.05)
            i += 1

    threads = [threading.Thread(target=sender, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    try:
        wait_for("no writes before the cut", lambda: len(acked) >= 20)
        cluster.net.cut([leader], rest)
        cut_at = len(acked)
        # The two servers elect a new leader, and writes go on through them.
        majority = ",".join(cluster.nats[s] for s in rest)
        wait_for("the other two servers did not elect a new leader",
                 lambda: cluster.status(majority).get("leader", "-") in rest, 90)
        wait_for("writes did not go on during the cut", lambda: len(acked) >= cut_at + 30, 90)
        # The node whose server is the one cut off stays with it (the server answers its
        # pings), so it cannot reach the stream either.
        cut_off_clearly(stranded, auth, acked)
        cluster.net.heal()
        wait_for("the servers did not agree again", cluster.settled, 120)
        healed_at = len(acked)
        wait_for("writes did not go on after healing", lambda: len(acked) >= healed_at + 30,
                 90)
    finally:
        stop.set()
        for t in threads:
            t.join(90)
    assert not errors, errors[:3]
    takes_writes_again(stranded, auth, acked)
    converged(cluster, auth, acked)

"""The cluster mode's log: a Chronicle node on a stream of three NATS servers (started by
scripts/cluster.sh), killed with SIGKILL under load, and the stream's leader killed too. Every
acknowledged message must survive, the chain must verify, and a replay of the stream must give
the state the node served."""

import hashlib
import json
import os
import pathlib
import random
import signal
import socket
import subprocess
import threading
import time

import pytest
import requests

from conftest import ROOT, free_port

BIN = os.environ.get("CHRONICLE_BIN", str(ROOT / "target" / "debug" / "chronicle"))
SCRIPT = ROOT / "scripts" / "cluster.sh"


def free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_base():
    for _ in range(200):
        base = random.randrange(20000, 40000)
        if all(free(base + i) and free(base + 100 + i) for i in range(3)):
            return base
    raise RuntimeError("no free ports")


class Cluster:
    def __init__(self, directory: pathlib.Path, base: int):
        self.dir = directory
        self.urls = ",".join(f"nats://127.0.0.1:{base + i}" for i in range(3))
        self.pids = {}
        for i, line in enumerate((directory / "pids").read_text().split()):
            self.pids[f"n{i + 1}"] = int(line)

    def chronicle(self, *args, check=True):
        done = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=120)
        if check:
            assert done.returncode == 0, done.stderr
        return done

    def status(self, stream):
        out = self.chronicle("cluster", "status", "--cluster", self.urls, "--stream", stream).stdout
        return dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)

    def ready(self, stream="chronicle"):
        """Whether JetStream answers for `stream`: a leader, and every replica current."""
        done = self.chronicle("cluster", "status", "--cluster", self.urls, "--stream", stream,
                              check=False)
        if done.returncode != 0:
            return False
        lines = done.stdout.splitlines()
        replicas = [line for line in lines if line.startswith("replica: ")]
        return ("leader: -" not in lines and len(replicas) == 2
                and all(" current " in line for line in replicas))

    def kill_server(self, name):
        os.kill(self.pids[name], signal.SIGKILL)

    def start_server(self, name):
        log = open(self.dir / f"{name}.restart.log", "w")
        process = subprocess.Popen(
            [str(ROOT / ".venv" / "bin" / "nats-server"), "-c", str(self.dir / f"{name}.conf")],
            stdout=log,
            stderr=log,
        )
        self.pids[name] = process.pid
        with open(self.dir / "pids", "a") as pids:
            pids.write(f"{process.pid}\n")


@pytest.fixture(autouse=True)
def settled(cluster):
    """Each test starts on a whole cluster: a NATS server the test before restarted may still
    be catching up, and a new stream's three replicas need all three servers."""
    wait_for("JetStream does not answer", cluster.ready, 120)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cluster")
    base = free_base()
    # Small NATS messages, so that group-commit batches are cut into several parts.
    env = {**os.environ, "CHRONICLE_BIN": BIN, "NATS_MAX_PAYLOAD": "65536"}
    subprocess.run([str(SCRIPT), "nats", str(directory), str(base)], check=True, env=env,
                   timeout=180)
    try:
        yield Cluster(directory, base)
    finally:
        subprocess.run([str(SCRIPT), "stop", str(directory)], timeout=60)


def test_cluster_init_refuses_what_cannot_keep_a_log(cluster):
    again = cluster.chronicle("cluster", "init", "--cluster", cluster.urls)
    assert "exists with the settings of a durable log" in again.stdout
    one = cluster.chronicle("cluster", "init", "--cluster", cluster.urls, "--replicas", "1",
                            "--stream", "single", check=False)
    assert one.returncode != 0 and "use 3 or 5" in one.stderr
    five = cluster.chronicle("cluster", "init", "--cluster", cluster.urls, "--replicas", "5",
                             check=False)
    assert five.returncode != 0
    assert "it has 3 replicas, not the 5 asked for" in five.stderr
    missing = cluster.chronicle("replay", "--data-dir", "/nonexistent", "--cluster",
                                cluster.urls, "--stream", "missing", check=False)
    assert missing.returncode != 0 and "chronicle cluster init" in missing.stderr


def test_acknowledged_writes_survive_killing_the_node_and_the_stream_leader(cluster, tmp_path):
    data = tmp_path / "node"
    # One port across the node's restarts, so that the senders find it again.
    node = Node(data, cluster.urls, "chronicle", tmp_path / "node.log")
    url = node.url
    rc = dict(line.split("=", 1) for line in (data / "zuliprc").read_text().splitlines()
              if "=" in line)
    auth = (rc["email"], rc["key"])
    made = requests.post(f"{url}/api/v1/users/me/subscriptions", auth=auth,
                         data={"subscriptions": json.dumps([{"name": "load"}])}, timeout=30)
    assert made.json()["result"] == "success", made.text

    acked = {}
    lock = threading.Lock()
    stop = threading.Event()
    filler = "x" * 3000

    def sender(who):
        i = 0
        session = requests.Session()
        while not stop.is_set():
            content = f"m-{who}-{i} {filler}"
            try:
                reply = session.post(f"{url}/api/v1/messages", auth=auth, timeout=60, data={
                    "type": "stream", "to": "load", "topic": f"t{who}", "content": content})
                body = reply.json()
                if body.get("result") == "success":
                    with lock:
                        acked[body["id"]] = content
                    i += 1
                    continue
            except (requests.RequestException, ValueError):
                pass
            time.sleep(0.05)

    threads = [threading.Thread(target=sender, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    try:
        # Each kill comes once writes are being acknowledged, and the test goes on only once
        # they are again (the 4 s are how long the stream's leader stays dead).
        wait_for("no write was acknowledged", lambda: len(acked) >= 20, 90)
        node.kill()
        before_restart = len(acked)
        node.start()
        wait_for("no write was acknowledged after the node's restart",
                 lambda: len(acked) >= before_restart + 20, 90)
        leader = cluster.status("chronicle")["leader"]
        cluster.kill_server(leader)
        killed_at = len(acked)
        time.sleep(4)
        cluster.start_server(leader)
        wait_for("no write was acknowledged after the stream leader died",
                 lambda: len(acked) >= killed_at + 20, 90)
    finally:
        stop.set()
        for t in threads:
            t.join(90)

    # Every acknowledged message is there, with its content.
    found = {}
    anchor = 0
    while True:
        page = requests.get(f"{url}/api/v1/messages", auth=auth, timeout=60, params={
            "anchor": anchor, "num_before": 0, "num_after": 1000, "apply_markdown": "false",
            "narrow": json.dumps([{"operator": "channel", "operand": "load"}]),
        }).json()
        assert page["result"] == "success", page
        for m in page["messages"]:
            found[m["id"]] = m["content"]
        if page["found_newest"] or not page["messages"]:
            break
        anchor = page["messages"][-1]["id"] + 1
    missing = [i for i in acked if found.get(i) != acked[i]]
    assert not missing, f"{len(missing)} acknowledged messages lost, e.g. {missing[:5]}"

    served = requests.get(f"{url}/api/v1/admin/projections", auth=auth, timeout=60).json()
    served = served["projections"]
    node.stop()
    # The restarted leader may still be catching up: the stream is read once every replica is
    # current (writes resuming, waited for above, need only two of the three).
    wait_for("JetStream does not answer", cluster.ready, 120)
    verified = cluster.chronicle("verify", "--data-dir", str(data), "--cluster", cluster.urls)
    assert "chain: intact" in verified.stdout
    # A replay of the stream from event 1 gives the state the node served.
    dumped = json.loads(cluster.chronicle("dump", "--data-dir", str(data), "--cluster",
                                          cluster.urls, "--at-seq", str(served["seq"])).stdout)
    assert dumped == served


class Node:
    """A Chronicle node of a cluster, on a port it keeps across restarts."""

    def __init__(self, data, urls, stream, log_path):
        self.data, self.log_path = data, log_path
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = ["serve", "--data-dir", str(data), "--cluster", urls, "--stream", stream,
                     "--rate-limit-user", "0", "--rate-limit-ip", "0", "--heartbeat-secs", "2",
                     "--bind", f"127.0.0.1:{self.port}"]
        self.start()

    def start(self):
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen([BIN, *self.args], stdout=log, stderr=log)
        for _ in range(300):
            try:
                if requests.get(f"{self.url}/api/v1/server_settings", timeout=2).ok:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        self.process.kill()
        raise RuntimeError("a node did not start: " + self.log_path.read_text()[-2000:])

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            assert self.process.wait(30) == 0, self.log_path.read_text()[-2000:]


def test_three_nodes_survive_kills_and_agree_with_the_stream(cluster, tmp_path):
    """Writers send through all three nodes while the writing node is killed with SIGKILL and
    restarted, then the stream's NATS leader. A long-poll client moves from node to node."""
    stream = "three"
    cluster.chronicle("cluster", "init", "--cluster", cluster.urls, "--stream", stream)
    dirs = [tmp_path / f"node{i}" for i in range(3)]
    nodes = [Node(dirs[0], cluster.urls, stream, tmp_path / "node0.log")]
    # The other nodes share the first one's secret, so that API keys work on every node.
    for d in dirs[1:]:
        d.mkdir(mode=0o700)
        (d / "secret.key").write_bytes((dirs[0] / "secret.key").read_bytes())
    for i in (1, 2):
        nodes.append(Node(dirs[i], cluster.urls, stream, tmp_path / f"node{i}.log"))
    urls = [n.url for n in nodes]
    try:
        rc = dict(line.split("=", 1) for line in (dirs[0] / "zuliprc").read_text().splitlines()
                  if "=" in line)
        auth = (rc["email"], rc["key"])
        made = requests.post(f"{urls[1]}/api/v1/users/me/subscriptions", auth=auth, timeout=30,
                             data={"subscriptions": json.dumps([{"name": "shared"}])})
        assert made.json()["result"] == "success", made.text
        deadline = time.time() + 15
        while "writer: http" not in cluster.chronicle(
                "cluster", "status", "--cluster", cluster.urls, "--stream", stream).stdout:
            assert time.time() < deadline, "no node took the writer's lease"
            time.sleep(0.2)
        status = cluster.chronicle("cluster", "status", "--cluster", cluster.urls, "--stream",
                                   stream).stdout
        writer = urls.index(status.split("writer: ")[1].split()[0])
        home = (writer + 1) % 3
        # A long-poll client whose queue lives on a node that is not killed.
        queue = requests.post(f"{urls[home]}/api/v1/register", auth=auth, timeout=30,
                              data={"event_types": json.dumps(["message"])}).json()
        assert queue["result"] == "success", queue
        assert queue["queue_id"].split(":")[0] in status

        acked, seen, failures, lock = {}, [], [], threading.Lock()
        stop, drained = threading.Event(), threading.Event()

        reacted, subscribed = set(), {}
        # Changes sent but never acknowledged (the node answering died, or the test stopped
        # before a retry): the log may hold them or not, so either outcome is right.
        unconfirmed_edits, unconfirmed_subs = {}, {}

        def sender(first):
            i, node = 0, first
            session = requests.Session()

            def until_done(method, path, data, fine=()):
                # Through one node after another, as a load balancer would, until the change
                # is acknowledged (a change whose answer was lost may answer `fine`, a code or
                # a message, the second time).
                nonlocal node
                while not stop.is_set():
                    try:
                        reply = session.request(method, f"{urls[node]}/api/v1/{path}", auth=auth,
                                                timeout=60, data=data).json()
                        if reply.get("result") == "success" or reply.get("code") in fine \
                                or reply.get("msg") in fine:
                            return reply
                    except (requests.RequestException, ValueError):
                        pass
                    node = (node + 1) % 3
                    time.sleep(0.05)
                return None

            while not stop.is_set():
                content = f"from client {first}, message {i}"
                sent = until_done("POST", "messages", {"type": "stream", "to": "shared",
                                                       "topic": "race", "content": content})
                if sent is None:
                    return
                message = sent["id"]
                with lock:
                    acked[message] = content
                if i % 4 == 1:
                    edited = f"{content}, edited"
                    with lock:
                        unconfirmed_edits[message] = edited
                    # A retried edit that the first try already made has nothing to change.
                    if until_done("PATCH", f"messages/{message}", {"content": edited},
                                  fine=("Nothing to change",)):
                        with lock:
                            acked[message] = edited
                            del unconfirmed_edits[message]
                elif i % 4 == 2:
                    if until_done("POST", f"messages/{message}/reactions",
                                  {"emoji_name": "octopus"}, fine=("REACTION_ALREADY_EXISTS",)):
                        with lock:
                            reacted.add(message)
                elif i % 4 == 3:
                    side = json.dumps([f"side {first}"])
                    with lock:
                        unconfirmed_subs[f"side {first}"] = i % 8 == 3
                    if i % 8 == 3:
                        done = until_done("POST", "users/me/subscriptions",
                                          {"subscriptions": json.dumps([{"name": f"side {first}"}])})
                    else:
                        done = until_done("DELETE", "users/me/subscriptions",
                                          {"subscriptions": side})
                    if done:
                        with lock:
                            subscribed[f"side {first}"] = i % 8 == 3
                            del unconfirmed_subs[f"side {first}"]
                i += 1

        def poller():
            last, node, event_ids = queue["last_event_id"], 0, set()
            while not drained.is_set():
                node = (node + 1) % 3  # each poll through the next node
                try:
                    reply = requests.get(f"{urls[node]}/api/v1/events", auth=auth, timeout=30,
                                         params={"queue_id": queue["queue_id"],
                                                 "last_event_id": last}).json()
                except (requests.RequestException, ValueError):
                    continue
                if reply.get("result") != "success":
                    failures.append((urls[node], reply))
                    time.sleep(0.1)
                    continue
                for event in reply["events"]:
                    if event["id"] in event_ids:
                        continue  # a poll whose answer was lost is answered again
                    event_ids.add(event["id"])
                    last = event["id"]
                    if event["type"] == "message":
                        with lock:
                            seen.append(event["message"]["id"])

        threads = [threading.Thread(target=sender, args=(n,)) for n in range(3)]
        polling = threading.Thread(target=poller)
        for t in [*threads, polling]:
            t.start()
        try:
            # Each kill comes once writes are being acknowledged, and the test goes on only
            # once they are again (the waits of 1 s and 4 s are how long the dead stay dead).
            wait_for("no write was acknowledged", lambda: len(acked) >= 20, 90)
            nodes[writer].kill()
            killed_at = len(acked)
            time.sleep(1)
            nodes[writer].start()
            wait_for("writes did not resume after the writing node's restart",
                     lambda: len(acked) >= killed_at + 20, 90)
            leader = cluster.status(stream)["leader"]
            cluster.kill_server(leader)
            leader_killed_at = len(acked)
            time.sleep(4)
            cluster.start_server(leader)
            wait_for("writes did not resume after the stream leader died",
                     lambda: len(acked) >= leader_killed_at + 20, 90)
        finally:
            stop.set()
            for t in threads:
                t.join(90)
        deadline = time.time() + 30
        while time.time() < deadline and not set(acked) <= set(seen):
            time.sleep(0.2)
        drained.set()
        polling.join(60)

        # The long-poll client got each message once, in the log's order.
        assert not failures, failures[:3]
        assert sorted(seen) == sorted(set(seen)), "an event came twice"
        assert set(acked) <= set(seen), "events lost"
        assert seen == sorted(seen), "events out of order"

        # Every node serves every acknowledged change: messages as last edited, reactions,
        # subscriptions.
        narrow = json.dumps([{"operator": "channel", "operand": "shared"}])
        for url in urls:
            deadline = time.time() + 20
            while True:
                found, anchor = {}, 0
                while True:
                    page = requests.get(f"{url}/api/v1/messages", auth=auth, timeout=60, params={
                        "anchor": anchor, "num_before": 0, "num_after": 1000,
                        "apply_markdown": "false", "narrow": narrow}).json()
                    found.update({m["id"]: m["content"] for m in page["messages"]})
                    for m in page["messages"]:
                        if any(r["emoji_name"] == "octopus" for r in m["reactions"]):
                            found[("reacted", m["id"])] = True
                    if page["found_newest"] or not page["messages"]:
                        break
                    anchor = page["messages"][-1]["id"] + 1
                complete = all(found.get(i) in (c, unconfirmed_edits.get(i))
                               for i, c in acked.items()) \
                    and all(found.get(("reacted", m)) for m in reacted)
                if complete or time.time() > deadline:
                    break
                time.sleep(0.2)
            wrong = [(i, c, found.get(i)) for i, c in acked.items()
                     if found.get(i) not in (c, unconfirmed_edits.get(i))]
            unreacted = [m for m in reacted if not found.get(("reacted", m))]
            assert complete, (f"{url} misses acknowledged messages or reactions: "
                              f"{wrong[:5]} (id, acknowledged, served), {unreacted[:5]} not reacted")
            subs = requests.get(f"{url}/api/v1/users/me/subscriptions", auth=auth,
                                timeout=60).json()["subscriptions"]
            names = {sub["name"] for sub in subs}
            for name, wanted in subscribed.items():
                assert (name in names) in (wanted, unconfirmed_subs.get(name, wanted)), \
                    f"{url}: subscription to {name}"
        assert reacted and subscribed, "the writers made no reactions or subscription changes"

        # The three nodes hold the same state, which is a replay of the stream from event 1.
        dumps = {}
        deadline = time.time() + 20
        while time.time() < deadline:
            dumps = {url: requests.get(f"{url}/api/v1/admin/projections", auth=auth,
                                       timeout=60).json()["projections"] for url in urls}
            if len({d["seq"] for d in dumps.values()}) == 1:
                break
            time.sleep(0.2)
        states = list(dumps.values())
        assert states[0]["seq"] == states[1]["seq"] == states[2]["seq"]
        assert states[0] == states[1] == states[2]
        # Read from the stream once every replica is current (the restarted leader may still
        # be catching up).
        wait_for("JetStream does not answer", lambda: cluster.ready(stream), 120)
        replayed = json.loads(cluster.chronicle(
            "dump", "--data-dir", str(dirs[0]), "--cluster", cluster.urls, "--stream", stream,
            "--at-seq", str(states[0]["seq"])).stdout)
        assert replayed == states[0]
    finally:
        for node in nodes:
            node.stop()
    verified = cluster.chronicle("verify", "--data-dir", str(dirs[0]), "--cluster", cluster.urls,
                                 "--stream", stream)
    assert "chain: intact" in verified.stdout


def test_a_new_node_starts_from_a_shared_snapshot(cluster, tmp_path):
    stream = "join"
    cluster.chronicle("cluster", "init", "--cluster", cluster.urls, "--stream", stream)
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    first = Node(first_dir, cluster.urls, stream, tmp_path / "first.log")
    second = None
    try:
        rc = dict(line.split("=", 1) for line in (first_dir / "zuliprc").read_text().splitlines()
                  if "=" in line)
        auth = (rc["email"], rc["key"])
        # Snapshots every 20 events from here on (the first node restarts with the setting).
        first.stop()
        first.args += ["--snapshot-every", "20"]
        first.start()
        made = requests.post(f"{first.url}/api/v1/users/me/subscriptions", auth=auth, timeout=30,
                             data={"subscriptions": json.dumps([{"name": "history"}])})
        assert made.json()["result"] == "success", made.text
        for i in range(60):
            sent = requests.post(f"{first.url}/api/v1/messages", auth=auth, timeout=30, data={
                "type": "stream", "to": "history", "topic": "t", "content": f"old {i}"}).json()
            assert sent["result"] == "success", sent
        # Written, then put in the object store: the second node finds it only after that.
        wait_for("the first node shared no snapshot",
                 lambda: "snapshot shared" in first.log_path.read_text())

        second_dir.mkdir(mode=0o700)
        (second_dir / "secret.key").write_bytes((first_dir / "secret.key").read_bytes())
        second = Node(second_dir, cluster.urls, stream, tmp_path / "second.log")
        log = second.log_path.read_text()
        assert "fetched the newest shared snapshot" in log, log[-3000:]
        assert "loaded the newest snapshot" in log, log[-3000:]
        assert list((second_dir / "snapshots").glob("*.snap"))

        # It serves the same state as the node that wrote the history.
        a, b = (requests.get(f"{n.url}/api/v1/admin/projections", auth=auth, timeout=60)
                .json()["projections"] for n in (first, second))
        assert a["seq"] == b["seq"] and a == b

        # A file uploaded through one node (stored by the writer) downloads from the other.
        writer = first if "writer: " + first.url in cluster.chronicle(
            "cluster", "status", "--cluster", cluster.urls, "--stream", stream).stdout else second
        other = second if writer is first else first
        body = os.urandom(2000)
        up = requests.post(f"{other.url}/api/v1/user_uploads", auth=auth, timeout=30,
                           files={"file": ("notes.bin", body)}).json()
        assert up["result"] == "success", up
        sha = hashlib.sha256(body).hexdigest()
        kept = other.data / "uploads" / sha[:2] / sha
        assert not kept.exists(), "the upload was not taken by the writer"
        got = requests.get(f"{other.url}{up['url']}", auth=auth, timeout=30)
        assert got.status_code == 200 and got.content == body
        assert kept.read_bytes() == body, "the fetched file was not kept"
        # Nobody outside the cluster can use the nodes' internal route.
        assert requests.get(f"{writer.url}/internal/uploads/{sha}", timeout=30).status_code == 404
    finally:
        first.stop()
        if second:
            second.stop()


def metric(url, name):
    """The sum of a counter's series on a node's metrics address (0 while it has none)."""
    text = requests.get(f"{url}/metrics", timeout=10).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name + "{") or line.startswith(name + " "))


def wait_for(what, check, seconds=60):
    deadline = time.time() + seconds
    while not check():
        assert time.time() < deadline, what
        time.sleep(0.2)


def test_a_node_counts_its_reconnects_to_nats_and_keeps_writing(cluster, tmp_path):
    # The node is given one NATS server; it learns the others from it, and when that server
    # dies it reconnects to another, which its metrics count.
    stream = "reconnects"
    cluster.chronicle("cluster", "init", "--cluster", cluster.urls, "--stream", stream)
    first_url = cluster.urls.split(",")[0]
    metrics_url = f"http://127.0.0.1:{free_port()}"
    node = Node(tmp_path / "node", first_url, stream, tmp_path / "node.log")
    node.stop()
    node.args += ["--metrics-bind", metrics_url.removeprefix("http://")]
    node.start()
    events = "chronicle_nats_connection_events_total"
    try:
        rc = dict(line.split("=", 1) for line in
                  (tmp_path / "node" / "zuliprc").read_text().splitlines() if "=" in line)
        auth = (rc["email"], rc["key"])
        assert metric(metrics_url, events + '{event="connected"}') >= 1
        assert metric(metrics_url, events + '{event="disconnected"}') == 0
        connected = metric(metrics_url, events + '{event="connected"}')
        cluster.kill_server("n1")
        wait_for("the lost connection was not counted",
                 lambda: metric(metrics_url, events + '{event="disconnected"}') >= 1)
        wait_for("no reconnect to another NATS server was counted",
                 lambda: metric(metrics_url, events + '{event="connected"}') > connected)

        def sends():
            try:
                sent = requests.post(f"{node.url}/api/v1/messages", auth=auth, timeout=30, data={
                    "type": "private", "to": json.dumps([rc["email"]]),
                    "content": "still here"}).json()
                return sent["result"] == "success"
            except requests.RequestException:
                return False
        wait_for("the node did not write again after reconnecting", sends)
        assert "the connection to NATS was lost" in node.log_path.read_text()
    finally:
        node.stop()
        cluster.start_server("n1")
        wait_for("n1 did not come back",
                 lambda: not free(int(first_url.rsplit(":", 1)[1])))
        # Listening is not serving: JetStream answers again once n1 has caught up.
        wait_for("JetStream did not answer again after n1 came back",
                 lambda: cluster.ready(stream), seconds=120)


def test_an_import_goes_into_an_empty_stream_and_a_node_serves_it(cluster, tmp_path):
    stream = "imported"
    cluster.chronicle("cluster", "init", "--cluster", cluster.urls, "--stream", stream)
    fixtures = ROOT / "tests" / "fixtures" / "zulip" / "slack_fixtures"
    args = ["import-from", "slack", str(fixtures / "test_slack_importer.zip"),
            "--slack-users", str(fixtures / "user_data.json")]
    data = tmp_path / "node"
    done = cluster.chronicle(*args, "--data-dir", str(data), "--cluster", cluster.urls,
                             "--stream", stream)
    assert "Moved " in done.stdout and "events into the stream" in done.stdout, done.stdout
    # The node's directory keeps the uploads, the secret and the zuliprc; the log is the stream.
    assert not (data / "log").exists()
    assert (data / "secret.key").exists() and (data / "zuliprc").exists()
    # The same export imported on disk: the stream holds the same number of events.
    local = tmp_path / "local"
    cluster.chronicle(*args, "--data-dir", str(local))
    events = [dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)["events"]
              for out in (cluster.chronicle("replay", "--data-dir", str(data), "--cluster",
                                            cluster.urls, "--stream", stream).stdout,
                          cluster.chronicle("replay", "--data-dir", str(local)).stdout)]
    assert events[0] == events[1], events
    # A stream that holds events takes no second organization, and nothing is written.
    again = cluster.chronicle(*args, "--data-dir", str(tmp_path / "again"), "--cluster",
                              cluster.urls, "--stream", stream, check=False)
    assert again.returncode == 1 and "already holds events" in again.stderr, again.stderr
    assert not (tmp_path / "again").exists()
    # A node on the stream serves the imported organization.
    node = Node(data, cluster.urls, stream, tmp_path / "node.log")
    try:
        rc = dict(line.split("=", 1) for line in (data / "zuliprc").read_text().splitlines()
                  if "=" in line)
        auth = (rc["email"], rc["key"])
        got = requests.get(f"{node.url}/api/v1/messages", auth=auth, timeout=30, params={
            "anchor": "oldest", "num_before": 0, "num_after": 1000,
            "narrow": json.dumps([{"operator": "channel", "operand": "general"}])}).json()
        assert got["result"] == "success", got
        report = json.loads((data / "import-report.json").read_text())
        assert report["counts"]["messages"] == 82, report["counts"]
        assert len(got["messages"]) > 0
        assert all(m["display_recipient"] == "general" for m in got["messages"])
    finally:
        node.stop()

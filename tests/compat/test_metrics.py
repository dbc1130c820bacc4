"""`/metrics` scraped by a real Prometheus server (Debian's `prometheus`), started by the test on
loopback: a PromQL query over Prometheus' HTTP API returns the request count the test caused."""

import pathlib
import shutil
import subprocess
import time

import pytest
import requests

from conftest import RunningServer, free_port

PROMETHEUS = shutil.which("prometheus")


@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed (scripts/test.sh installs it)")
def test_prometheus_scrapes_the_requests_the_server_answered(tmp_path):
    server = RunningServer(tmp_path / "data", extra_args=["--metrics-bind", "127.0.0.1:0"])
    prometheus = None
    try:
        assert server.metrics_url, "the server did not say where its metrics are"
        target = server.metrics_url.split("//", 1)[1].split("/", 1)[0]
        for _ in range(7):
            answer = requests.get(f"{server.url}/api/v1/server_settings", timeout=15)
            assert answer.status_code == 200
        # The metrics address answers without credentials; the main one has no /metrics here.
        scraped = requests.get(server.metrics_url, timeout=15)
        assert scraped.status_code == 200
        assert scraped.headers["content-type"].startswith("text/plain; version=0.0.4")
        assert requests.get(f"{server.url}/metrics", timeout=15).status_code == 404

        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n"
            "scrape_configs:\n  - job_name: chronicle\n"
            f"    static_configs:\n      - targets: ['{target}']\n"
        )
        port = free_port()
        log = open(tmp_path / "prometheus.log", "w")
        prometheus = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=log, stderr=log,
        )
        api = f"http://127.0.0.1:{port}/api/v1/query"
        query = 'chronicle_http_requests_total{job="chronicle",route="/api/v1/server_settings",status="200"}'
        deadline = time.monotonic() + 90
        last = None
        while time.monotonic() < deadline:
            try:
                last = requests.get(api, params={"query": query}, timeout=5).json()
            except requests.RequestException as error:  # Prometheus still starting
                last = str(error)
            else:
                results = last.get("data", {}).get("result", [])
                if results and results[0]["value"][1] == "7":
                    break
            time.sleep(0.2)
        else:
            raise AssertionError(f"Prometheus never saw 7 requests: {last}; "
                                 f"{(tmp_path / 'prometheus.log').read_text()[-2000:]}")
        # The scrape itself is healthy, and the state's sizes are there too.
        up = requests.get(api, params={"query": 'up{job="chronicle"}'}, timeout=5).json()
        assert up["data"]["result"][0]["value"][1] == "1", up
        people = requests.get(api, params={"query": "chronicle_people"}, timeout=5).json()
        assert int(people["data"]["result"][0]["value"][1]) >= 1, people
    finally:
        if prometheus is not None:
            prometheus.terminate()
            prometheus.wait(30)
        server.stop()

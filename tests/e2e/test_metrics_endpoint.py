"""GET /metrics: spaced's own figures in Prometheus' text exposition format (docs/metrics.md).

The answer is parsed strictly (every family announced by # HELP and # TYPE before its samples,
names and labels as Prometheus allows them, histograms cumulative with +Inf equal to _count) and
checked as an operator would use it: the sandboxes by state move as a sandbox is created, paused,
suspended, resumed and deleted; an exec's histogram counts it; a failed create counts its reason.
Over TCP only an administrator's token (spaced token create --admin) reads it. Debian's own
prometheus server, scraping spaced over loopback with that token, sees space_sandboxes move.
Every wait is a poll with a deadline.
"""

import json
import socket
import math
import os
import re
import subprocess
import urllib.parse
import urllib.request

import pytest

from conftest import SPACED, Api, Daemon, free_port, wait_until

PROMETHEUS = "/usr/bin/prometheus"
NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def parse_value(text):
    if text in ("+Inf", "-Inf", "NaN"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    assert re.fullmatch(r"-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?", text), f"not a number: {text!r}"
    return float(text)


def parse_labels(text, line):
    """{name: value} of the text between a sample's braces, unescaping values."""
    labels, i = {}, 0
    while i < len(text):
        m = re.compile(r"([^=]*)=\"").match(text, i)
        assert m and LABEL.match(m.group(1)), f"bad label in {line!r}"
        i, value = m.end(), []
        while text[i] != '"':
            if text[i] == "\\":
                assert text[i + 1] in '\\"n', f"bad escape in {line!r}"
                value.append("\n" if text[i + 1] == "n" else text[i + 1])
                i += 2
            else:
                value.append(text[i])
                i += 1
        assert m.group(1) not in labels, f"label twice in {line!r}"
        labels[m.group(1)] = "".join(value)
        i += 1
        if i < len(text):
            assert text[i] == ",", f"no comma between labels in {line!r}"
            i += 1
    return labels


def family_of(name, types):
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and types.get(name[: -len(suffix)]) == "histogram":
            return name[: -len(suffix)]
    return name


def parse(text):
    """{(name, frozenset of labels): value}, checking the format strictly."""
    assert text.endswith("\n"), "the exposition must end with a line feed"
    types, helps, samples, seen_samples = {}, {}, {}, set()
    for line in text[:-1].split("\n"):
        assert line, "an empty line"
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            assert NAME.match(name) and name not in helps and help_text, line
            helps[name] = help_text
            continue
        if line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            assert NAME.match(name) and kind in TYPES and name not in types, line
            assert name not in seen_samples, f"TYPE of {name} after its samples"
            types[name] = kind
            continue
        assert not line.startswith("#"), f"unexpected comment {line!r}"
        m = re.fullmatch(r"([^{ ]+)(?:\{(.*)\})? (\S+)", line)
        assert m and NAME.match(m.group(1)), f"bad sample {line!r}"
        labels = parse_labels(m.group(2) or "", line)
        fam = family_of(m.group(1), types)
        assert fam in types and fam in helps, f"{m.group(1)} has no # TYPE / # HELP before it"
        seen_samples.add(fam)
        key = (m.group(1), frozenset(labels.items()))
        assert key not in samples, f"sample twice: {line!r}"
        samples[key] = parse_value(m.group(3))
    for fam, kind in types.items():
        assert fam.startswith("space_"), fam
        if kind == "counter":
            assert fam.endswith("_total"), fam
        if kind == "histogram":
            check_histogram(fam, samples)
    return samples


def check_histogram(fam, samples):
    """Each series: buckets ascending and cumulative, +Inf equal to _count, a _sum."""
    series = {}
    for (name, labels), v in samples.items():
        if name == fam + "_bucket":
            rest = frozenset((k, x) for k, x in labels if k != "le")
            series.setdefault(rest, []).append((parse_value(dict(labels)["le"]), v))
    assert series, f"histogram {fam} has no buckets"
    for rest, buckets in series.items():
        buckets.sort()
        assert math.isinf(buckets[-1][0]), f"{fam} {dict(rest)} has no +Inf bucket"
        counts = [c for _, c in buckets]
        assert counts == sorted(counts), f"{fam} {dict(rest)}: buckets not cumulative: {buckets}"
        assert samples[(fam + "_count", rest)] == counts[-1]
        assert samples[(fam + "_sum", rest)] >= 0


def scrape(api):
    status, hdrs, body = api.request("GET", "/metrics")
    assert status == 200, (status, body[:300])
    assert hdrs["content-type"].startswith("text/plain; version=0.0.4"), hdrs
    return parse(body.decode())


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def by_state(samples, state):
    return sum(v for (n, l), v in samples.items() if n == "space_sandboxes" and dict(l)["state"] == state)


@pytest.fixture(scope="module")
def daemon():
    """A private spaced with a TCP listener (its counts are this file's alone)."""
    port, proxy = free_port(), free_port()
    d = Daemon(listen=f"127.0.0.1:{port}", args=["--proxy-listen", f"127.0.0.1:{proxy}"])
    d.port, d.proxy = port, proxy
    try:
        d.start()
        yield d
    finally:
        d.cleanup()


def admin_token(d):
    r = subprocess.run([SPACED, "--state-dir", d.state_dir, "token", "create", "--name", "ops", "--admin"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_series_move_with_a_sandbox_s_life(daemon):
    api = daemon.api
    before = scrape(api)
    sbid = api.create()
    try:
        s = scrape(api)
        assert by_state(s, "running") == by_state(before, "running") + 1
        assert value(s, "space_operation_seconds_count", op="create") == \
            value(before, "space_operation_seconds_count", op="create") + 1

        out = api.exec(sbid, "echo hello-metrics")
        assert out["stdout"] == "hello-metrics\n"
        e = scrape(api)
        assert value(e, "space_operation_seconds_count", op="exec") == \
            value(s, "space_operation_seconds_count", op="exec") + 1
        assert value(e, "space_exec_output_bytes_total") >= value(s, "space_exec_output_bytes_total") + 14

        status, _, _ = api.put_file(sbid, "/tmp/blob", b"x" * 5000)
        assert status in (200, 201), status
        assert api.get_file(sbid, "/tmp/blob") == (200, b"x" * 5000)
        f = scrape(api)
        for direction in ("write", "read"):
            assert value(f, "space_file_bytes_total", direction=direction) == \
                value(e, "space_file_bytes_total", direction=direction) + 5000

        for action, state in (("pause", "paused"), ("resume", "running"), ("suspend", "suspended"),
                              ("resume", "running")):
            was = scrape(api)
            assert api.ok("POST", f"/v1/sandboxes/{sbid}/{action}")["state"] == state
            now = scrape(api)
            assert value(now, "space_operation_seconds_count", op=action) == \
                value(was, "space_operation_seconds_count", op=action) + 1
            assert by_state(now, state) == by_state(was, state) + 1
        assert by_state(now, "suspended") == by_state(before, "suspended")
        # the agent said hello again after each resume
        assert value(now, "space_agent_reconnects_total") >= value(before, "space_agent_reconnects_total") + 1
    finally:
        was = scrape(api)
        api.delete(sbid)
    after = scrape(api)
    assert value(after, "space_operation_seconds_count", op="delete") == \
        value(was, "space_operation_seconds_count", op="delete") + 1
    assert by_state(after, "running") == by_state(before, "running")


def test_a_failed_create_counts_its_reason(daemon):
    api = daemon.api
    before = scrape(api)
    status, body = api.json("POST", "/v1/sandboxes", {"cpus": 100000})
    assert status >= 400, body
    reason = body["error"]["code"]
    after = scrape(api)
    assert value(after, "space_operation_failures_total", op="create", reason=reason) == \
        value(before, "space_operation_failures_total", op="create", reason=reason) + 1
    assert value(after, "space_operation_seconds_count", op="create") == \
        value(before, "space_operation_seconds_count", op="create") + 1
    assert by_state(after, "running") == by_state(before, "running")


def test_node_capacity_is_reported(daemon):
    s = scrape(daemon.api)
    assert value(s, "space_node_cpus") == os.cpu_count()
    assert 0 < value(s, "space_node_memory_available_bytes") <= value(s, "space_node_memory_bytes")
    st = os.statvfs(daemon.state_dir)
    assert 0 < value(s, "space_node_disk_free_bytes") <= st.f_blocks * st.f_frsize
    assert value(s, "space_lock_hold_seconds_count") > 0


def test_tcp_needs_an_administrator_s_token(daemon):
    tcp = ("127.0.0.1", daemon.port)
    status, _, _ = Api(tcp=tcp).request("GET", "/metrics")
    assert status == 401
    status, _, body = Api(tcp=tcp, token=daemon.token("acme")).request("GET", "/metrics")
    assert status == 403 and json.loads(body)["error"]["code"] == "permission_denied", body
    # the Unix socket acting for a tenant is that tenant
    status, _, _ = daemon.api.request("GET", "/metrics", headers={"Space-Tenant-Token": daemon.token("globex")})
    assert status == 403
    samples = scrape(Api(tcp=tcp, token=admin_token(daemon)))
    assert ("space_node_cpus", frozenset()) in samples


# One DNS question (A of argv[1]) over UDP to spaced's resolver inside: prints the answer's rcode.
ASK = """
import os, socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(10)
q = os.urandom(2) + struct.pack("!HHHHH", 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(l)]) + l.encode() for l in sys.argv[1].split(".")) + b"\\0" + struct.pack("!HH", 1, 1)
s.sendto(q, ("169.254.0.22", 53))
print(s.recvfrom(2048)[0][3] & 0xf)
"""


def test_dns_questions_and_refusals_are_counted(daemon):
    api = daemon.api
    sbid = api.create()  # egress "none" (the tests' default): every name is refused
    try:
        before = scrape(api)
        res = api.exec(sbid, ["python3", "-c", ASK, "web.test"])
        assert res["exit_code"] == 0 and res["stdout"] == "5\n", res  # REFUSED
        after = scrape(api)
        assert value(after, "space_dns_queries_total") == value(before, "space_dns_queries_total") + 1
        assert value(after, "space_dns_refusals_total") == value(before, "space_dns_refusals_total") + 1
    finally:
        api.delete(sbid)


def test_proxy_connections_and_refusals_are_counted(daemon):
    before = scrape(daemon.api)
    with socket.create_connection(("127.0.0.1", daemon.proxy), timeout=10) as c:
        c.sendall(b"GET / HTTP/1.1\r\nHost: no-such-sandbox\r\nConnection: close\r\n\r\n")
        head = c.recv(4096)
    assert head.startswith(b"HTTP/1.1 404"), head
    after = scrape(daemon.api)
    assert value(after, "space_proxy_connections_total") == value(before, "space_proxy_connections_total") + 1
    assert value(after, "space_proxy_refusals_total", reason="request") == \
        value(before, "space_proxy_refusals_total", reason="request") + 1
    assert value(after, "space_proxy_refusals_total", reason="busy") == \
        value(before, "space_proxy_refusals_total", reason="busy")


@pytest.mark.skipif(not os.access(PROMETHEUS, os.X_OK), reason=f"{PROMETHEUS} is not installed")
def test_prometheus_scrapes_spaced(daemon, tmp_path):
    """Debian's prometheus, scraping spaced's TCP listener each second with the admin token."""
    port = free_port()
    (tmp_path / "prometheus.yml").write_text(f"""
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: spaced
    metrics_path: /metrics
    authorization:
      type: Bearer
      credentials: {admin_token(daemon)}
    static_configs:
      - targets: ['127.0.0.1:{daemon.port}']
""")
    log = open(tmp_path / "prometheus.log", "wb")
    prom = subprocess.Popen([PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log.close()

    def query(expr):
        url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                body = json.load(r)
        except OSError:
            return None
        assert body["status"] == "success", body
        res = body["data"]["result"]
        return float(res[0]["value"][1]) if res else None

    def becomes(expr, want, what):
        wait_until(lambda: query(expr) == want, 60, f"prometheus to see {what} ({expr} == {want})", interval=0.2)

    try:
        becomes('up{job="spaced"}', 1.0, "spaced up")
        running = 'sum(space_sandboxes{job="spaced",state="running"})'
        suspended = 'sum(space_sandboxes{job="spaced",state="suspended"})'
        base_running, base_suspended = query(running), query(suspended)
        sbid = daemon.api.create()
        try:
            becomes(running, base_running + 1, "the new sandbox running")
            daemon.api.ok("POST", f"/v1/sandboxes/{sbid}/suspend")
            becomes(suspended, base_suspended + 1, "the sandbox suspended")
            becomes(running, base_running, "no more running")
        finally:
            daemon.api.delete(sbid)
        becomes(suspended, base_suspended, "the sandbox gone")
        becomes('count(space_operation_seconds_count{job="spaced",op="delete"} > 0)', 1.0, "a delete counted")
    except BaseException:
        print((tmp_path / "prometheus.log").read_text()[-3000:])
        raise
    finally:
        prom.terminate()
        try:
            prom.wait(timeout=30)
        except subprocess.TimeoutExpired:
            prom.kill()
            prom.wait()


def test_pool_claims_count_hits_and_misses(make_daemon):
    d = make_daemon(args=["--pool", "default=1"])
    wait_until(lambda: d.api.ok("GET", "/v1/version")["pools"][0]["ready"] == 1, 300, "the pool to fill")
    before = scrape(d.api)
    assert value(before, "space_pool_sandboxes") == 1 and value(before, "space_pool_target_sandboxes") == 1
    hit = d.api.create()
    miss = d.api.create(memory_mb=256)  # no pooled sandbox of this size
    after = scrape(d.api)
    assert value(after, "space_pool_claims_total", result="hit") == value(before, "space_pool_claims_total",
                                                                          result="hit") + 1
    assert value(after, "space_pool_claims_total", result="miss") == value(before, "space_pool_claims_total",
                                                                           result="miss") + 1
    assert by_state(after, "running") == by_state(before, "running") + 2
    for sbid in (hit, miss):
        d.api.delete(sbid)


def test_a_failed_build_counts_as_started_and_failed(daemon):
    from test_build import build
    before = scrape(daemon.api)
    status, events = build(daemon.api, "metrics-bad", {"Dockerfile": "FROM space:no-such-template\n"})
    assert status == 200 and events[-1]["type"] == "error", events
    names = ("space_template_builds_total", "space_template_build_failures_total", "space_template_build_seconds_count")
    # counted once the builder has exited, which may come just after its last event reached us
    wait_until(lambda: all(value(scrape(daemon.api), n) == value(before, n) + 1 for n in names), 60,
               "the failed build counted")


def test_a_build_that_makes_its_template_is_no_failure(daemon):
    from test_build import build, done
    before = scrape(daemon.api)
    status, events = build(daemon.api, "metrics-good", {"Dockerfile": "FROM space:default\nENV METRICS=1\n"})
    assert status == 200, events
    done(events)
    # its end is counted once the builder has exited, which may come just after its last event
    after = wait_until(lambda: (lambda m: m if value(m, "space_template_build_seconds_count") ==
                                value(before, "space_template_build_seconds_count") + 1 else None)(scrape(daemon.api)),
                       60, "the build's end counted")
    assert value(after, "space_template_builds_total") == value(before, "space_template_builds_total") + 1
    assert value(after, "space_template_build_failures_total") == \
        value(before, "space_template_build_failures_total")
    daemon.api.ok("DELETE", "/v1/templates/metrics-good", expect=(200, 204))


def test_driver_calls_are_counted_by_kind_and_call(daemon):
    """Every call spaced makes to an isolation driver passes one door that counts it: a
    sandbox's life shows up as its driver's create, start, pause, resume, checkpoint and
    destroy, with time spent, and a call that failed is counted as failed."""
    api = daemon.api
    kind = api.ok("GET", "/v1/version")["driver"]
    def calls(s, call, name="space_driver_calls_total"):
        return value(s, name, isolation=kind, call=call)
    before = scrape(api)
    sbid = api.create()
    try:
        for action in ("pause", "resume", "suspend", "resume"):
            api.ok("POST", f"/v1/sandboxes/{sbid}/{action}")
        mid = scrape(api)
        for call, n in (("create", 1), ("start", 1), ("pause", 1), ("checkpoint", 1), ("restore", 1)):
            assert calls(mid, call) >= calls(before, call) + n, call
        assert calls(mid, "create", "space_driver_call_seconds_total") > \
            calls(before, "create", "space_driver_call_seconds_total")
    finally:
        api.delete(sbid)
    after = scrape(api)
    assert calls(after, "destroy") == calls(mid, "destroy") + 1
    assert calls(after, "destroy", "space_driver_call_failures_total") == \
        calls(mid, "destroy", "space_driver_call_failures_total")

"""A sandbox's own settings and measures: whether a request resumes it when it is paused or
suspended (auto_resume, per sandbox), and what it uses of its CPUs, memory and disk
(GET /v1/sandboxes/{id}/metrics, `space metrics`).

Measures are checked as a user would notice them: memory used grows while a process holds
200 MiB, disk used grows after a file is written, the totals are the sandbox's size. Every wait
is a poll with a deadline.
"""

import json

from conftest import wait_until


def state(api, sbid):
    return api.ok("GET", f"/v1/sandboxes/{sbid}")["state"]


def test_auto_resume_is_chosen_per_sandbox(api):
    on, off = api.create(auto_resume=True), api.create(auto_resume=False)
    try:
        assert api.ok("GET", f"/v1/sandboxes/{on}")["auto_resume"] is True
        assert api.ok("GET", f"/v1/sandboxes/{off}")["auto_resume"] is False
        for sbid in (on, off):
            api.exec(sbid, "echo kept > /tmp/x")
            api.ok("POST", f"/v1/sandboxes/{sbid}/suspend")
        status, body = api.json("POST", f"/v1/sandboxes/{off}/exec", {"cmd": ["cat", "/tmp/x"]})
        assert status == 409 and body["error"]["state"] == "suspended", body
        assert state(api, off) == "suspended"
        status, hdrs, body = api.request("POST", f"/v1/sandboxes/{on}/exec", {"cmd": ["cat", "/tmp/x"]})
        assert (status, json.loads(body)["stdout"], hdrs.get("space-resumed")) == (200, "kept\n", "true")
        # an explicit resume still works for the one that does not resume by itself
        assert api.ok("POST", f"/v1/sandboxes/{off}/resume")["state"] == "running"
        assert api.exec(off, ["cat", "/tmp/x"])["stdout"] == "kept\n"
    finally:
        api.delete(on)
        api.delete(off)


def test_auto_resume_must_be_a_boolean(api):
    status, body = api.json("POST", "/v1/sandboxes", {"auto_resume": "yes"})
    assert status == 400 and "auto_resume" in body["error"]["message"], body


def test_auto_resume_defaults_to_the_daemons_setting(make_daemon):
    d = make_daemon(args=["--no-auto-resume"])
    sbid = d.api.create()
    assert d.api.ok("GET", f"/v1/sandboxes/{sbid}")["auto_resume"] is False
    d.api.ok("POST", f"/v1/sandboxes/{sbid}/pause")
    status, body = d.api.json("POST", f"/v1/sandboxes/{sbid}/exec", {"cmd": ["true"]})
    assert status == 409 and body["error"]["state"] == "paused", body
    # a sandbox may still ask for it
    other = d.api.create(auto_resume=True)
    d.api.ok("POST", f"/v1/sandboxes/{other}/pause")
    assert d.api.exec(other, ["echo", "up"])["stdout"] == "up\n"


MIB = 1 << 20
# A process that holds 200 MiB (every page written) until it is killed.
HOLD_200_MIB = "import time; b = b'x' * (200 << 20); open('/tmp/held', 'w').close(); time.sleep(3600)"


def samples(api, sbid, query=""):
    return api.ok("GET", f"/v1/sandboxes/{sbid}/metrics{query}")["metrics"]


def newest(api, sbid, cond, what, deadline=90):
    """The newest sample once one meets cond (polled: spaced samples every few seconds)."""
    return wait_until(lambda: (s := samples(api, sbid)) and cond(s[-1]) and s[-1], deadline, what)


def settled(api, sbid):
    """The newest sample once memory used holds still between two samples: a microVM's falls
    for a while after its start, as its guest hands back the pages it does not use."""
    def still():
        s = samples(api, sbid)
        return len(s) >= 2 and abs(s[-1]["mem_used_bytes"] - s[-2]["mem_used_bytes"]) < 16 * MIB and s[-1]
    return wait_until(still, 180, "memory used to hold still")


def test_metrics_follow_memory_disk_and_cpu(api):
    sbid = api.create(memory_mb=768, disk_mb=1024, cpus=1)
    try:
        first = settled(api, sbid)
        assert (first["mem_total_bytes"], first["disk_total_bytes"], first["cpu_count"]) == (768 * MIB, 1024 * MIB, 1)
        assert 0 < first["mem_used_bytes"] and 0 < first["disk_used_bytes"] < first["disk_total_bytes"], first
        assert first["timestamp"].endswith("Z")

        api.ok("POST", f"/v1/sandboxes/{sbid}/processes", {"cmd": ["python3", "-c", HOLD_200_MIB]}, expect=(201,))
        wait_until(lambda: api.exec(sbid, "test -e /tmp/held")["exit_code"] == 0, 60, "the 200 MiB to be held")
        newest(api, sbid, lambda s: s["mem_used_bytes"] >= first["mem_used_bytes"] + 150 * MIB,
               "memory used to grow by the 200 MiB held")

        api.exec(sbid, "head -c 100M /dev/urandom > /work/big")
        api.ok("POST", f"/v1/sandboxes/{sbid}/sync")
        newest(api, sbid, lambda s: s["disk_used_bytes"] >= first["disk_used_bytes"] + 80 * MIB,
               "disk used to grow by the 100 MiB file")

        api.ok("POST", f"/v1/sandboxes/{sbid}/processes", {"cmd": ["python3", "-c", "while True: pass"]},
               expect=(201,))
        newest(api, sbid, lambda s: s["cpu_used_pct"] > 20, "CPU used to rise while a process spins")
        assert all(0 <= s["cpu_used_pct"] <= 100 for s in samples(api, sbid))
    finally:
        api.delete(sbid)


def test_metrics_of_a_paused_sandbox_are_those_of_when_it_ran(api, sandbox):
    taken = newest(api, sandbox, lambda s: True, "a first sample")
    api.ok("POST", f"/v1/sandboxes/{sandbox}/pause")
    m = api.ok("GET", f"/v1/sandboxes/{sandbox}/metrics")
    assert m["state"] == "paused" and taken in m["metrics"], m
    assert api.ok("GET", f"/v1/sandboxes/{sandbox}")["state"] == "paused"  # reading them resumed nothing


def test_metrics_time_range_and_bad_bounds(api, sandbox):
    taken = newest(api, sandbox, lambda s: True, "a first sample")
    assert samples(api, sandbox, "?start=253402300799") == []  # the latest bound there is
    assert samples(api, sandbox, "?end=1") == []
    assert samples(api, sandbox, "?end=0") == []  # the epoch's first second, not "no bound"
    assert taken in samples(api, sandbox, "?start=1")
    for bad in ("start=abc", "end=-1", "start=253402300800", "start="):
        status, body = api.json("GET", f"/v1/sandboxes/{sandbox}/metrics?{bad}")
        assert status == 400 and "Unix seconds" in body["error"]["message"], (bad, body)
    status, body = api.json("GET", "/v1/sandboxes/000000000000/metrics")
    assert status == 404, body


def test_space_metrics_prints_a_table_and_json(api, sandbox, cli):
    taken = newest(api, sandbox, lambda s: True, "a first sample")
    r = cli("metrics", sandbox)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["TIME", "CPU", "CPUS", "MEMORY", "MiB", "DISK", "MiB"], r.stdout
    row = next(line.split() for line in lines[1:] if line.startswith(taken["timestamp"]))
    assert row[2] == "1" and row[3:6] == [f"{taken['mem_used_bytes'] / MIB:.1f}", "/", "512"], r.stdout
    r = cli("metrics", "--json", sandbox)
    assert r.returncode == 0 and taken in json.loads(r.stdout), r.stdout
    r = cli("metrics", "000000000000")
    assert r.returncode != 0 and "000000000000" in r.stderr, (r.returncode, r.stderr)


def test_space_create_no_auto_resume(api, cli):
    r = cli("create", "--no-auto-resume")
    assert r.returncode == 0, r.stderr
    sbid = r.stdout.strip()
    try:
        assert api.ok("GET", f"/v1/sandboxes/{sbid}")["auto_resume"] is False
        assert cli("pause", sbid).returncode == 0
        r = cli("exec", sbid, "--", "true")
        assert r.returncode != 0 and "paused" in r.stderr, (r.returncode, r.stderr)
        assert cli("resume", sbid).returncode == 0
        assert cli("exec", sbid, "--", "true").returncode == 0
    finally:
        api.delete(sbid)
    r = cli("create", "--auto-resume", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["auto_resume"] is True, r.stderr
    api.delete(json.loads(r.stdout)["id"])


def test_auto_resume_survives_a_restart_of_spaced(make_daemon):
    d = make_daemon()
    off = d.api.create(auto_resume=False)
    d.api.ok("POST", f"/v1/sandboxes/{off}/suspend")
    d.kill()
    again = make_daemon(state_dir=d.state_dir)
    assert again.api.ok("GET", f"/v1/sandboxes/{off}")["auto_resume"] is False
    status, body = again.api.json("POST", f"/v1/sandboxes/{off}/exec", {"cmd": ["true"]})
    assert status == 409 and body["error"]["state"] == "suspended", body

"""Many users at once: sandboxes created and used concurrently each get
their own answer, and nothing is mixed up between them.
"""

import subprocess
import threading

import pytest
from conftest import IO_TIMEOUT, SPACED
from spacetest import ISOLATION
from test_metrics_endpoint import scrape, value

# twenty at once; ten microVMs, each of which boots on a CPU of this 2-core machine's own
# (TCG) for most of its start: twenty take twice as long and show nothing ten do not
N = 10 if ISOLATION == "microvm" else 20


def test_many_sandboxes_created_and_used_concurrently(api, spaced):
    created = [None] * N
    results = [None] * N
    errors = []
    start_line = threading.Barrier(N)
    exec_line = threading.Barrier(N)

    def worker(i):
        try:
            start_line.wait(IO_TIMEOUT)
            created[i] = api.create(metadata={"e2e": "concurrency", "n": str(i)})
            exec_line.wait(IO_TIMEOUT)
            res = api.exec(created[i], ["python3", "-c", f"import os; print({i} * {i}, os.getcwd())"])
            results[i] = res
        except Exception as e:  # noqa: BLE001 - reported below with its index
            errors.append((i, repr(e)))
            start_line.abort()
            exec_line.abort()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(N)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(2 * IO_TIMEOUT)
        assert not any(t.is_alive() for t in threads), "a worker is stuck"
        if errors:
            # in full: the first failure's status and message, and what spaced logged about it
            first = [f"worker {i}: {e}" for i, e in errors if "BrokenBarrier" not in e]
            pytest.fail("\n".join(first or [f"worker {i}: {e}" for i, e in errors]) + "\n" + spaced.log_tail(60),
                        pytrace=False)
        assert len(set(created)) == N
        for i, res in enumerate(results):
            assert res["exit_code"] == 0, (i, res)
            assert res["stdout"] == f"{i * i} /work\n", (i, res)
        listed = api.ok("GET", "/v1/sandboxes?label=e2e=concurrency")["sandboxes"]
        assert sorted(sb["id"] for sb in listed) == sorted(created)
        assert all(sb["metadata"]["n"] == str(created.index(sb["id"])) for sb in listed)
    finally:
        deleters = [threading.Thread(target=api.delete, args=(sbid,)) for sbid in created if sbid]
        for t in deleters:
            t.start()
        for t in deleters:
            t.join(IO_TIMEOUT)
    assert api.ok("GET", "/v1/sandboxes?label=e2e=concurrency")["sandboxes"] == []


def test_boots_over_max_starting_wait_their_turn_and_all_start(make_daemon):
    """spaced --max-starting 1 (core/starts.h): creates asked at once boot one after the other,
    each waiting its turn rather than failing, and /metrics counts the waits."""
    d = make_daemon(args=["--max-starting", "1"])
    n = 3
    created, errors = [None] * n, []
    line = threading.Barrier(n)

    def worker(i):
        try:
            line.wait(IO_TIMEOUT)
            created[i] = d.api.create()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((i, repr(e)))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(2 * IO_TIMEOUT)
    assert not errors, errors
    for sbid in created:
        assert d.api.exec(sbid, ["true"])["exit_code"] == 0
    samples = scrape(d.api)
    assert value(samples, "space_sandbox_starts_max") == 1
    assert value(samples, "space_sandbox_starts", phase="booting") == 0
    assert value(samples, "space_sandbox_starts", phase="waiting") == 0
    # three boots of a second or more each, asked at once: at least one found the slot taken
    assert value(samples, "space_sandbox_start_waits_total") >= 1, samples


def test_max_starting_out_of_range_is_refused_at_start(tmp_path):
    for bad in ("0", "x", "1025"):
        r = subprocess.run([SPACED, "--state-dir", str(tmp_path), "--max-starting", bad], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 2 and "--max-starting wants a whole number from 1 to 1024" in r.stderr, r.stderr

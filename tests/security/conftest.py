"""Machinery of the escape and abuse suite: a private spaced, an HTTP client,
a neighbour sandbox that must not notice anything, and the per-attack guard
that checks containment and records what happened.

Every test is one attempt. It runs as root inside a fresh sandbox (the
`attack` fixture) and asserts that the attempt stayed inside. Around it the
guard:

  - samples the exec latency of a neighbour sandbox while the attack runs
    (a thread running `true` there in a loop) and compares the median with
    the larger of a baseline taken when the session started and a control of
    five execs taken just before the attack (this 2-CPU machine is shared
    with other jobs, whose load comes and goes: the control keeps their noise
    out of the verdict; both ratios are recorded). The allowed ratio holds on
    an otherwise idle machine; when other jobs hold part of the CPUs (CPU time
    spent outside this session's process tree, which holds spaced and every
    sandbox process), it grows by the share they took: what the attack may
    spend of its own allowance then comes out of a smaller remainder that the
    neighbour shares (see OtherLoad);
  - checks afterwards that the neighbour's data is unchanged (sha256 of a
    file it holds, read through the API and inside the neighbour), that
    spaced still answers, that the host's hostname and clock did not move,
    and that host canary files are intact;
  - writes one record per attempt (attempt, expected, observed, outcome,
    latencies, spaced's VmRSS) to the results file, from which
    tests/security/report.py makes the table in docs/security.md.

The daemon, client and stream helpers come from tests/support/spacetest.py,
shared with the other suites.

Environment:
  SPACE_SECURITY_RESULTS  where the results go (default:
                          tests/security/results/last-run.json)
  SPACE_SECURITY_SPACED   the spaced binary to run (default build/spaced)
  SPACE_SECURITY_LATENCY_RATIO  allowed ratio, on an idle machine, of the neighbour's exec latency
                          median during an attack to the larger of its session
                          baseline and the control before the attack (default 3)

Synchronisation is a read until an event or a poll until a condition, each
with a deadline; no test sleeps to let something happen.

Run: /usr/bin/python3 -m pytest -q tests/security
"""

import hashlib
import json
import http.client
import os
import platform
import re
import secrets
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "support"))

from spacetest import (  # noqa: E402,F401  (re-exported to the tests)
    Api, ApiError, OtherLoad, event_bytes, free_port, q, result_bytes, wait_until)
import spacetest  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")
# SPACE_SECURITY_SPACED runs another spaced binary (or build/spaced through a symlink of another
# name, which keeps a stray `pkill spaced` on a shared machine from stopping the session's daemon)
SPACED = os.environ.get("SPACE_SECURITY_SPACED", os.path.join(BUILD, "spaced"))
AGENT = os.path.join(BUILD, "space-agent")
SHIM = os.path.join(BUILD, "libspace-shim.so")

IO_TIMEOUT = 180           # seconds any single read from spaced may take
RESULTS = os.environ.get("SPACE_SECURITY_RESULTS",
                         os.path.join(ROOT, "tests", "security", "results", "last-run.json"))
LATENCY_RATIO = float(os.environ.get("SPACE_SECURITY_LATENCY_RATIO", "3"))
BASELINE_SAMPLES = 21
MIN_SAMPLES = 5            # neighbour execs sampled per attack, at least
CONTROL_SAMPLES = 5        # neighbour execs just before each attack: the machine's load of the moment
# The sampler's pause between two execs: back to back, a microVM neighbour under TCG kept one
# of this machine's two cores busy and slowed the attack it watched by as much
SAMPLE_GAP = 0.05

# Under SPACE_TEST_ISOLATION=microvm (make security-vm) every sandbox is a microVM. Root inside
# one owns a kernel of its own: mounts, raw sockets, device nodes, sethostname, ioperm act on
# that kernel and its emulated machine, so an attack that gVisor must refuse is allowed there;
# what must hold is that none of it reaches the host. A test of a refusal only gVisor makes, or
# that reads gVisor's host-side layout, is skipped under microVMs, saying why (docs/security.md
# lists them and what covers the microVM instead).
MICROVM = spacetest.ISOLATION == "microvm"
OWN_KERNEL = "in a microVM root owns its guest kernel, where this is allowed; the host is reached only through QEMU's devices (tests/vm/test_driver.py)"
HOST_LAYOUT = "it reads the sandbox's files on the host's mount of its layer; a microVM's disk is an image only its guest mounts"
AGENT_SOCKET = ("its impostor connects to the agent's socket bind-mounted into a gVisor sandbox; a microVM has none: its "
                "agent's port is a virtio-serial device the agent holds, refused to a second opener (tests/vm)")


def gvisor_only(why):
    return pytest.mark.skipif(MICROVM, reason=f"gVisor only: {why}")


def microvm_only(why):
    return pytest.mark.skipif(not MICROVM, reason=f"microVM only: {why}")


class Daemon(spacetest.Daemon):
    """The session's spaced: its own state dir under /tmp, and IO_TIMEOUT for every read."""

    def __init__(self, **kw):
        kw.setdefault("spaced", SPACED)
        kw.setdefault("prefix", "space-sec-")
        kw.setdefault("io_timeout", IO_TIMEOUT)
        super().__init__(**kw)


out_bytes = result_bytes


def wait_usable(api, sbid, timeout=90):
    """Polls until sbid runs commands; 503 (agent not connected) and 500 are tolerated meanwhile."""
    def ready():
        try:
            status, body = api.json("POST", f"/v1/sandboxes/{sbid}/exec", {"cmd": ["true"]}, timeout=30)
        except (OSError, http.client.HTTPException):
            return False
        return status == 200 and body["exit_code"] == 0
    wait_until(ready, timeout, f"sandbox {sbid} to run commands again", interval=0.2)


def sandbox_state(api, sbid):
    status, body = api.json("GET", f"/v1/sandboxes/{sbid}")
    if status == 404:
        return "gone", None
    assert status == 200, (status, body)
    return body["state"], body.get("reason")


# --------------------------------------------------------------------------
# the host as the attacks must leave it


class Host:
    """Things on the host an escape would reach: canary files with a secret
    content in places a sandbox might try to read or overwrite."""

    def __init__(self, state_dir):
        self.secret = "space-sec-canary-" + secrets.token_hex(16)
        self.dir = tempfile.mkdtemp(prefix="space-sec-canary-")
        self.canaries = [os.path.join(self.dir, "canary.txt"), os.path.join(state_dir, "canary.txt"),
                         os.path.join("/tmp", "space-sec-canary-" + secrets.token_hex(4) + ".txt")]
        for p in self.canaries:
            with open(p, "w") as f:
                f.write(self.secret + "\n")
        self.sums = {p: sha256_file(p) for p in self.canaries}
        self.hostname = socket.gethostname()
        self.clock_offset = time.time() - time.monotonic()
        self.agent_sum = sha256_file(AGENT)
        self.shim_sum = sha256_file(SHIM) if os.path.exists(SHIM) else None

    def check(self):
        """Problems found on the host: [] when untouched."""
        bad = []
        for p, s in self.sums.items():
            if not os.path.exists(p) or sha256_file(p) != s:
                bad.append(f"canary {p} changed")
        if socket.gethostname() != self.hostname:
            bad.append(f"host name changed to {socket.gethostname()!r}")
        drift = (time.time() - time.monotonic()) - self.clock_offset
        if abs(drift) > 5:
            bad.append(f"host wall clock moved by {drift:.1f} s against the monotonic clock")
        if sha256_file(AGENT) != self.agent_sum:
            bad.append("the agent binary on the host changed")
        if self.shim_sum and sha256_file(SHIM) != self.shim_sum:
            bad.append("the shim on the host changed")
        return bad

    def cleanup(self):
        for p in self.canaries:
            try:
                os.unlink(p)
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


def sha256_file(p):
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# --------------------------------------------------------------------------
# the neighbour


class Neighbour:
    """A sandbox that holds a file of known sha256 and answers execs; its exec
    latency is the measure of whether spaced stays responsive."""

    PATH = "/work/neighbour.bin"

    def __init__(self, api, sbid):
        self.api = api
        self.id = sbid
        data = os.urandom(1 << 20)
        self.sum = hashlib.sha256(data).hexdigest()
        status, _, body = api.put_file(sbid, self.PATH, data)
        assert status == 201, (status, body)
        self.baseline = []
        self.baseline_median = None

    def exec_ms(self, timeout=IO_TIMEOUT):
        """One exec of `true` in the neighbour: its latency in ms, or None when it failed."""
        t0 = time.monotonic()
        try:
            status, body = self.api.json("POST", f"/v1/sandboxes/{self.id}/exec", {"cmd": ["true"]},
                                         timeout=timeout)
        except (OSError, http.client.HTTPException):
            return None
        if status != 200 or body.get("exit_code") != 0:
            return None
        return (time.monotonic() - t0) * 1000

    def measure_baseline(self):
        for _ in range(3):      # warm-up
            self.exec_ms()
        self.baseline = [self.exec_ms() for _ in range(BASELINE_SAMPLES)]
        assert all(x is not None for x in self.baseline), "the neighbour failed to exec at baseline"
        self.baseline_median = statistics.median(self.baseline)

    def check(self):
        """Problems with the neighbour's data or liveness: [] when it is intact."""
        bad = []
        status, data = self.api.get_file(self.id, self.PATH)
        if status != 200 or hashlib.sha256(data).hexdigest() != self.sum:
            bad.append(f"neighbour file changed or unreadable through the API (status {status})")
        try:
            res = self.api.exec(self.id, ["sha256sum", self.PATH])
            if res["exit_code"] != 0 or not res["stdout"].startswith(self.sum):
                bad.append(f"neighbour file changed inside the neighbour: {res}")
        except (ApiError, OSError, http.client.HTTPException) as e:
            bad.append(f"neighbour exec failed: {e}")
        return bad


class Sampler(threading.Thread):
    """Runs execs in the neighbour in a loop until stopped, SAMPLE_GAP apart; keeps their
    latencies."""

    def __init__(self, neighbour):
        super().__init__(daemon=True)
        self.neighbour = neighbour
        self.samples = []
        self.failures = 0
        self._halt = threading.Event()

    def run(self):
        while not self._halt.is_set():
            ms = self.neighbour.exec_ms()
            if ms is None:
                self.failures += 1
            else:
                self.samples.append(ms)
            self._halt.wait(SAMPLE_GAP)

    def stop(self):
        # A quick attack leaves too few samples for a median: take a few more.
        deadline = time.monotonic() + 120
        while len(self.samples) < MIN_SAMPLES and time.monotonic() < deadline and self.is_alive():
            time.sleep(0.02)
        self._halt.set()
        self.join(timeout=IO_TIMEOUT)


# --------------------------------------------------------------------------
# results


class Results:
    def __init__(self, path):
        self.path = path
        self.meta = {}
        self.records = []

    def add(self, rec):
        self.records.append(rec)
        self.save()

    def save(self):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"meta": self.meta, "attempts": self.records}, f, indent=1)
            f.write("\n")
        os.replace(tmp, self.path)


def docstring_parts(fn):
    """(attempt, expected) from a test's docstring: its first paragraph, and the text after
    'Expected:' (or 'Expected (qualifier):', the qualifier kept)."""
    doc = (fn.__doc__ or fn.__name__).strip()
    first = doc.split("\n\n")[0].replace("\n", " ").strip()
    expected = ""
    m = re.search(r"Expected(\s*\([^)]*\))?:", doc)
    if m:
        qualifier = (m.group(1) or "").strip()
        expected = " ".join((qualifier + " " + doc[m.end():]).split())
    return first, expected


# --------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="session")
def spaced():
    for binary in (SPACED, AGENT):
        if not os.access(binary, os.X_OK):
            pytest.exit(f"{binary} is missing: run `make` first", returncode=2)
    e2b = free_port()  # its E2B front too: an edge of its own (test_api_edge.py)
    d = Daemon(listen=f"127.0.0.1:{free_port()}", args=["--e2b-listen", f"127.0.0.1:{e2b}"])
    d.e2b = ("127.0.0.1", e2b)
    try:
        d.start()
        yield d
    finally:
        d.cleanup()


@pytest.fixture(scope="session")
def api(spaced):
    return spaced.api


@pytest.fixture(scope="session")
def tenants(spaced):
    """API clients of two tenants over the daemon's TCP listener, each with its own token."""
    host, port = spaced.listen.rsplit(":", 1)
    return {name: Api(tcp=(host, int(port)), token=spaced.token(name), io_timeout=IO_TIMEOUT)
            for name in ("alice", "mallory")}


@pytest.fixture(scope="session")
def host(spaced):
    h = Host(spaced.state_dir)
    yield h
    h.cleanup()


@pytest.fixture(scope="session")
def results(spaced):
    r = Results(RESULTS)
    r.meta = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": platform.node(),
              "cpus": os.cpu_count(), "kernel": platform.release(), "latency_ratio_allowed": LATENCY_RATIO}
    yield r
    r.meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    r.save()


@pytest.fixture(scope="session")
def neighbour(api, spaced, results):
    sbid = api.create(memory_mb=256)
    n = Neighbour(api, sbid)
    n.measure_baseline()
    results.meta["neighbour_baseline_ms"] = [round(x, 1) for x in n.baseline]
    results.meta["neighbour_baseline_median_ms"] = round(n.baseline_median, 1)
    results.meta["spaced_rss_kib_at_start"] = spaced.rss_kib()
    results.save()
    yield n
    api.delete(sbid)


class Attack:
    """The sandbox an attempt runs in, and what the test observed."""

    def __init__(self, api, spaced, sbid):
        self.api = api
        self.spaced = spaced
        self.id = sbid
        self.notes = []
        self.contained = None     # False for a documented limit that is not contained
        # True for an attempt on the administrator's own API socket, which the neighbour's
        # sampler uses too: its requests may then be refused like everyone else's
        self.saturates_api = False

    def note(self, text):
        """Records what was observed (goes into the results table)."""
        self.notes.append(str(text))

    def run(self, cmd, timeout=None, **kw):
        """Runs cmd as root in the attacking sandbox; the exec result. With a timeout (the
        exec's own), the client waits for the answer that long and a minute more."""
        if timeout is None:
            return self.api.exec(self.id, cmd, **kw)
        try:
            return self.api.ok("POST", f"/v1/sandboxes/{self.id}/exec", {"cmd": cmd, "timeout": timeout, **kw},
                               expect=(200,), timeout=timeout + 60)
        except TimeoutError:
            pytest.fail(f"no answer to an exec with a {timeout} s timeout in {timeout + 60} s\n" + self.diagnosis())

    def diagnosis(self):
        """What spaced and the sandbox say of themselves: for a failure's message."""
        lines = []
        try:
            lines.append(f"sandbox state: {self.state()}")
        except (OSError, http.client.HTTPException, AssertionError) as e:
            lines.append(f"sandbox state unknown: {e}")
        console = os.path.join(self.spaced.state_dir, "sandboxes", self.id, "vm", "console.log")
        if os.path.exists(console):
            with open(console, "rb") as f:
                lines.append("guest console (end):\n" + f.read()[-3000:].decode(errors="replace"))
        lines.append(f"host disk free: {shutil.disk_usage(self.spaced.state_dir).free >> 20} MiB")
        lines.append("spaced log (end):\n" + self.spaced.log_tail(40))
        return "\n".join(lines)

    def sh(self, script, timeout=None, **kw):
        """Runs a shell script as root in the attacking sandbox."""
        return self.run(["/bin/bash", "-c", script], timeout, **kw)

    def py(self, code, timeout=None, **kw):
        """Runs a Python program as root in the attacking sandbox."""
        return self.run(["python3", "-c", code], timeout, **kw)

    def state(self):
        return sandbox_state(self.api, self.id)

    def read_layer(self, rel):
        """The bytes of a file in this sandbox's writable layer, read on the host."""
        with open(self.spaced.layer(self.id, rel), "rb") as f:
            return f.read()


def make_attack(request, api, spaced, neighbour, host, results, create_fields):
    """Creates the attacking sandbox, samples the neighbour meanwhile, and after the
    test checks containment and records the attempt."""
    sbid = api.create(**create_fields)
    atk = Attack(api, spaced, sbid)
    rss0 = spaced.rss_kib()
    # the machine's load right now, before the attack: other jobs share this host
    load0 = OtherLoad()
    control = [ms for ms in (neighbour.exec_ms() for _ in range(CONTROL_SAMPLES)) if ms is not None]
    control_median = statistics.median(control) if control else neighbour.baseline_median
    reference = max(neighbour.baseline_median, control_median)
    load1 = OtherLoad()
    sampler = Sampler(neighbour)
    sampler.start()
    t0 = time.monotonic()
    yield atk
    elapsed = time.monotonic() - t0
    sampler.stop()
    load2 = OtherLoad()
    other_before, other_during = load1.since(load0), load2.since(load1)
    allowed = LATENCY_RATIO * OtherLoad.scale(other_before, other_during)
    rss1 = spaced.rss_kib() if spaced.alive() else None
    problems = []
    if not spaced.alive():
        problems.append(f"spaced died (status {spaced.proc.returncode}):\n{spaced.log_tail()}")
    else:
        try:
            if not spaced.healthy():
                problems.append("spaced does not answer /v1/health")
        except BaseException as e:  # pytest.fail inside healthy()
            problems.append(f"spaced health: {e}")
    if spaced.alive():
        problems += neighbour.check()
    problems += host.check()
    state = None
    if spaced.alive():
        try:
            state, reason = atk.state()
            if reason:
                state = f"{state} ({reason})"
        except (ApiError, OSError, http.client.HTTPException) as e:
            state = f"unknown: {e}"
    median = statistics.median(sampler.samples) if sampler.samples else None
    ratio = median / neighbour.baseline_median if median else None
    ref_ratio = median / reference if median else None
    if sampler.failures and atk.saturates_api:
        atk.note(f"({sampler.failures} of the neighbour's execs, sent through the same saturated socket, "
                 "were refused meanwhile)")
    elif sampler.failures:
        problems.append(f"{sampler.failures} neighbour execs failed during the attack")
    if ref_ratio is None and not atk.saturates_api:
        problems.append("no neighbour exec answered during the attack")
    elif ref_ratio is not None and ref_ratio > allowed:
        problems.append(f"neighbour exec latency median {median:.0f} ms is {ref_ratio:.1f}x the larger of its "
                        f"session baseline {neighbour.baseline_median:.0f} ms and the control {control_median:.0f} ms "
                        f"taken just before (allowed {allowed:.1f}x: {LATENCY_RATIO}x, scaled by the machine's "
                        f"other load of {other_before:.2f} CPUs before and {other_during:.2f} during)")

    attempt, expected = docstring_parts(request.function)
    marker = request.node.get_closest_marker("xfail")
    rep = getattr(request.node, "rep_call", None)
    outcome = "passed" if rep is not None and rep.passed else ("failed" if rep is not None else "error")
    if marker is not None and rep is not None and rep.skipped:
        outcome = "xfailed"
    results.add({
        "test": request.node.name,
        "attempt": attempt,
        "expected": expected,
        "observed": "; ".join(atk.notes),
        "outcome": outcome,
        "contained": atk.contained if atk.contained is not None else (outcome in ("passed",)),
        "xfail_reason": marker.kwargs.get("reason") if marker is not None else None,
        "sandbox_after": state,
        "neighbour_median_ms": round(median, 1) if median else None,
        "neighbour_samples": len(sampler.samples),
        "neighbour_ratio": round(ratio, 2) if ratio else None,
        "baseline_median_ms": round(neighbour.baseline_median, 1),
        "control_median_ms": round(control_median, 1),
        "reference_ratio": round(ref_ratio, 2) if ref_ratio else None,
        "allowed_ratio": round(allowed, 2),
        "other_load_cpus": [round(other_before, 2), round(other_during, 2)],
        "spaced_rss_kib": [rss0, rss1],
        "seconds": round(elapsed, 1),
        "problems": problems,
    })
    if spaced.alive():
        try:
            api.delete(sbid)
        except (ApiError, OSError, http.client.HTTPException):
            pass
    if problems:
        pytest.fail("containment check after the attack:\n  " + "\n  ".join(problems))


@pytest.fixture
def attack(request, api, spaced, neighbour, host, results):
    """A fresh sandbox (1 cpu, 256 MiB) to attack from, guarded and recorded."""
    fields = {"cpus": 1, "memory_mb": 256}
    marker = request.node.get_closest_marker("sandbox")
    if marker:
        fields.update(marker.kwargs)
    yield from make_attack(request, api, spaced, neighbour, host, results, fields)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call":
        item.rep_call = rep


def pytest_configure(config):
    config.addinivalue_line("markers", "sandbox(**fields): create fields of the attacking sandbox")
    config.addinivalue_line("markers", "rss_limit_mib(n): how much spaced's RSS may grow under the attack")

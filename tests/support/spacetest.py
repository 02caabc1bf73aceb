"""What the test suites share: a private spaced, an HTTP client of its API, and waiting.

tests/e2e, tests/sdk and tests/security each start their own build/spaced
with its own state directory and socket under /tmp (never the system's
spaced); this module is that daemon (Daemon), a small client of the API
(Api, with NDJSON streams), and wait_until, the one way the suites wait:
a poll of a condition with a deadline, never a sleep standing in for an
event. Each suite's conftest.py imports from here and adds its fixtures.
"""

import base64
import fcntl
import glob
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")
SPACED = os.path.join(BUILD, "spaced")
SPACE = os.path.join(BUILD, "space")
AGENT = os.path.join(BUILD, "space-agent")

START_DEADLINE = 15 * 60   # a fresh machine builds the default template at start
IO_TIMEOUT = 120           # seconds any single read from spaced may take, unless a suite says otherwise
CREATE_TIMEOUT = 300       # ... and a create's answer
# SPACE_TEST_ISOLATION=microvm runs a suite's sandboxes as microVMs (spaced --isolation); a
# test that cannot apply to one kind says why in its skip reason (docs/microvm.md lists them).
ISOLATION = os.environ.get("SPACE_TEST_ISOLATION", "")
SANDBOX_ID_CHARS = set("0123456789abcdef")


# --------------------------------------------------------------------------
# waiting


def wait_until(cond, timeout, what, interval=0.05):
    """Polls cond() until it returns a true value, which is returned; fails at the deadline."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = cond()
        if last:
            return last
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what} (last: {last!r})")
        time.sleep(interval)


# --------------------------------------------------------------------------
# HTTP client


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP/1.1 over a Unix socket."""

    def __init__(self, path, timeout=IO_TIMEOUT, blocksize=1 << 20):
        super().__init__("space", timeout=timeout, blocksize=blocksize)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class ApiError(AssertionError):
    pass


class Stream:
    """An open NDJSON (or error) response; iterating yields events as they arrive."""

    def __init__(self, conn, resp):
        self.conn = conn
        self.resp = resp
        self.status = resp.status
        self.headers = {k.lower(): v for k, v in resp.getheaders()}
        self._buf = b""
        self._eof = False
        self.body = None
        if not self.headers.get("content-type", "").startswith("application/x-ndjson"):
            self.body = resp.read()
            self.close()

    def json_body(self):
        return json.loads(self.body) if self.body else None

    def next_event(self):
        """The next event, or None at the end of the stream."""
        while b"\n" not in self._buf:
            if self._eof:
                if self._buf.strip():
                    raise ApiError(f"stream ended inside a line: {self._buf!r}")
                return None
            chunk = self.resp.read1(65536)
            if not chunk:
                self._eof = True
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        if not line.strip():
            return self.next_event()
        return json.loads(line)

    def __iter__(self):
        while True:
            ev = self.next_event()
            if ev is None:
                return
            yield ev

    def close(self):
        try:
            self.conn.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Api:
    """A small client of the space API.

    request() returns (status, headers, body bytes); the json helpers decode
    the body; stream() opens an NDJSON stream read line by line as it comes.
    """

    def __init__(self, socket_path=None, tcp=None, token=None, io_timeout=IO_TIMEOUT):
        self.socket_path = socket_path
        self.tcp = tcp          # (host, port)
        self.token = token
        self.io_timeout = io_timeout

    def connection(self, timeout=None):
        timeout = timeout or self.io_timeout
        if self.tcp:
            return http.client.HTTPConnection(self.tcp[0], self.tcp[1], timeout=timeout, blocksize=1 << 20)
        return UnixHTTPConnection(self.socket_path, timeout=timeout)

    def _send(self, conn, method, path, body=None, raw=None, headers=None):
        hdrs = {}
        if self.token:
            hdrs["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        elif raw is not None:
            data = raw
            if isinstance(raw, (bytes, bytearray)):
                hdrs["Content-Length"] = str(len(raw))
            else:  # a file: http.client sends it in blocks
                hdrs["Content-Length"] = str(os.fstat(raw.fileno()).st_size - raw.tell())
        if method in ("POST", "PUT") and data is None:
            hdrs["Content-Length"] = "0"
        hdrs.update(headers or {})
        conn.request(method, path, body=data, headers=hdrs)
        return conn.getresponse()

    def request(self, method, path, body=None, raw=None, headers=None, timeout=None):
        if timeout is None and method == "POST" and path.split("?")[0].endswith(("/resume", "/fork")):
            timeout = max(self.io_timeout, CREATE_TIMEOUT)  # a boot, as a create's is
        conn = self.connection(timeout)
        try:
            resp = self._send(conn, method, path, body, raw, headers)
            data = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
        finally:
            conn.close()

    def json(self, method, path, body=None, raw=None, headers=None, timeout=None):
        """(status, decoded JSON body or None)."""
        status, hdrs, data = self.request(method, path, body, raw, headers, timeout)
        if not data:
            return status, None
        try:
            return status, json.loads(data)
        except ValueError:
            raise ApiError(f"{method} {path}: {status} with a body that is not JSON: {data[:300]!r}")

    def ok(self, method, path, body=None, expect=(200, 201, 204), **kw):
        """The decoded body of a request that must succeed."""
        status, data = self.json(method, path, body, **kw)
        if status not in expect:
            raise ApiError(f"{method} {path} {body!r}: expected {expect}, got {status} {data}")
        return data

    def stream(self, method, path, body=None, raw=None, headers=None, timeout=None):
        conn = self.connection(timeout)
        resp = self._send(conn, method, path, body, raw, headers)
        return Stream(conn, resp)

    # -- conveniences for what almost every test does

    def create(self, **fields):
        # a create may first wait for what it needs in the machine's cache (a microVM template's
        # booted image), which another suite's spaced may be building on a cold, busy machine
        sb = self.ok("POST", "/v1/sandboxes", fields, expect=(201,), timeout=max(self.io_timeout, CREATE_TIMEOUT))
        assert set(sb["id"]) <= SANDBOX_ID_CHARS, sb
        return sb["id"]

    def delete(self, sbid):
        status, _, _ = self.request("DELETE", f"/v1/sandboxes/{sbid}")
        assert status in (204, 404), f"DELETE {sbid}: {status}"

    def exec(self, sbid, cmd, **fields):
        """Runs cmd (argv list or shell string); the result object. Fails on a non-200."""
        fields["cmd"] = cmd
        return self.ok("POST", f"/v1/sandboxes/{sbid}/exec", fields, expect=(200,))

    def exec_stream(self, sbid, cmd, **fields):
        fields["cmd"] = cmd
        fields["stream"] = True
        return self.stream("POST", f"/v1/sandboxes/{sbid}/exec", fields)

    def put_file(self, sbid, path, data, timeout=None):
        """(status, headers, body) of writing data (bytes or a file) at path in sbid."""
        return self.request("PUT", f"/v1/sandboxes/{sbid}/files?path={q(path)}", raw=data, timeout=timeout)

    def get_file(self, sbid, path, timeout=None):
        """(status, bytes) of reading path in sbid."""
        status, _, data = self.request("GET", f"/v1/sandboxes/{sbid}/files?path={q(path)}", timeout=timeout)
        return status, data


def event_bytes(ev):
    """The output bytes of a stdout/stderr event, whichever encoding it used."""
    if "data" in ev:
        return ev["data"].encode("utf-8")
    return base64.b64decode(ev["data_b64"])


def result_bytes(res, name="stdout"):
    """stdout or stderr of a non-stream exec result, as bytes."""
    if name in res:
        return res[name].encode("utf-8")
    return base64.b64decode(res.get(name + "_b64", ""))


def collect(stream):
    """Reads a whole exec/output stream: (stdout bytes, stderr bytes, events)."""
    out, err, events = bytearray(), bytearray(), []  # bytes += bytes copies it all each time
    for ev in stream:
        events.append(ev)
        if ev["type"] == "stdout":
            out += event_bytes(ev)
        elif ev["type"] == "stderr":
            err += event_bytes(ev)
    return bytes(out), bytes(err), events


def q(path):
    """A path for a ?path= query."""
    return urllib.parse.quote(path, safe="/")


# --------------------------------------------------------------------------
# the daemon


# Every test spaced on the machine has a network slot of its own, whichever suite or process
# made it (make test runs a gVisor and a microVM chain of suites at once): slot N is the transit
# range 10.214.N.0/24 and the DNS port NET_SLOT_PORT + N, held by a lock on NET_SLOTS/N for as
# long as the Daemon is not cleaned up (or its process lives).
NET_SLOTS = "/run/space-test-slots"
NET_RULE_PRIO = 100  # daemon/net/net.h
NET_SLOT_PORT = 20000


def net_slot():
    """(slot, descriptor holding its lock) of a free network slot."""
    os.makedirs(NET_SLOTS, exist_ok=True)
    first = os.getpid() % 256
    for i in range(256):
        n = (first + i) % 256
        fd = os.open(os.path.join(NET_SLOTS, str(n)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return n, fd
    raise RuntimeError(f"all 256 test network slots in {NET_SLOTS} are held")


class Daemon:
    """One build/spaced with its own state directory and socket (and a TCP listener with listen)."""

    count = 0
    transits = {}  # state dir: the transit range of the first Daemon on it in this process

    def __init__(self, state_dir=None, listen=None, agent=AGENT, cwd=ROOT, spaced=SPACED, prefix="space-test-",
                 io_timeout=IO_TIMEOUT, args=(), env=None):
        self.state_dir = state_dir or tempfile.mkdtemp(prefix=prefix)
        self.socket = os.path.join(self.state_dir, "space.sock")
        self.listen = listen
        self.args = list(args)  # more options, e.g. --tls-cert FILE --tls-key FILE
        self.env = env  # more environment, e.g. a test hook
        self.agent = agent
        self.cwd = cwd
        self.spaced = spaced
        self.io_timeout = io_timeout
        self.log_path = os.path.join(self.state_dir, "spaced.log")
        self.proc = None
        self.api = Api(self.socket, io_timeout=io_timeout)
        Daemon.count += 1
        slot, self.slot_fd = net_slot()
        self.transit = f"10.214.{slot}.0/24"
        self.dns_port = NET_SLOT_PORT + slot
        # A spaced started again on a state dir keeps its sandboxes' transit range (spaced
        # refuses another): the range the first one had, whose slot that Daemon still holds.
        self.transit = Daemon.transits.setdefault(os.path.realpath(self.state_dir), self.transit)

    def argv(self):
        a = [self.spaced, "--state-dir", self.state_dir, "--socket", self.socket, "--agent", self.agent]
        # Traffic in tests stays on this machine (tests/README.md): sandboxes of a test's spaced
        # reach nothing beyond themselves unless the test says otherwise (tests/net make their
        # own namespaces for that), and each spaced has a transit range of its own.
        if "--default-egress" not in self.args:
            a += ["--default-egress", "none"]
        if "--net-transit" not in self.args:
            a += ["--net-transit", self.transit]
        if "--dns-port" not in self.args:
            a += ["--dns-port", str(self.dns_port)]
        if self.listen:
            a += ["--listen", self.listen]
        if ISOLATION and "--isolation" not in self.args:
            a += ["--isolation", ISOLATION]  # the suites run against either kind of sandbox
        return a + self.args

    def start(self, deadline=START_DEADLINE, wait=True):
        """Starts spaced and, unless wait is False, waits until its API answers."""
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT, cwd=self.cwd,
                                     stdin=subprocess.DEVNULL, env={**os.environ, **(self.env or {})})
        log.close()
        if wait:
            self.wait_healthy(deadline)
        return self

    def log_tail(self, n=30):
        try:
            with open(self.log_path, "rb") as f:
                return b"".join(f.readlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def healthy(self):
        if not self.alive():
            pytest.fail(f"spaced exited with status {self.proc.returncode}:\n{self.log_tail()}")
        try:
            status, body = self.api.json("GET", "/v1/health", timeout=10)
        except (OSError, http.client.HTTPException):
            return False
        return status == 200 and body.get("status") == "ok"

    def wait_healthy(self, deadline=START_DEADLINE):
        wait_until(self.healthy, deadline, f"spaced on {self.socket} to answer /v1/health", interval=0.1)

    def kill(self, sig=signal.SIGKILL):
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def stop(self):
        if self.alive():
            self.kill(signal.SIGTERM)

    def token(self, tenant=None):
        """A new bearer token (of tenant, if given), made with `spaced token create`."""
        argv = [self.spaced, "--state-dir", self.state_dir, "token", "create"]
        if tenant:
            argv += ["--name", tenant, "--tenant", tenant]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    def rss_kib(self):
        """spaced's resident set size (VmRSS), KiB."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def runsc_root(self):
        return os.path.join(self.state_dir, "runsc")

    def sandbox_dir(self, sbid):
        return os.path.join(self.state_dir, "sandboxes", sbid)

    def layer(self, sbid, *rel):
        """A path in the sandbox's writable layer on the host (its disk, mounted)."""
        return os.path.join(self.sandbox_dir(sbid), "layer", "upper", *rel)

    def cleanup(self):
        """Deletes every sandbox and snapshot, stops spaced, removes what is left: containers,
        mounts, files. SPACE_TEST_KEEP_LOG=PATH keeps a copy of the log."""
        if self.alive():
            for kind in ("sandboxes", "snapshots"):
                try:
                    _, body = self.api.json("GET", f"/v1/{kind}", timeout=30)
                    for item in (body or {}).get(kind, []):
                        try:
                            self.api.request("DELETE", f"/v1/{kind}/{item['id']}", timeout=self.io_timeout)
                        except (OSError, http.client.HTTPException):
                            pass
                except (OSError, http.client.HTTPException, ValueError):
                    pass
        self.stop()
        root = self.runsc_root()
        if os.path.isdir(root):
            r = subprocess.run(["runsc", "--root", root, "list", "-quiet"], capture_output=True, text=True)
            for cid in r.stdout.split():
                subprocess.run(["runsc", "--root", root, "kill", cid, "KILL"], capture_output=True)
                subprocess.run(["runsc", "--root", root, "delete", "--force", cid], capture_output=True)
        # a microVM's QEMU outlives spaced by design (a restart adopts it): one spaced did not
        # delete (a pool's warm sandboxes, which no listing shows) is ended here
        for pidfile in glob.glob(os.path.join(self.state_dir, "**", "qemu.pid"), recursive=True):
            try:
                with open(pidfile) as f:
                    pid = int(f.read().split()[0])
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().startswith("qemu"):
                        os.kill(pid, signal.SIGKILL)
            except (OSError, ValueError, IndexError):
                pass
        keep = os.environ.get("SPACE_TEST_KEEP_LOG")
        if keep and os.path.exists(self.log_path):
            shutil.copyfile(self.log_path, keep)
        for mnt in mounts_under(self.state_dir):
            subprocess.run(["umount", "-l", mnt], capture_output=True)
        if not mounts_under(self.state_dir):
            shutil.rmtree(self.state_dir, ignore_errors=True)
        # spaced's nftables table outlives it (its sandboxes' rules do): with them all gone, it
        # goes too. Left behind, a machine's tables would pile up to the kernel's limit of
        # 1,024 hooks on one hook point, after which no spaced can start.
        subprocess.run(["nft", "delete", "table", "inet", f"space_{net_tag(self.state_dir)}"], capture_output=True)
        # so do the routing rules of its transit range (daemon/net/net.c, NET_RULE_PRIO and the
        # next): kept by spaced so that its sandboxes stay closed while it is down, they would
        # pile up on the machine, one pair per range a test used
        ranges = {self.transit} | {self.args[i + 1] for i, a in enumerate(self.args[:-1]) if a == "--net-transit"}
        for rng in ranges:
            for prio in (NET_RULE_PRIO, NET_RULE_PRIO + 1):
                subprocess.run(["ip", "rule", "del", "priority", str(prio), "from", rng], capture_output=True)
        if self.slot_fd is not None:
            os.close(self.slot_fd)  # the transit range and DNS port go back to the machine
            self.slot_fd = None


def _ticks_of_tree(root):
    """CPU clock ticks spent by root's process tree: each live process's own and its reaped
    children's (so a process that exits between two readings is still counted, by its parent)."""
    parent, spent = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # after the command: state ppid ... utime(12) stime(13) cutime(14) cstime(15)
        parent[int(name)] = int(fields[1])
        spent[int(name)] = sum(int(x) for x in fields[11:15])
    total = 0
    for pid, ticks in spent.items():
        p, hops = pid, 0
        while p not in (0, 1, root) and hops < 64:
            p, hops = parent.get(p, 0), hops + 1
        if p == root:
            total += ticks
    return total


def _busy_ticks():
    """CPU clock ticks the whole machine has spent busy since boot (/proc/stat, all CPUs)."""
    with open("/proc/stat") as f:
        t = [int(x) for x in f.readline().split()[1:]]
    return sum(t) - t[3] - t[4]     # less idle and iowait


class OtherLoad:
    """The CPUs' worth of load on this machine from outside this test session between two
    readings: busy time less the time of this process's tree (pytest, spaced, its sandboxes:
    spaced is a child subreaper, so every process it starts stays in the tree).

    scale(before, during) is how much slower the neighbour may fairly be beside that load:
    all the CPUs over those the heavier of the two readings left to this session."""

    CPUS = os.cpu_count() or 1
    FLOOR = 0.25            # CPUs this session is taken to have left at the very worst

    def __init__(self):
        self.t, self.busy, self.ours = time.monotonic(), _busy_ticks(), _ticks_of_tree(os.getpid())

    def since(self, earlier):
        """Other load in CPUs between an earlier reading and this one."""
        secs = self.t - earlier.t
        if secs <= 0:
            return 0.0
        hz = os.sysconf("SC_CLK_TCK")
        other = (self.busy - earlier.busy) - (self.ours - earlier.ours)
        return max(0.0, min(self.CPUS, other / hz / secs))

    @classmethod
    def scale(cls, before, during):
        return cls.CPUS / max(cls.FLOOR, cls.CPUS - max(before, during))


def net_tag(state_dir):
    """The tag of spaced's nftables table for state_dir (daemon/net/net.c: FNV-1a, 16 bits)."""
    h = 2166136261
    for b in state_dir.encode():
        h = ((h ^ b) * 16777619) & 0xffffffff
    return f"{h & 0xffff:04x}"


def mounts_under(d):
    """Mount points at or below d, deepest first."""
    d = os.path.realpath(d)
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].replace("\\040", " ")
            if mp == d or mp.startswith(d + "/"):
                found.append(mp)
    return sorted(found, key=len, reverse=True)


def qmp(path, *commands, timeout=60):
    """QEMU's answers to commands over its monitor at path, after qmp_capabilities. A command
    is a name or (name, arguments); an answer is its reply, {"return": ...} or {"error": ...}."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(path)
        f = s.makefile("rwb")
        json.loads(f.readline())  # the greeting
        out = []
        for cmd in ("qmp_capabilities",) + commands:
            name, args = (cmd, None) if isinstance(cmd, str) else cmd
            f.write(json.dumps({"execute": name, **({"arguments": args} if args else {})}).encode() + b"\n")
            f.flush()
            while True:  # events may come between
                msg = json.loads(f.readline())
                if "return" in msg or "error" in msg:
                    out.append(msg)
                    break
        return out[1:]


def host_processes():
    """(pid, argv as a list of bytes) of every live process of the host."""
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                yield int(p), f.read().split(b"\0")
        except OSError:
            continue  # it ended meanwhile


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture(autouse=True)
def spaced_survives(request):
    """After every test that used the session's daemon (fixture `spaced`): it must still be running.
    A suite's conftest imports it to have it run around each of its tests."""
    yield
    if "spaced" in request.fixturenames:
        d = request.getfixturevalue("spaced")
        if d.proc.poll() is not None:
            pytest.fail(f"spaced died (status {d.proc.returncode}) during this test:\n{d.log_tail()}")

"""Protocol-level tests of space-agent.

Each test starts build/space-agent as an ordinary process (not PID 1) with
SPACE_AGENT_SOCK pointing at a Unix socket the test listens on, plays the
host's side of proto/agent.h over it, and checks what a host would notice.
Constants and message numbers are read from proto/agent.h itself, so the test
follows the contract rather than a copy of it.

Every wait is a read with a deadline (select/poll on the socket or a pidfd);
nothing synchronises on a fixed sleep. The agent runs on the host here, so
file tests stay inside a per-test temporary directory.

Run: /usr/bin/python3 -m pytest tests/agent
"""

import collections
import errno
import os
import re
import select
import signal
import socket
import struct
import subprocess
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGENT = os.environ.get("SPACE_AGENT_BIN", os.path.join(ROOT, "build", "space-agent"))
TIMEOUT = 10.0  # seconds any single expected event may take


def _proto_constants():
    text = open(os.path.join(ROOT, "proto", "agent.h")).read()
    consts = {}
    for name, value in re.findall(r"^\s*SP_(\w+)\s*=\s*(\d+),", text, re.M):
        consts[name] = int(value)
    for name, expr in re.findall(r"^#define SP_(\w+) \(?([0-9xa-fA-Fu *]+)\)?", text, re.M):
        consts[name] = eval(expr.replace("u", ""))
    return consts


P = _proto_constants()
HDR = struct.Struct("<IBBHI")
WINDOW = P["WINDOW"]
MAX_PAYLOAD = P["MAX_PAYLOAD"]
REQ = P["CHAN_REQ"]
NAMES = {v: k for k, v in P.items() if k.startswith(("H_", "A_"))}


class AgentError(Exception):
    def __init__(self, err, msg):
        super().__init__(f"{errno.errorcode.get(err, err)}: {msg}")
        self.err = err
        self.msg = msg


class Host:
    """The host end of one connection."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.pending = collections.deque()
        self.tag = REQ
        self.hello = None

    def new_tag(self):
        self.tag += 1
        return self.tag

    def send(self, type_, chan, payload=b""):
        self.sock.sendall(HDR.pack(len(payload), P[type_], 0, 0, chan) + payload)

    def _read_frame(self, timeout):
        """Next frame off the socket: (type name, chan, payload); None on EOF."""
        while True:
            if len(self.buf) >= HDR.size:
                ln, typ, _flags, _rsvd, chan = HDR.unpack_from(self.buf)
                assert ln <= MAX_PAYLOAD, "agent sent an oversized frame"
                if len(self.buf) >= HDR.size + ln:
                    payload = self.buf[HDR.size:HDR.size + ln]
                    self.buf = self.buf[HDR.size + ln:]
                    return NAMES.get(typ, typ), chan, payload
            r, _, _ = select.select([self.sock], [], [], timeout)
            if not r:
                raise TimeoutError("no frame from the agent within %.1fs" % timeout)
            data = self.sock.recv(1 << 20)
            if not data:
                return None
            self.buf += data

    def next(self, chan=None, timeout=TIMEOUT):
        """Next frame (optionally only of chan; others are kept for later)."""
        for i, fr in enumerate(self.pending):
            if chan is None or fr[1] == chan:
                del self.pending[i]
                return fr
        while True:
            fr = self._read_frame(timeout)
            if fr is None:
                raise EOFError("agent closed the connection")
            if chan is None or fr[1] == chan:
                return fr
            self.pending.append(fr)

    def expect(self, type_, chan, timeout=TIMEOUT):
        t, c, p = self.next(chan, timeout)
        if t == "A_ERROR" and type_ != "A_ERROR":
            err, = struct.unpack_from("<i", p)
            raise AgentError(err, p[4:].rstrip(b"\0").decode())
        assert t == type_, f"expected {type_} on {chan:#x}, got {t}"
        return p

    def expect_eof(self, timeout=TIMEOUT):
        while True:
            fr = self._read_frame(timeout)
            if fr is None:
                return
            self.pending.append(fr)

    def quiet(self, chan, seconds):
        """True if nothing arrives for chan within `seconds` (a negative check)."""
        try:
            fr = self.next(chan, timeout=seconds)
        except TimeoutError:
            return True
        self.pending.appendleft(fr)
        return False

    # ---- requests ----

    def request(self, type_, payload=b""):
        tag = self.new_tag()
        self.send(type_, tag, payload)
        return tag

    def ping(self):
        tag = self.request("H_PING")
        self.expect("A_PONG", tag)

    def exec(self, argv, env=(), cwd=None, stdin=False, timeout_ms=0, user=None, uid=0, gid=0):
        if cwd is None:  # "" means /work, which a test machine may not have
            cwd = "" if os.path.isdir("/work") else "/tmp"
        if user is not None:
            uid = gid = 0xFFFFFFFF
        strings = [user or "", cwd] + list(argv) + list(env)
        payload = struct.pack("<6I", 1 if stdin else 0, uid, gid, timeout_ms, len(argv), len(env))
        payload += b"".join(s.encode() + b"\0" for s in strings)
        tag = self.request("H_EXEC", payload)
        pid, = struct.unpack("<I", self.expect("A_STARTED", tag))
        return pid

    def collect(self, pid, credit=True, timeout=TIMEOUT):
        """Output of pid until its A_EXIT: (stdout, stderr, code, signo, flags)."""
        out, err = bytearray(), bytearray()
        while True:
            t, _, p = self.next(pid, timeout)
            if t in ("A_STDOUT", "A_STDERR"):
                (out if t == "A_STDOUT" else err).extend(p)
                if credit:
                    self.send("H_CREDIT", pid, struct.pack("<I", len(p)))
            elif t == "A_EXIT":
                code, signo, flags, _ = struct.unpack("<iiII", p)
                return bytes(out), bytes(err), code, signo, flags
            elif t == "A_CREDIT":
                continue
            else:
                raise AssertionError(f"unexpected {t} on pid {pid}")

    def write_file(self, path, data, mode=0o644, flags=0, chunk=MAX_PAYLOAD):
        tag = self.request("H_FWRITE", struct.pack("<II", mode, flags) + path.encode() + b"\0")
        self.expect("A_OK", tag)
        credit, off = WINDOW, 0
        while off < len(data):
            while credit == 0:
                credit += struct.unpack("<I", self.expect("A_CREDIT", tag))[0]
            n = min(chunk, credit, len(data) - off)
            self.send("H_DATA", tag, data[off:off + n])
            off += n
            credit -= n
        self.send("H_END", tag)
        while True:
            t, _, p = self.next(tag)
            if t == "A_END":
                return
            if t == "A_ERROR":
                err, = struct.unpack_from("<i", p)
                raise AgentError(err, p[4:].rstrip(b"\0").decode())
            assert t == "A_CREDIT", t

    def read_file(self, path, credit=True):
        tag = self.request("H_FREAD", path.encode() + b"\0")
        st = parse_stat(self.expect("A_STAT", tag))
        data = bytearray()
        while True:
            t, _, p = self.next(tag)
            if t == "A_END":
                return st, bytes(data)
            if t == "A_ERROR":
                err, = struct.unpack_from("<i", p)
                raise AgentError(err, p[4:].rstrip(b"\0").decode())
            assert t == "A_DATA", t
            data.extend(p)
            if credit:
                self.send("H_CREDIT", tag, struct.pack("<I", len(p)))

    def path_op(self, type_, path, prefix=b""):
        tag = self.request(type_, prefix + path.encode() + b"\0")
        return tag

    def stat(self, path):
        return parse_stat(self.expect("A_STAT", self.path_op("H_STAT", path)))

    def list(self, path):
        tag = self.path_op("H_LIST", path)
        entries = []
        while True:
            t, _, p = self.next(tag)
            if t == "A_END":
                return entries
            if t == "A_ERROR":
                err, = struct.unpack_from("<i", p)
                raise AgentError(err, p[4:].rstrip(b"\0").decode())
            entries.append(parse_stat(p))

    def simple(self, type_, payload):
        self.expect("A_OK", self.request(type_, payload))

    def ps(self):
        tag = self.request("H_PS")
        procs = []
        while True:
            t, _, p = self.next(tag)
            if t == "A_END":
                return procs
            assert t == "A_PROC", t
            pid, state, code, signo, started = struct.unpack_from("<IIiiQ", p)
            procs.append(dict(pid=pid, state=state, code=code, signo=signo, started=started,
                              cmd=p[24:].rstrip(b"\0").decode()))


def parse_stat(p):
    """struct sp_stat, the name, and struct sp_stat_ext with its strings (all of it, always)."""
    size, mtime, mode, typ, uid, gid = struct.unpack_from("<QqIIII", p)
    end = p.index(b"\0", 32)
    nsec, rsvd = struct.unpack_from("<II", p, end + 1)
    owner, group, target, path, rest = p[end + 9:].split(b"\0", 4)
    assert rest == b"" and rsvd == 0 and nsec < 10**9
    return dict(size=size, mtime=mtime, mode=mode, type=typ, uid=uid, gid=gid,
                name=p[32:end].decode(), mtime_nsec=nsec, owner=owner.decode(), group=group.decode(),
                target=target.decode(), path=path.decode())


def wait_pid_gone(pid, timeout=TIMEOUT):
    """Waits (event-driven, through a pidfd) until pid has exited."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        r, _, _ = select.select([fd], [], [], timeout)
        assert r, f"process {pid} still alive"
    finally:
        os.close(fd)


class Agent:
    """A space-agent process and the listening socket it connects to."""

    def __init__(self, tmp, wrap=()):
        self.tmp = tmp
        self.path = os.path.join(tmp, "agent.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(8)
        env = dict(os.environ, SPACE_AGENT_SOCK=self.path, SPACE_SECRET="hidden")
        self.proc = subprocess.Popen([*wrap, AGENT], env=env, stdin=subprocess.DEVNULL,
                                     stderr=open(os.path.join(tmp, "agent.log"), "wb"))
        self.host = None

    def accept(self, timeout=TIMEOUT):
        r, _, _ = select.select([self.listener], [], [], timeout)
        assert r, "agent did not connect"
        conn, _ = self.listener.accept()
        host = Host(conn)
        t, chan, p = host.next()
        assert t == "A_HELLO" and chan == 0
        host.hello = dict(zip(("version", "max_pid", "boot_id", "features", "rsvd"), struct.unpack("<IIQII", p)))
        self.host = host
        return host

    def reconnect(self):
        """Closes the current connection and takes the agent's next one."""
        self.host.sock.close()
        return self.accept()

    def close(self):
        if self.host:
            self.host.sock.close()
        self.listener.close()
        self.proc.kill()
        self.proc.wait()
        log = open(os.path.join(self.tmp, "agent.log"), "rb").read().decode(errors="replace")
        return log


@pytest.fixture
def agent():
    assert os.path.exists(AGENT), "build the agent first: make build/space-agent"
    with tempfile.TemporaryDirectory(prefix="space-agent-test.") as tmp:
        a = Agent(tmp)
        a.accept()
        try:
            yield a
        finally:
            print(a.close())


@pytest.fixture
def host(agent):
    return agent.host


# ---- connection ----

def test_hello(host):
    assert host.hello["version"] == P["PROTO_VERSION"]
    assert host.hello["boot_id"] != 0
    assert host.hello["features"] == P["FEATURE_FILE_USER"] and host.hello["rsvd"] == 0


def test_ping(host):
    host.ping()
    host.ping()


def test_unknown_type_with_tag_is_enosys(host):
    tag = host.new_tag()
    host.sock.sendall(HDR.pack(0, 63, 0, 0, tag))
    with pytest.raises(AgentError) as e:
        host.expect("A_OK", tag)
    assert e.value.err == errno.ENOSYS
    host.sock.sendall(HDR.pack(0, 63, 0, 0, 5))  # no tag: ignored
    host.ping()


# ---- processes ----

def test_exec_output_and_exit_code(host):
    pid = host.exec(["sh", "-c", "echo out; echo err >&2; exit 3"])
    out, err, code, signo, flags = host.collect(pid)
    assert (out, err, code, signo, flags) == (b"out\n", b"err\n", 3, 0, 0)


def test_exec_missing_command_is_enoent(host):
    with pytest.raises(AgentError) as e:
        host.exec(["no-such-command-for-space"])
    assert e.value.err == errno.ENOENT
    assert "exec no-such-command-for-space" in e.value.msg
    with pytest.raises(AgentError) as e:
        host.exec(["/nonexistent/bin/x"])
    assert e.value.err == errno.ENOENT
    host.ping()


def test_exec_bad_requests_are_einval(host):
    def raw_exec(argc, envc, strings):
        payload = struct.pack("<6I", 0, 0, 0, 0, argc, envc) + b"".join(s + b"\0" for s in strings)
        return host.request("H_EXEC", payload)

    for tag in (raw_exec(0, 0, [b"", b""]),                    # argc 0
                raw_exec(3, 0, [b"", b"", b"true"]),           # strings missing
                raw_exec(1, P["MAX_ARGS"], [b"", b"", b"true"])):  # too many
        with pytest.raises(AgentError) as e:
            host.expect("A_STARTED", tag)
        assert e.value.err == errno.EINVAL
    host.ping()


def test_env_request_reaches_every_later_process_all_or_nothing(host):
    with pytest.raises(AgentError) as e:
        host.simple("H_ENV", b"POOLED_A=1\0=nameless\0")
    assert e.value.err == errno.EINVAL
    host.simple("H_ENV", b"POOLED_B=two words\0POOLED_C=\0")
    pid = host.exec(["sh", "-c", 'echo "${POOLED_A-unset}|$POOLED_B|${POOLED_C-unset}|$POOLED_D"'],
                    env=["POOLED_D=own"])
    out, _, code, _, _ = host.collect(pid)
    assert (out, code) == (b"unset|two words||own\n", 0)
    host.simple("H_ENV", b"POOLED_B=again\0")
    pid = host.exec(["sh", "-c", 'echo "$POOLED_B"'], env=["POOLED_B=the request wins"])
    assert host.collect(pid)[0] == b"the request wins\n"


def test_exec_cwd_env_and_user(host, agent):
    pid = host.exec(["sh", "-c", 'pwd; echo "$FOO|$HOME|$LANG"; env | grep -c ^SPACE_ || true'],
                    cwd=agent.tmp, env=["FOO=bar", "LANG=C"])
    out, _, code, _, _ = host.collect(pid)
    home = "/root" if os.getuid() == 0 else None
    lines = out.decode().splitlines()
    assert lines[0] == agent.tmp
    assert lines[1].startswith("bar|") and lines[1].endswith("|C")
    if home:
        assert lines[1] == f"bar|{home}|C"
    assert lines[2] == "0", "SPACE_ variables must not reach processes"
    with pytest.raises(AgentError) as e:
        host.exec(["true"], cwd=os.path.join(agent.tmp, "missing"))
    assert e.value.err == errno.ENOENT and "chdir" in e.value.msg
    with pytest.raises(AgentError) as e:
        host.exec(["true"], user="no-such-user-for-space")
    assert e.value.err == errno.ENOENT
    if os.getuid() == 0:
        pid = host.exec(["sh", "-c", "id -u; id -g; echo $HOME"], user="nobody")
        out, _, code, _, _ = host.collect(pid)
        assert code == 0 and out.split()[0] == b"65534"


@pytest.mark.skipif(not os.path.isdir("/work"), reason="no /work on this machine")
def test_default_cwd_is_work(host):
    out, _, code, _, _ = host.collect(host.exec(["pwd"], cwd=""))
    assert (out, code) == (b"/work\n", 0)


def test_stdin_round_trip(host):
    pid = host.exec(["cat"], stdin=True)
    host.send("H_STDIN", pid, b"hello agent\n")
    assert struct.unpack("<I", host.expect("A_CREDIT", pid)) == (12,)
    host.send("H_STDIN", pid, b"")
    out, err, code, _, _ = host.collect(pid)
    assert (out, err, code) == (b"hello agent\n", b"", 0)


def test_stdin_large_against_credit(host):
    data = os.urandom(3 * WINDOW + 12345)
    pid = host.exec(["sha256sum"], stdin=True)
    credit, off = WINDOW, 0
    while off < len(data):
        while credit == 0:
            credit += struct.unpack("<I", host.expect("A_CREDIT", pid))[0]
        n = min(MAX_PAYLOAD, credit, len(data) - off)
        host.send("H_STDIN", pid, data[off:off + n])
        off += n
        credit -= n
    host.send("H_STDIN", pid, b"")
    out, _, code, _, _ = host.collect(pid)
    import hashlib
    assert code == 0 and out.split()[0].decode() == hashlib.sha256(data).hexdigest()


def test_timeout_kills_the_group(host):
    pid = host.exec(["sh", "-c", "sleep 100 & echo $!; sleep 100"], timeout_ms=300)
    t, _, p = host.next(pid)
    assert t == "A_STDOUT"
    background = int(p.split()[0])
    out, _, code, signo, flags = host.collect(pid)
    assert (code, signo, flags) == (128 + signal.SIGKILL, signal.SIGKILL, P["EXIT_TIMEDOUT"])
    wait_pid_gone(background)


def test_signal_goes_to_the_group(host):
    pid = host.exec(["sh", "-c", "echo ready; sleep 100"])
    assert host.expect("A_STDOUT", pid) == b"ready\n"
    host.send("H_SIGNAL", pid, struct.pack("<I", 0))  # invalid: ignored
    host.send("H_SIGNAL", pid, struct.pack("<I", signal.SIGTERM))
    _, _, code, signo, flags = host.collect(pid)
    assert (code, signo, flags) == (128 + signal.SIGTERM, signal.SIGTERM, 0)


def test_back_pressure(host):
    total = 10_000_000
    pid = host.exec(["head", "-c", str(total), "/dev/zero"])
    got = 0
    while got < WINDOW:
        t, _, p = host.next(pid)
        assert t == "A_STDOUT", t
        assert set(p) == {0}
        got += len(p)
    assert got == WINDOW
    assert host.quiet(pid, 0.5), "agent sent output beyond its credit"
    assert any(pr["pid"] == pid and pr["state"] == P["PROC_RUNNING"] for pr in host.ps())
    host.send("H_CREDIT", pid, struct.pack("<I", got))
    out, _, code, _, _ = host.collect(pid)
    assert got + len(out) == total and code == 0


def test_exit_reported_after_output_even_without_credit(host):
    # the process exits while most of its output still waits for credit
    pid = host.exec(["sh", "-c", "head -c 600000 /dev/zero; exit 7"])
    got = 0
    while got < WINDOW:
        got += len(host.expect("A_STDOUT", pid))
    assert host.quiet(pid, 0.3)
    host.send("H_CREDIT", pid, struct.pack("<I", WINDOW))
    out, _, code, _, _ = host.collect(pid)
    assert got + len(out) == 600000 and code == 7


def test_ps_lists_running_and_exited(host):
    done = host.exec(["sh", "-c", "exit 5"])
    assert host.collect(done)[2] == 5
    running = host.exec(["sleep", "100"])
    procs = {p["pid"]: p for p in host.ps()}
    assert procs[done]["state"] == P["PROC_EXITED"] and procs[done]["code"] == 5
    assert procs[done]["cmd"] == "sh -c exit 5"
    assert procs[running]["state"] == P["PROC_RUNNING"] and procs[running]["cmd"] == "sleep 100"
    host.send("H_SIGNAL", running, struct.pack("<I", signal.SIGKILL))
    assert host.collect(running)[3] == signal.SIGKILL


def _open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_process_limit(host, agent):
    fds = _open_fds(agent.proc.pid)
    pids = [host.exec(["cat"], stdin=True) for _ in range(64)]
    with pytest.raises(AgentError) as e:
        host.exec(["true"])
    assert e.value.err == errno.EAGAIN
    for pid in pids:
        host.send("H_STDIN", pid, b"")
    for pid in pids:
        assert host.collect(pid)[2] == 0
    assert host.collect(host.exec(["true"]))[2] == 0
    assert _open_fds(agent.proc.pid) == fds, "descriptors leaked"


def test_script_without_shebang_runs_through_sh(host, agent):
    script = os.path.join(agent.tmp, "script")
    with open(script, "w") as f:
        f.write("echo from-script $1\n")
    os.chmod(script, 0o755)
    out, _, code, _, _ = host.collect(host.exec([script, "arg"]))
    assert (out, code) == (b"from-script arg\n", 0)
    pid = host.exec(["script", "x"], env=[f"PATH=/nonexistent:{agent.tmp}"])
    assert host.collect(pid)[0] == b"from-script x\n"


# ---- files ----

def test_file_write_read_all_bytes(host, agent):
    path = os.path.join(agent.tmp, "new", "dir", "bytes.bin")
    data = bytes(range(256))
    host.write_file(path, data, mode=0o640)
    assert open(path, "rb").read() == data
    assert os.stat(path).st_mode & 0o7777 == 0o640
    st, back = host.read_file(path)
    assert back == data and st["size"] == 256 and st["name"] == "bytes.bin"
    assert st["type"] == P["TYPE_FILE"] and st["mode"] == 0o640
    assert sorted(os.listdir(os.path.dirname(path))) == ["bytes.bin"], "temporary file left"


def test_file_large_round_trip(host, agent):
    path = os.path.join(agent.tmp, "big.bin")
    data = os.urandom(5 * 1024 * 1024)
    host.write_file(path, data)
    assert open(path, "rb").read() == data
    _, back = host.read_file(path)
    assert back == data


def test_file_read_waits_for_credit(host, agent):
    path = os.path.join(agent.tmp, "credit.bin")
    open(path, "wb").write(b"x" * (WINDOW * 2))
    tag = host.path_op("H_FREAD", path)
    host.expect("A_STAT", tag)
    got = 0
    while got < WINDOW:
        got += len(host.expect("A_DATA", tag))
    assert got == WINDOW and host.quiet(tag, 0.3)
    host.send("H_CREDIT", tag, struct.pack("<I", WINDOW))
    while got < 2 * WINDOW:
        got += len(host.expect("A_DATA", tag))
    host.expect("A_END", tag)


def test_file_append_replace_and_abort(host, agent):
    path = os.path.join(agent.tmp, "log.txt")
    host.write_file(path, b"one\n", flags=P["FWRITE_APPEND"])
    host.write_file(path, b"two\n", flags=P["FWRITE_APPEND"])
    assert open(path, "rb").read() == b"one\ntwo\n"
    host.write_file(path, b"new\n")
    assert open(path, "rb").read() == b"new\n"
    tag = host.request("H_FWRITE", struct.pack("<II", 0o644, 0) + path.encode() + b"\0")
    host.expect("A_OK", tag)
    host.send("H_DATA", tag, b"partial")
    host.expect("A_CREDIT", tag)
    host.send("H_ABORT", tag)
    host.ping()
    assert os.listdir(agent.tmp).count("log.txt") == 1
    assert not [n for n in os.listdir(agent.tmp) if ".space-" in n], "temporary file left"
    assert open(path, "rb").read() == b"new\n"


def test_file_ops(host, agent):
    d = os.path.join(agent.tmp, "tree")
    host.simple("H_MKDIR", struct.pack("<I", 0o750) + (d + "/a/b").encode() + b"\0")
    assert os.path.isdir(d + "/a/b") and os.stat(d + "/a/b").st_mode & 0o777 == 0o750
    host.simple("H_MKDIR", struct.pack("<I", 0o755) + (d + "/a/b").encode() + b"\0")
    host.write_file(d + "/z.txt", b"zzz")
    host.write_file(d + "/a/x.txt", b"x")
    os.symlink("z.txt", d + "/link")

    entries = host.list(d)
    assert [e["name"] for e in entries] == ["a", "link", "z.txt"]
    types = {e["name"]: e["type"] for e in entries}
    assert types == {"a": P["TYPE_DIR"], "link": P["TYPE_LINK"], "z.txt": P["TYPE_FILE"]}
    st = host.stat(d + "/z.txt")
    assert st["size"] == 3 and st["name"] == "z.txt"
    assert host.stat(d + "/link")["type"] == P["TYPE_LINK"]

    host.simple("H_RENAME", (d + "/z.txt").encode() + b"\0" + (d + "/y.txt").encode() + b"\0")
    assert os.path.exists(d + "/y.txt") and not os.path.exists(d + "/z.txt")

    for op, path, err in (("H_FREAD", d, errno.EISDIR), ("H_LIST", d + "/y.txt", errno.ENOTDIR),
                          ("H_STAT", d + "/missing", errno.ENOENT),
                          ("H_REMOVE", d + "/missing", errno.ENOENT),
                          ("H_FREAD", d + "/missing", errno.ENOENT)):
        tag = host.path_op(op, path)
        with pytest.raises(AgentError) as e:
            host.expect("A_OK", tag)
        assert e.value.err == err, op

    outside = os.path.join(agent.tmp, "outside")
    os.mkdir(outside)
    open(outside + "/keep", "w").write("keep")
    os.symlink(outside, d + "/a/escape")
    host.simple("H_REMOVE", (d + "/y.txt").encode() + b"\0")
    host.simple("H_REMOVE", d.encode() + b"\0")
    assert not os.path.exists(d)
    assert os.path.exists(outside + "/keep"), "remove followed a symlink"
    host.simple("H_SYNC", b"")


def test_stat_names_owners_links_and_nanoseconds(host, agent):
    d = os.path.join(agent.tmp, "owned")
    os.mkdir(d)
    open(d + "/f", "w").write("f")
    os.chown(d + "/f", 0, 0)
    os.utime(d + "/f", ns=(0, 1_700_000_000_123_456_789))
    os.symlink("../somewhere/else", d + "/l")
    os.mknod(d + "/nobody-owns-me")
    os.chown(d + "/nobody-owns-me", 4_000_000, 4_000_001)  # ids no /etc file names
    st = host.stat(d + "/f")
    assert (st["owner"], st["group"]) == ("root", "root")
    assert (st["mtime"], st["mtime_nsec"]) == (1_700_000_000, 123_456_789)
    assert st["path"] == d + "/f" and st["target"] == ""
    assert host.stat(d + "/l")["target"] == "../somewhere/else"
    entries = {e["name"]: e for e in host.list(d + "/")}
    assert entries["l"]["target"] == "../somewhere/else" and entries["l"]["path"] == d + "/l"
    assert entries["f"]["path"] == d + "/f"
    odd = entries["nobody-owns-me"]
    assert (odd["uid"], odd["gid"], odd["owner"], odd["group"]) == (4_000_000, 4_000_001, "", "")
    assert host.list("/")[0]["path"].count("/") == 1  # the root's entries are "/name"


def user_op(type_, *paths, user, prefix=b""):
    return prefix + b"".join(p.encode() + b"\0" for p in paths) + user.encode() + b"\0"


def test_file_requests_as_a_user(host, agent):
    d = os.path.join(agent.tmp, "users")
    os.mkdir(d)
    os.chmod(agent.tmp, 0o755)
    os.chmod(d, 0o777)
    open(d + "/roots", "w").write("secret")
    os.chmod(d + "/roots", 0o600)
    who = "4321:4322"
    # what the user makes is the user's, parents included; the answer names the path
    tag = host.request("H_MKDIR", user_op("H_MKDIR", d + "/m/n", user=who, prefix=struct.pack("<I", 0o755)))
    assert host.expect("A_OK", tag) == (d + "/m/n").encode() + b"\0"
    assert (os.stat(d + "/m").st_uid, os.stat(d + "/m/n").st_gid) == (4321, 4322)
    tag = host.request("H_FWRITE", user_op("H_FWRITE", d + "/m/new.txt", user=who,
                                            prefix=struct.pack("<II", 0o644, 0)))
    host.expect("A_OK", tag)
    host.send("H_DATA", tag, b"mine")
    host.expect("A_CREDIT", tag)
    host.send("H_END", tag)
    host.expect("A_END", tag)
    st = os.stat(d + "/m/new.txt")
    assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (4321, 4322, 0o644)
    # access is checked as the user meets it
    for type_, paths, err in (("H_FREAD", [d + "/roots"], errno.EACCES),
                              ("H_REMOVE", ["/etc/hostname"], errno.EACCES),
                              ("H_MKDIR", ["/etc/space-not-here"], errno.EACCES),
                              ("H_RENAME", [d + "/m/new.txt", "/etc/x"], errno.EACCES)):
        prefix = struct.pack("<I", 0o755) if type_ == "H_MKDIR" else b""
        tag = host.request(type_, user_op(type_, *paths, user=who, prefix=prefix))
        with pytest.raises(AgentError) as e:
            host.expect("A_OK", tag)
        assert e.value.err == err, type_
    assert not os.path.exists("/etc/space-not-here")
    # and the agent is root again right after
    _, back = host.read_file(d + "/roots")
    assert back == b"secret"
    tag = host.request("H_REMOVE", user_op("H_REMOVE", d + "/m", user=who))
    host.expect("A_OK", tag)
    assert not os.path.exists(d + "/m")


def test_file_user_errors_and_relative_paths(host, agent):
    # an unknown user, ids out of range, a relative path without a user: EINVAL, said so
    for user, path, words in (("no-such-user-here", "/tmp", "no such user"),
                              ("4294967295:0", "/tmp", "ids are numbers"),
                              ("", "relative", "must be absolute")):
        tag = host.request("H_STAT", user_op("H_STAT", path, user=user))
        with pytest.raises(AgentError) as e:
            host.expect("A_STAT", tag)
        assert e.value.err == errno.EINVAL and words in e.value.msg, e.value.msg
    # with a user, a relative path is taken from its home (root's: /root)
    st = parse_stat(host.expect("A_STAT", host.request("H_STAT", user_op("H_STAT", "", user="root"))))
    assert st["path"] == "/root" and st["type"] == P["TYPE_DIR"]
    tag = host.request("H_STAT", user_op("H_STAT", "no-such-file-here", user="root"))
    with pytest.raises(AgentError) as e:
        host.expect("A_STAT", tag)
    assert e.value.err == errno.ENOENT and "/root/no-such-file-here" in e.value.msg
    # a user string without its NUL breaks the frame
    host.sock.sendall(HDR.pack(9, P["H_STAT"], 0, 0, REQ | 77) + b"/tmp\0root")
    host.expect_eof()
    agent.reconnect().ping()


# ---- broken frames, reconnect, detach ----

@pytest.mark.parametrize("frame", [
    HDR.pack(MAX_PAYLOAD + 1, P["H_PING"], 0, 0, REQ | 1),             # oversized len
    HDR.pack(10, P["H_EXEC"], 0, 0, REQ | 1) + b"\0" * 10,             # truncated sp_exec
    HDR.pack(4, P["H_STAT"], 0, 0, REQ | 1) + b"/tmp",                 # string without NUL
    HDR.pack(24 + 4, P["H_EXEC"], 0, 0, REQ | 1)
    + struct.pack("<6I", 0, 0, 0, 0, 1, 0) + b"\0\0sh",                # argv without NUL
    HDR.pack(0, P["H_PING"], 0, 1, REQ | 1),                           # reserved bits set
    HDR.pack(2, P["H_CREDIT"], 0, 0, 5) + b"\0\0",                     # short sp_credit
], ids=["oversized", "truncated-exec", "no-nul", "exec-no-nul", "reserved", "short-credit"])
def test_malformed_frame_closes_and_agent_reconnects(agent, frame):
    host = agent.host
    boot = host.hello["boot_id"]
    host.sock.sendall(frame)
    host.expect_eof()
    host = agent.reconnect()
    assert host.hello["boot_id"] == boot
    host.ping()
    assert host.collect(host.exec(["true"]))[2] == 0


def test_reconnect_keeps_processes(agent):
    host = agent.host
    pid = host.exec(["sh", "-c", "echo before; read line; echo after-$line"], stdin=True)
    assert host.expect("A_STDOUT", pid) == b"before\n"
    boot = host.hello["boot_id"]
    host = agent.reconnect()
    assert host.hello["boot_id"] == boot and host.hello["max_pid"] >= pid
    assert any(p["pid"] == pid and p["state"] == P["PROC_RUNNING"] for p in host.ps())
    host.send("H_STDIN", pid, b"again\n")
    out, _, code, _, _ = host.collect(pid)
    assert out == b"after-again\n" and code == 0


def test_output_while_disconnected_arrives_later(agent):
    host = agent.host
    pid = host.exec(["sh", "-c", "read x; echo late-output"], stdin=True)
    host.send("H_STDIN", pid, b"go\n")
    host.send("H_STDIN", pid, b"")
    host.sock.close()  # the output is produced while nobody is connected
    host = agent.accept()
    out, _, code, _, _ = host.collect(pid)
    assert out == b"late-output\n" and code == 0


def test_detach_then_reconnect(agent):
    host = agent.host
    tag = host.request("H_PING")
    host.send("H_DETACH", 0)
    host.expect_eof()
    assert any(t == "A_PONG" and c == tag for t, c, _ in host.pending), "queue not flushed"
    host = agent.reconnect()
    host.ping()
    pid = host.exec(["sh", "-c", "echo hi"])
    assert host.collect(pid)[0] == b"hi\n"


def test_output_survives_detach_and_credit_resets(agent):
    host = agent.host
    total = 1_000_000
    pid = host.exec(["head", "-c", str(total), "/dev/zero"])
    got = 0
    while got < WINDOW:  # take the first window, return no credit
        got += len(host.expect("A_STDOUT", pid))
    host.send("H_DETACH", 0)
    host.expect_eof()
    assert not host.pending
    host = agent.reconnect()
    # a new connection starts with a fresh window: output flows without H_CREDIT
    out, _, code, _, _ = host.collect(pid)
    assert got + len(out) == total and code == 0


def test_upload_abandoned_on_disconnect(agent):
    host = agent.host
    path = os.path.join(agent.tmp, "half.bin")
    tag = host.request("H_FWRITE", struct.pack("<II", 0o644, 0) + path.encode() + b"\0")
    host.expect("A_OK", tag)
    host.send("H_DATA", tag, b"half")
    host.expect("A_CREDIT", tag)
    host = agent.reconnect()
    host.ping()
    assert not os.path.exists(path)
    assert not [n for n in os.listdir(agent.tmp) if ".space-" in n], "temporary file left"


def _cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_retry_does_not_busy_wait(agent):
    agent.listener.close()
    os.unlink(agent.path)
    agent.host.sock.close()
    before = _cpu_seconds(agent.proc.pid)
    time.sleep(1.0)  # a measurement window, not synchronisation
    spent = _cpu_seconds(agent.proc.pid) - before
    assert spent < 0.2, f"agent used {spent:.2f}s of CPU while retrying"
    agent.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    agent.listener.bind(agent.path)
    agent.listener.listen(8)
    agent.accept().ping()


def _pid1_wrap():
    if os.getuid() != 0:
        return None
    wrap = ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc"]
    try:
        ok = subprocess.run([*wrap, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return wrap if ok else None


def test_as_pid1_survives_signals_and_reaps_orphans():
    wrap = _pid1_wrap()
    if not wrap:
        pytest.skip("needs root and unshare --pid to run the agent as PID 1")
    with tempfile.TemporaryDirectory(prefix="space-agent-test.") as tmp:
        a = Agent(tmp, wrap=wrap)
        try:
            host = a.accept()
            pid = host.exec(["sh", "-c", "tr '\\0' ' ' </proc/1/cmdline; echo; "
                             "for s in TERM INT HUP QUIT USR1 PIPE KILL; do kill -$s 1; done; "
                             "echo alive"])
            out, _, code, _, _ = host.collect(pid)
            assert b"space-agent" in out.splitlines()[0] and out.endswith(b"alive\n")
            host.ping()
            # an orphan (its parent exits first) is adopted and reaped by PID 1
            pid = host.exec(["sh", "-c", "sleep 0.2 & echo $!"])
            orphan = int(host.collect(pid)[0])
            pid = host.exec(["sh", "-c", f"while kill -0 {orphan} 2>/dev/null; do sleep 0.05; done"],
                            timeout_ms=5000)
            assert host.collect(pid)[2:] == (0, 0, 0), "orphan left as a zombie"
        finally:
            print(a.close())

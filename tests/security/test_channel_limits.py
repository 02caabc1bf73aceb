"""A hostile channel held to the protocol's limits.

Whatever runs as root in a sandbox can stop PID 1 (the agent) and connect to
its socket in its place; spaced then talks to the impostor as to the agent.
These tests take the channel that way and try what the protocol forbids:
process records nobody asked for, more of them than spaced tracks, hello
after hello, data and credit beyond the window, listings without end and
with names that are not names, liveness forged by answering pings; and the
answers an agent of an earlier release gets. Two more
look at the answers spaced builds: captured output that JSON escaping would
blow up, and the captured output one tenant holds at once.

Each test says what the impostor did and what spaced must have done about
it; where memory is the question, spaced's VmRSS is sampled all through the
attempt and its peak growth is held to 8 MiB.

The impostor is a background process (POST .../processes): a request that
waits on the agent fails once the impostor has pushed the agent off, and a
background start answers as soon as the process runs. It writes what it saw
to /work/impostor.json, continues PID 1 at its end (unless the test is about
spaced doing that), and is bounded by its own alarm. While it holds the
channel it announces itself with a process record of pid MARK in the hello's
listing, which the test sees in GET .../processes (answered by spaced alone).
Before it starts, spaced is made to take its first look at PID 1
(let_spaced_look), which would otherwise come at a random point of the
attempt.
"""

import base64
import http.client
import json
import socket
import textwrap
import threading

import pytest

from conftest import IO_TIMEOUT, q, wait_until, wait_usable
from conftest import gvisor_only, AGENT_SOCKET
from test_agent_channel import FRAMES

MiB = 1 << 20
RSS_LIMIT_MIB = 8
SANDBOX_MAX_PROCS_TRACKED = 512     # daemon/daemon.h
LIST_MAX_ENTRIES = 2000             # daemon/core/op.h
TENANT_MAX_CAPTURE = 64 * MiB       # daemon/core/op.h
MARK = 424242                       # the pid of the impostor's announcement

# Python inside the sandbox, after FRAMES: the impostor's means.
IMPOSTOR = textwrap.dedent(r"""
    import json, select, signal
    RESULT = "/work/impostor.json"
    MARK = 424242
    H_PING, H_CREDIT, H_PS, H_FREAD, H_LIST, H_ABORT = 1, 5, 6, 7, 12, 18
    A_PONG, A_CREDIT, A_PROC, A_STAT, A_DATA, A_END = 65, 72, 73, 74, 75, 76
    WINDOW = 256 * 1024
    out = {}

    def save():
        with open(RESULT + ".tmp", "w") as f:
            json.dump(out, f)
        os.replace(RESULT + ".tmp", RESULT)

    def proc(pid, cmd, chan=REQ, state=0, code=0):
        return frame(A_PROC, chan, struct.pack("<IIiiQ", pid, state, code, 0, int(time.time() * 1000))
                     + cmd.encode() + b"\0")

    def stat(name, chan, size=0, kind=1):
        return frame(A_STAT, chan, struct.pack("<QqIIII", size, int(time.time()), 0o644, kind, 0, 0) + name + b"\0")

    class Peer:
        # one connection to the agent's socket, spoken as the agent
        def __init__(self):
            self.s = connect()
            self.buf = b""
            self.eof = False

        def send(self, data):
            return send(self.s, data)

        def read(self, until):
            # the next frame (type, chan, payload); None at `until` (monotonic); "eof" once closed
            while True:
                if len(self.buf) >= 12:
                    n, t, _, _, ch = struct.unpack("<IBBHI", self.buf[:12])
                    if len(self.buf) >= 12 + n:
                        payload, self.buf = self.buf[12:12 + n], self.buf[12 + n:]
                        return t, ch, payload
                if self.eof:
                    return "eof"
                left = until - time.monotonic()
                if left <= 0:
                    return None
                if not select.select([self.s], [], [], left)[0]:
                    continue
                try:
                    data = self.s.recv(1 << 20)
                except OSError:
                    data = b""
                if not data:
                    self.eof = True
                self.buf += data

        def wait(self, want, seconds):
            # reads until a frame of a type in `want`, answering pings; None at the deadline, "eof"
            until = time.monotonic() + seconds
            while True:
                f = self.read(until)
                if not isinstance(f, tuple):
                    return f
                if f[0] == H_PING:
                    self.send(frame(A_PONG, f[1]))
                if f[0] in want:
                    return f

        def greet(self, marker=MARK, end=True, extra=b""):
            # hello; the listing spaced asks for gets the announcement (and extra), ended if `end`
            if not self.send(hello()):
                return None
            f = self.wait((H_PS,), 30)
            if not isinstance(f, tuple):
                return None
            data = (proc(marker, "impostor-ready", state=1) if marker else b"") + extra
            if end:
                data += frame(A_END, f[1])
            self.send(data)
            return f[1]

        def dropped(self, seconds):
            # whether spaced closes the connection within `seconds` (read meanwhile, pings answered)
            return self.wait((), seconds) == "eof"

        def cut_off(self, seconds):
            # the same without reading anything (what spaced sent stays unread): an A_PONG on the
            # ping's tag every 50 ms, which spaced takes from a live agent, until a send fails
            until = time.monotonic() + seconds
            while time.monotonic() < until:
                if not self.send(frame(A_PONG, REQ | 1)):
                    return True
                time.sleep(0.05)
            return False

    def alarm(signo, frm):
        raise TimeoutError("the impostor's own deadline")

    def run(main, limit, cont=True):
        signal.signal(signal.SIGALRM, alarm)
        signal.alarm(limit)
        os.kill(1, signal.SIGSTOP)
        try:
            main()
        except BaseException as e:
            out["error"] = repr(e)
        finally:
            signal.alarm(0)
            if cont:
                os.kill(1, signal.SIGCONT)
            save()
""")


# --------------------------------------------------------------------------
# host side


def start_impostor(attack, body, limit=90, cont=True, **params):
    """Starts the impostor (FRAMES + IMPOSTOR + body, which defines main()) as a background
    process; params become globals of the program. Its pid."""
    consts = "".join(f"{k} = {v!r}\n" for k, v in params.items())
    code = (FRAMES + IMPOSTOR + consts + textwrap.dedent(body)
            + f"\nrun(main, {int(limit)}, cont={cont!r})\n")
    started = attack.api.ok("POST", f"/v1/sandboxes/{attack.id}/processes",
                            {"cmd": ["python3", "-c", code]}, expect=(201,))
    return started["pid"]


# Stops PID 1 and waits until something continues it (or continues it itself after 20 s):
# exit code 0 when spaced did.
PRIMER = textwrap.dedent(r"""
    import os, signal, time
    def state():
        with open("/proc/1/status") as f:
            return [line.split()[1] for line in f if line.startswith("State:")][0]
    os.kill(1, signal.SIGSTOP)
    until = time.monotonic() + 20
    while state() == "T" and time.monotonic() < until:
        time.sleep(0.05)
    seen = state() != "T"
    os.kill(1, signal.SIGCONT)
    raise SystemExit(0 if seen else 1)
""")


def let_spaced_look(attack):
    """Makes spaced take its first look at the sandbox's PID 1 before an impostor acts.

    spaced looks at PID 1 from the host every AGENT_PROBE_MS (10 s) while a
    client waits on the sandbox, and continues it if it is stopped; the first
    look comes at once, at the first such moment after the sandbox started. An
    impostor starting then would be cut short at a random point, so the look
    is taken here: PID 1 is stopped while a client waits on the stopper, until
    spaced continues it (a daemon that never looks leaves that to the stopper's
    own deadline), and the test's notes say which.
    """
    pid = attack.api.ok("POST", f"/v1/sandboxes/{attack.id}/processes",
                        {"cmd": ["python3", "-c", PRIMER]}, expect=(201,))["pid"]
    status, body = attack.api.json("GET", f"/v1/sandboxes/{attack.id}/processes/{pid}/wait?timeout=90",
                                   timeout=IO_TIMEOUT)
    assert status == 200 and body["state"] == "exited", (status, body)
    attack.note("before the attempt, spaced continued a stopped PID 1" if body["exit_code"] == 0
                else "before the attempt, spaced did not continue a stopped PID 1 (continued after 20 s)")


def processes(attack):
    """The process records spaced keeps for the sandbox (a host-side answer: no agent asked)."""
    return attack.api.ok("GET", f"/v1/sandboxes/{attack.id}/processes")["processes"]


def proc_state(attack, pid):
    status, body = attack.api.json("GET", f"/v1/sandboxes/{attack.id}/processes/{pid}")
    return body.get("state") if status == 200 else None


def wait_marker(attack, ipid, marker=MARK, timeout=60):
    """Waits for the impostor's announcement: it holds the channel (its hello's listing is in)."""
    def seen():
        for p in processes(attack):
            if p["pid"] == marker:
                return True
            if p["pid"] == ipid and p["state"] == "exited":
                pytest.fail(f"the impostor ended before it held the channel: {p}")
        return False
    wait_until(seen, timeout, "the impostor to hold the agent's channel", interval=0.1)


def impostor_result(attack, ipid, timeout=180):
    """Waits for the real agent to report the impostor's end and to serve again; what the
    impostor wrote."""
    wait_until(lambda: proc_state(attack, ipid) == "exited", timeout, f"the impostor (pid {ipid}) to end",
               interval=0.2)
    wait_usable(attack.api, attack.id)
    status, data = attack.api.get_file(attack.id, "/work/impostor.json")
    assert status == 200, (status, data[:300])
    res = json.loads(data)
    assert "error" not in res, res
    return res


class RssPeak(threading.Thread):
    """spaced's VmRSS (KiB) sampled every 10 ms while the block runs: its value just before, and
    the peak."""

    def __init__(self, spaced):
        super().__init__(daemon=True)
        self.spaced = spaced
        self.base = spaced.rss_kib()
        self.peak = self.base
        self._halt = threading.Event()

    def run(self):
        while not self._halt.is_set():
            try:
                self.peak = max(self.peak, self.spaced.rss_kib())
            except OSError:
                return
            self._halt.wait(0.01)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self._halt.set()
        self.join(timeout=30)

    def growth_mib(self):
        return (self.peak - self.base) / 1024


def raw_request(spaced, head):
    """A socket to spaced's API with `head` (request line and headers) sent; nothing read."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(IO_TIMEOUT)
    s.connect(spaced.socket)
    s.sendall(head.encode())
    return s


# --------------------------------------------------------------------------
# process records


@gvisor_only(AGENT_SOCKET)
def test_process_records_with_no_listing_asked(attack, spaced):
    """The impostor ends the hello's listing, then sends an A_PROC under another request tag
    (0x80000000|999, pid 250000); on a second connection, after the listing ended again, 3,000
    A_PROC on the listing's tag (pids 200000 and up, running).

    Expected: spaced drops each connection at its first record nobody asked
    for; once the real agent is back, none of the forged pids is among the
    sandbox's processes.
    """
    let_spaced_look(attack)
    ipid = start_impostor(attack, """
        def main():
            p = Peer()
            out["greeted"] = p.greet() is not None
            p.send(proc(250000, "forged", chan=REQ | 999))
            out["other_tag_dropped"] = p.dropped(10)
            p.s.close()
            p = Peer()
            out["greeted_again"] = p.greet(marker=MARK + 1) is not None
            out["sent"] = p.send(b"".join(proc(200000 + i, "forged") for i in range(3000)))
            out["late_dropped"] = p.dropped(10)
    """)
    res = impostor_result(attack, ipid)
    forged = set(range(200000, 203000)) | {250000}
    kept = sorted(p["pid"] for p in processes(attack) if p["pid"] in forged)
    attack.note(f"impostor saw {res}; {len(kept)} forged records kept after the agent came back")
    assert res["greeted"] and res["greeted_again"], res
    assert res["other_tag_dropped"], "spaced kept a connection that sent a record under another tag"
    assert res["late_dropped"], "spaced kept a connection that sent records after its listing ended"
    assert not kept, f"{len(kept)} forged process records kept: {kept[:5]}..."


@gvisor_only(AGENT_SOCKET)
def test_process_records_beyond_the_limit(attack, spaced):
    """During the hello's listing the impostor sends 5,000 A_PROC of running processes (distinct
    pids from 300000); then, on the same connection or, once dropped, on a new one, its
    announcement again as exited with code 1 if it was dropped (0 if not): the sign that spaced
    has taken or refused all of them.

    Expected: spaced keeps at most 512 process records for the sandbox
    (SANDBOX_MAX_PROCS_TRACKED) and drops the connection at the limit.
    """
    let_spaced_look(attack)
    ipid = start_impostor(attack, """
        def main():
            p = Peer()
            # the announcement as a running process: its exit is the sign below
            tag = p.greet(marker=None, end=False, extra=proc(MARK, "impostor-ready"))
            out["greeted"] = tag is not None
            flood = b"".join(proc(300000 + i, "forged") for i in range(5000))
            out["sent"] = p.send(flood)
            # spaced answers nothing to records: a drop is an end of file
            dropped = p.dropped(10)
            out["dropped"] = dropped
            if dropped:
                p = Peer()
                tag = p.greet(marker=None, end=False)
            p.send(proc(MARK, "impostor-ready", chan=tag, state=1, code=1 if dropped else 0)
                   + frame(A_END, tag))
            p.dropped(2)
    """)

    def done():
        for p in processes(attack):
            if p["pid"] == MARK and p["state"] == "exited":
                return p
            if p["pid"] == ipid and p["state"] == "exited":
                pytest.fail(f"the impostor ended before its sign: {p}")
        return None
    sign = wait_until(done, 120, "the impostor's sign that its records were taken or refused", interval=0.2)
    records = processes(attack)
    forged = sum(1 for p in records if 300000 <= p["pid"] < 305000)
    attack.note(f"{len(records)} process records kept ({forged} forged) of 5,000 sent; "
                f"connection {'dropped' if sign['exit_code'] == 1 else 'kept'}")
    assert len(records) <= SANDBOX_MAX_PROCS_TRACKED, f"{len(records)} process records"
    assert sign["exit_code"] == 1, "spaced did not drop the connection at the record limit"


# --------------------------------------------------------------------------
# what spaced queues or buffers for the channel


@pytest.mark.rss_limit_mib(RSS_LIMIT_MIB)
@gvisor_only(AGENT_SOCKET)
def test_hello_after_hello(attack, spaced):
    """The impostor sends 1,000,000 A_HELLO frames (24 MB) on one connection and never reads
    what spaced answers.

    Expected: one hello per connection: spaced closes it (the impostor's sends
    fail before all was sent), and its resident memory grows by at most 8 MiB
    (each hello would otherwise queue a process-listing request).
    """
    let_spaced_look(attack)
    with RssPeak(spaced) as rss:
        ipid = start_impostor(attack, """
            def main():
                s = connect()
                data = memoryview(hello() * 1000000)
                sent = 0
                while sent < len(data):
                    try:
                        sent += s.send(data[sent:sent + 65536])
                    except OSError:
                        break
                out["hellos_sent"] = sent // len(hello())
        """)
        res = impostor_result(attack, ipid)
    attack.note(f"{res['hellos_sent']:,} hellos sent before the connection closed; "
                f"spaced's RSS grew by {rss.growth_mib():.1f} MiB at most")
    assert res["hellos_sent"] < 1000000, "spaced took a million hellos on one connection"
    assert rss.growth_mib() <= RSS_LIMIT_MIB, f"spaced's RSS grew by {rss.growth_mib():.1f} MiB"


@pytest.mark.rss_limit_mib(RSS_LIMIT_MIB)
@gvisor_only(AGENT_SOCKET)
def test_download_data_beyond_credit(attack, spaced):
    """With the impostor holding the channel, a client asks for /etc/hostname through the API
    and does not read the answer; the impostor answers H_FREAD with an A_STAT, then 100 MiB of
    A_DATA without waiting for credit.

    Expected: spaced drops the connection after one window (256 KiB) and its
    resident memory grows by at most 8 MiB.
    """
    let_spaced_look(attack)
    with RssPeak(spaced) as rss:
        ipid = start_impostor(attack, """
            def main():
                p = Peer()
                out["greeted"] = p.greet() is not None
                f = p.wait((H_FREAD,), 60)
                out["asked"] = isinstance(f, tuple)
                if not out["asked"]:
                    return
                tag = f[1]
                data = frame(A_DATA, tag, bytes(65536))
                ok = p.send(stat(b"hostname", tag, size=100 << 20))
                sent = 0
                while ok and sent < 100 << 20:
                    ok = p.send(data)
                    sent += 65536 if ok else 0
                out["sent"] = sent
        """)
        wait_marker(attack, ipid)
        client = raw_request(spaced, f"GET /v1/sandboxes/{attack.id}/files?path={q('/etc/hostname')} HTTP/1.1\r\n"
                                     "Host: space\r\n\r\n")
        try:
            res = impostor_result(attack, ipid)
        finally:
            client.close()
    attack.note(f"the impostor sent {res.get('sent', 0) / MiB:.1f} MiB of data before the drop; "
                f"spaced's RSS grew by {rss.growth_mib():.1f} MiB at most")
    assert res["asked"], res
    assert res["sent"] < 100 * MiB, "spaced took 100 MiB of download data without giving credit"
    assert rss.growth_mib() <= RSS_LIMIT_MIB, f"spaced's RSS grew by {rss.growth_mib():.1f} MiB"


class StdinSender(threading.Thread):
    """Sends `size` zero bytes to a process's stdin through the API (one POST on a raw socket),
    until done, refused, or stopped."""

    def __init__(self, spaced, sbid, pid, size):
        super().__init__(daemon=True)
        self.head = (f"POST /v1/sandboxes/{sbid}/processes/{pid}/stdin HTTP/1.1\r\nHost: space\r\n"
                     f"Content-Type: application/octet-stream\r\nContent-Length: {size}\r\n\r\n")
        self.spaced = spaced
        self.size = size
        self.sent = 0
        self.error = None
        self._halt = threading.Event()

    def run(self):
        s = raw_request(self.spaced, self.head)
        s.settimeout(1)
        block = bytes(MiB)
        try:
            while self.sent < self.size and not self._halt.is_set():
                try:
                    self.sent += s.send(block[:min(MiB, self.size - self.sent)])
                except socket.timeout:
                    continue
        except OSError as e:
            self.error = str(e)
        finally:
            self._halt.wait()
            s.close()

    def stop(self):
        self._halt.set()
        self.join(timeout=30)


@pytest.mark.rss_limit_mib(RSS_LIMIT_MIB)
@gvisor_only(AGENT_SOCKET)
def test_stdin_credit_beyond_the_window(attack, spaced):
    """A `sleep 600` runs with its stdin open; the impostor takes the channel and grants stdin
    credit for it three times 0x3fffffff bytes (3 GiB), then never reads its socket, while a
    client sends 64 MiB to that stdin through the API.

    Expected: spaced drops the impostor at the first credit beyond the window
    and does not queue the 64 MiB: its resident memory grows by at most
    8 MiB.
    """
    let_spaced_look(attack)
    x = attack.api.ok("POST", f"/v1/sandboxes/{attack.id}/processes",
                      {"cmd": ["sleep", "600"], "stdin_open": True}, expect=(201,))["pid"]
    sender = StdinSender(spaced, attack.id, x, 64 * MiB)
    with RssPeak(spaced) as rss:
        ipid = start_impostor(attack, """
            def main():
                p = Peer()
                out["greeted"] = p.greet() is not None
                out["credit_sent"] = p.send(b"".join(frame(A_CREDIT, X, struct.pack("<I", 0x3fffffff))
                                                     for _ in range(3)))
                out["cut_off"] = p.cut_off(HOLD)
        """, X=x, HOLD=30)
        wait_marker(attack, ipid)
        sender.start()
        try:
            res = impostor_result(attack, ipid)
        finally:
            sender.stop()
    attack.note(f"the client got {sender.sent / MiB:.1f} MiB of stdin into spaced"
                f"{' (' + sender.error + ')' if sender.error else ''}; impostor saw {res}; "
                f"spaced's RSS grew by {rss.growth_mib():.1f} MiB at most")
    assert res["credit_sent"], res
    assert rss.growth_mib() <= RSS_LIMIT_MIB, f"spaced's RSS grew by {rss.growth_mib():.1f} MiB"


# --------------------------------------------------------------------------
# listings


@pytest.mark.rss_limit_mib(RSS_LIMIT_MIB)
@gvisor_only(AGENT_SOCKET)
def test_listing_without_end(attack, spaced):
    """The impostor answers a listing of /work (H_LIST) with 50,000 A_STAT entries of distinct
    200-byte names, within the credit spaced gives, then A_END.

    Expected: a 200 with at most 2,000 entries (LIST_MAX_ENTRIES; fewer when
    LIST_MAX_BYTES, 1 MiB of names and paths, comes first), "truncated": true
    and "next" naming the last entry given; spaced's resident memory grows by
    at most 8 MiB.
    """
    let_spaced_look(attack)
    with RssPeak(spaced) as rss:
        ipid = start_impostor(attack, """
            def main():
                p = Peer()
                out["greeted"] = p.greet() is not None
                f = p.wait((H_LIST,), 60)
                out["asked"] = isinstance(f, tuple)
                if not out["asked"]:
                    return
                tag = f[1]
                credit, metered, sent, stop = WINDOW, None, 0, None
                while sent < 50000 and stop is None:
                    entry = stat(b"%07d-" % sent + b"n" * 192, tag)
                    while credit < len(entry) - 12 and stop is None:
                        # spaced gives listing credit back as it takes entries; one that never
                        # does (an earlier protocol) is not waited for after its first window
                        f = p.wait((H_CREDIT, H_ABORT), 15 if metered is None else 60)
                        if f is None and metered is None:
                            metered, credit = False, 1 << 62
                        elif not isinstance(f, tuple):
                            stop = f or "no credit"
                        elif f[0] == H_ABORT and f[1] == tag:
                            stop = "aborted"
                        elif f[0] == H_CREDIT and f[1] == tag:
                            metered = True
                            credit += struct.unpack("<I", f[2])[0]
                    if stop is None:
                        if not p.send(entry):
                            stop = "send failed"
                        credit -= len(entry) - 12
                        sent += 1
                if stop is None:
                    p.send(frame(A_END, tag))
                    stop = "ended"
                out.update(sent=sent, stop=stop, metered=metered)
                p.dropped(2)
        """)
        wait_marker(attack, ipid)
        status, body = attack.api.json("GET", f"/v1/sandboxes/{attack.id}/files/list?path=/work")
        res = impostor_result(attack, ipid)
    entries = body.get("entries", []) if isinstance(body, dict) else []
    attack.note(f"answer {status} with {len(entries):,} entries, truncated {body.get('truncated')}, "
                f"next {str(body.get('next'))[:12]!r}...; impostor {res}; "
                f"spaced's RSS grew by {rss.growth_mib():.1f} MiB at most")
    assert status == 200, body
    assert 0 < len(entries) <= LIST_MAX_ENTRIES, len(entries)
    assert body.get("truncated") is True, "a listing at its limit is not marked truncated"
    names = [e["name"] for e in entries]
    assert names == ["%07d-" % i + "n" * 192 for i in range(len(names))]
    assert body.get("next") == names[-1]
    assert rss.growth_mib() <= RSS_LIMIT_MIB, f"spaced's RSS grew by {rss.growth_mib():.1f} MiB"


@gvisor_only(AGENT_SOCKET)
def test_listing_pages_with_a_cursor(attack):
    """With the real agent: 12,000 files in one directory, listed page by page, each page
    asked from the previous one's cursor (after=<next>).

    Expected: every page but the last stops at 2,000 entries or fewer with
    "truncated": true and "next"; the last says "truncated": false; the pages
    together are exactly the 12,000 names, in order, none twice.
    """
    res = attack.py(textwrap.dedent("""
        import os
        os.makedirs("/work/many")
        for i in range(12000):
            open("/work/many/f%05d" % (i * 7919 % 12000), "w").close()
        print(len(os.listdir("/work/many")))
    """), timeout=300)
    assert res["exit_code"] == 0 and res["stdout"].strip() == "12000", res
    route = f"/v1/sandboxes/{attack.id}/files/list?path=/work/many"
    names, sizes, page = [], [], attack.api.ok("GET", route)
    while True:
        got = [e["name"] for e in page["entries"]]
        names += got
        sizes.append(len(got))
        assert 0 < len(got) <= LIST_MAX_ENTRIES, len(got)
        if not page.get("truncated"):
            assert page.get("truncated") is False, page.get("truncated")
            break
        assert page.get("next") == got[-1]
        assert len(sizes) <= 12000 // 100, "the pages do not end"
        page = attack.api.ok("GET", route + "&after=" + q(page["next"]))
    attack.note(f"{len(sizes)} pages of {sizes} entries; the last not truncated")
    assert len(sizes) > 1, "12,000 entries came in one page"
    assert names == ["f%05d" % i for i in range(12000)], "the pages are not the directory, in order, once"


@gvisor_only(AGENT_SOCKET)
def test_listing_names_that_are_not_names(attack, spaced):
    """The impostor answers five listings of /work, each with a good entry then one named
    "../../x", "a/b", ".", ".." or "" (connecting again after each drop).

    Expected: none of those listings succeeds (a 503: spaced dropped the
    connection), and none of those names reaches the client.
    """
    bad = ["../../x", "a/b", ".", "..", ""]
    let_spaced_look(attack)
    ipid = start_impostor(attack, """
        def main():
            out["rounds"] = []
            for i, name in enumerate(BAD):
                p = Peer()
                if p.greet(marker=MARK + i) is None:
                    out["rounds"].append("no hello"); return
                f = p.wait((H_LIST,), 60)
                if not isinstance(f, tuple):
                    out["rounds"].append(f"no listing asked ({f})"); return
                p.send(stat(b"good", f[1]) + stat(name.encode(), f[1]) + frame(A_END, f[1]))
                out["rounds"].append("dropped" if p.dropped(5) else "kept")
                p.s.close()
    """, BAD=bad)
    answers = []
    for i, name in enumerate(bad):
        wait_marker(attack, ipid, MARK + i)
        status, body = attack.api.json("GET", f"/v1/sandboxes/{attack.id}/files/list?path=/work")
        names = [e.get("name") for e in body.get("entries", [])] if isinstance(body, dict) else []
        answers.append((name, status, names))
    res = impostor_result(attack, ipid)
    attack.note("; ".join(f"{name!r}: {status} {names}" for name, status, names in answers) + f"; impostor {res}")
    for name, status, names in answers:
        assert name not in names, f"spaced returned the entry name {name!r}"
        assert status >= 500, f"the listing with {name!r} answered {status}"


# --------------------------------------------------------------------------
# an agent of an earlier release


@gvisor_only(AGENT_SOCKET)
def test_an_agent_from_before_entry_names_and_file_users(attack, spaced):
    """The impostor speaks as the agent of a release before file users (one a sandbox resumed
    from an older image has): a hello without struct sp_hello_ext, and an A_STAT that ends after
    its name. The test stats a file, stats it as user `user`, then stats another path.

    Expected: the first stat answers with what such an agent gives (ids, whole seconds) and no
    owner, group or link target; the one with a user is refused with 409 before anything
    reaches the agent (an older agent would ignore the user and act as root); the impostor sees
    exactly the two stats without a user.
    """
    let_spaced_look(attack)
    ipid = start_impostor(attack, """
        H_STAT = 11
        def main():
            p = Peer()
            if p.greet() is None:
                out["got"] = "no hello"; return
            out["got"] = []
            while len(out["got"]) < 2:
                f = p.wait((H_STAT,), 60)
                if not isinstance(f, tuple):
                    out["got"].append(repr(f)); return
                out["got"].append(f[2].decode(errors="replace"))
                p.send(stat(b"x", f[1], size=5))
    """)
    wait_marker(attack, ipid)
    url = f"/v1/sandboxes/{attack.id}/files/stat?path="
    status, st = attack.api.json("GET", url + "/work/old.txt")
    assert status == 200, (status, st)
    assert (st["path"], st["size"], st["uid"], st["gid"]) == ("/work/old.txt", 5, 0, 0), st
    assert not {"owner", "group", "symlink_target"} & set(st), st
    assert st["mtime"].endswith("Z") and "." not in st["mtime"], st
    status, body = attack.api.json("GET", url + "/work/old.txt&user=user")
    assert status == 409 and body["error"]["code"] == "conflict", (status, body)
    assert "from before file requests as a user" in body["error"]["message"], body
    status, _ = attack.api.json("GET", url + "/work/second")
    assert status == 200
    res = impostor_result(attack, ipid)
    attack.note(f"older agent: {st}; with a user: {body['error']['message']}; impostor {res}")
    assert res["got"] == ["/work/old.txt\0", "/work/second\0"], res


# --------------------------------------------------------------------------
# liveness


@gvisor_only(AGENT_SOCKET)
def test_stopped_agent_behind_an_impostor_answering_pings(attack, spaced):
    """A process P waits for /work/go, then exits with 7. The impostor stops PID 1, takes the
    channel, creates /work/go, and answers every H_PING for up to 120 s; it never continues
    PID 1. A client waits for P.

    Expected: spaced sees from the host side that PID 1 is stopped and
    continues it; the real agent takes the channel back and P is reported
    exited with code 7, within the test's deadline (90 s).
    """
    let_spaced_look(attack)
    p = attack.api.ok("POST", f"/v1/sandboxes/{attack.id}/processes",
                      {"cmd": ["sh", "-c", "while [ ! -e /work/go ]; do sleep 0.1; done; exit 7"]},
                      expect=(201,))["pid"]
    ipid = start_impostor(attack, """
        def main():
            p = Peer()
            out["greeted"] = p.greet() is not None
            open("/work/go", "w").close()
            out["replaced"] = p.dropped(120)
    """, limit=130, cont=False)
    wait_marker(attack, ipid)
    status, body = attack.api.json("GET", f"/v1/sandboxes/{attack.id}/processes/{p}/wait?timeout=90",
                                   timeout=IO_TIMEOUT)
    attack.note(f"the wait for P answered {status} {body}")
    assert status == 200, body
    assert body["state"] == "exited" and body["exit_code"] == 7, \
        f"P was not reported exited within 90 s: {body}"
    wait_usable(attack.api, attack.id)


# --------------------------------------------------------------------------
# captured output


def test_captured_nul_bytes_are_not_expanded(attack):
    """An exec without stream of `head -c 16777216 /dev/zero`: 16 MiB of NUL bytes captured.

    Expected: the answer carries them as stdout_b64 (JSON would escape each
    NUL as \\u0000, six bytes), it decodes to the 16 MiB of zeros, and the
    HTTP body is at most 2.1 times 16 MiB.
    """
    status, _, data = attack.api.request("POST", f"/v1/sandboxes/{attack.id}/exec",
                                         body={"cmd": ["head", "-c", str(16 * MiB), "/dev/zero"]})
    attack.note(f"answer {status}, body {len(data) / MiB:.1f} MiB")
    assert status == 200, data[:300]
    res = json.loads(data)
    assert "stdout" not in res and "stdout_b64" in res, sorted(res)
    out = base64.b64decode(res["stdout_b64"])
    assert len(out) == 16 * MiB and out.count(0) == len(out)
    assert len(data) <= 2.1 * 16 * MiB, f"a {len(data) / MiB:.1f} MiB answer for 16 MiB of output"


def test_captured_output_of_one_tenant_at_once(attack, tenants):
    """One tenant runs five captured execs at once in its sandbox, each writing 16 MiB of
    /dev/urandom to a file of its own and then to its stdout with cat (they start together on
    /work/go, created by a sixth exec once all five run, and all stay running until every one
    has written): 80 MiB of output captured at the same time.

    Expected: the five answers together carry at most 64 MiB
    (TENANT_MAX_CAPTURE), at least one says stdout_truncated, and each carries
    the beginning of what its process wrote (a cut output is cut at its end).
    """
    alice = tenants["alice"]
    sbid = alice.create(cpus=1, memory_mb=256)
    # each keeps running after its output until /work/end: what it captured stays held
    cmds = [f"while [ ! -e /work/go ]; do sleep 0.05; done; head -c {16 * MiB} /dev/urandom > /work/out{i}; "
            f"cat /work/out{i}; touch /work/done{i}; while [ ! -e /work/end ]; do sleep 0.05; done"
            for i in range(5)]
    answers = [None] * 5

    def run(i):
        try:
            answers[i] = alice.json("POST", f"/v1/sandboxes/{sbid}/exec", {"cmd": cmds[i]}, timeout=IO_TIMEOUT)
        except (OSError, http.client.HTTPException) as e:
            answers[i] = (None, str(e))
    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(5)]
    try:
        for t in threads:
            t.start()

        def all_running():
            ps = alice.ok("GET", f"/v1/sandboxes/{sbid}/processes")["processes"]
            return sum(1 for p in ps if p["cmd"] in cmds and p["state"] == "running") == 5
        wait_until(all_running, 120, "the five execs to run at once", interval=0.1)
        alice.exec(sbid, ["touch", "/work/go"])

        # asked as the administrator: the tenant's own captures are at their budget by now
        def all_written():
            return attack.api.exec(sbid, "ls /work | grep -c '^done'")["stdout"].strip() == "5"
        wait_until(all_written, 180, "the five execs to write their output", interval=0.2)
        attack.api.exec(sbid, ["touch", "/work/end"])
        for t in threads:
            t.join(timeout=IO_TIMEOUT)
        assert not any(t.is_alive() for t in threads), "an exec did not answer"
        captured, truncated, spliced = [], 0, []
        for i, (status, res) in enumerate(answers):
            assert status == 200, res
            out = base64.b64decode(res["stdout_b64"]) if "stdout_b64" in res else res.get("stdout", "").encode()
            captured.append(len(out))
            truncated += bool(res.get("stdout_truncated"))
            status, written = alice.get_file(sbid, f"/work/out{i}")
            assert status == 200 and len(written) == 16 * MiB, (status, len(written))
            if out != written[:len(out)]:
                spliced.append(i)
    finally:
        alice.delete(sbid)
    attack.note(f"captured {[round(n / MiB, 1) for n in captured]} MiB, {sum(captured) / MiB:.1f} MiB in all; "
                f"{truncated} of 5 marked stdout_truncated; {len(spliced)} not the beginning of their output")
    assert sum(captured) <= TENANT_MAX_CAPTURE, f"{sum(captured) / MiB:.1f} MiB captured for one tenant at once"
    assert truncated >= 1, "no answer says its output was cut"
    assert not spliced, f"the captured output of execs {spliced} is not the beginning of what they wrote"

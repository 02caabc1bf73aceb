"""Running commands over the API: exec (result and stream), background
processes, their output, stdin, signals and waits.

Where the order of two outputs matters, the program inside the sandbox waits
until its pipe is drained (FIONREAD says 0) before writing the next thing, so
the agent has read each write on its own: an ordering that depends on the
product, not on timing luck.
"""

import base64
import threading

import pytest

from conftest import IO_TIMEOUT, collect, event_bytes, result_bytes, wait_until

# Python run inside the sandbox: write(fd, bytes) returns once the agent has read them.
DRAIN = r"""
import fcntl, os, struct, termios
def write(fd, b):
    os.write(fd, b)
    while struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]:
        pass
"""


def proc_path(sbid, pid, tail=""):
    return f"/v1/sandboxes/{sbid}/processes/{pid}{tail}"


def start_proc(api, sbid, cmd, **fields):
    fields["cmd"] = cmd
    body = api.ok("POST", f"/v1/sandboxes/{sbid}/processes", fields, expect=(201,))
    assert isinstance(body["pid"], int) and body["pid"] > 0
    return body["pid"]


# ----------------------------------------------------------------------------
# exec


def test_result_has_stdout_stderr_and_exit_code(api, sandbox):
    res = api.exec(sandbox, ["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert res["stdout"] == "out\n"
    assert res["stderr"] == "err\n"
    assert res["exit_code"] == 3
    assert res["signal"] is None
    assert res["timed_out"] is False
    assert isinstance(res["pid"], int)
    assert isinstance(res["duration_ms"], int)


def test_shell_string_runs_in_work_as_root(api, sandbox):
    res = api.exec(sandbox, "pwd; id -u; echo $((6*7))")
    assert res["stdout"] == "/work\n0\n42\n", res


def test_env_and_cwd(api, sandbox):
    res = api.exec(sandbox, ["sh", "-c", "echo $FOO; pwd"], env={"FOO": "bar baz"}, cwd="/tmp")
    assert res["stdout"] == "bar baz\n/tmp\n", res


def test_a_command_can_run_as_another_user(api, sandbox):
    status, res = api.json("POST", f"/v1/sandboxes/{sandbox}/exec", {"cmd": ["id", "-un"], "user": "nobody"})
    assert status == 200, res
    assert (res["exit_code"], res["stdout"]) == (0, "nobody\n"), res
    status, res = api.json("POST", f"/v1/sandboxes/{sandbox}/exec",
                           {"cmd": ["sh", "-c", "id -un; pwd"], "user": "nobody", "cwd": "/tmp"})
    assert status == 200, res
    assert res["stdout"] == "nobody\n/tmp\n", res
    # spaced's umask (077) reaches nothing such a user needs: the shim under /.space is loaded
    # (ld.so would complain on stderr) and what it writes is as open as its own umask says
    res = api.exec(sandbox, "ls -l / >/dev/null && umask 022 && echo x > /tmp/mine && stat -c %a /tmp/mine",
                   user="nobody")
    assert (res["exit_code"], res["stdout"], res["stderr"]) == (0, "644\n", ""), res


def test_everyday_tools_work(api, sandbox):
    """ls -l and stat are what a user types first; they must not fail on the sandbox's own files."""
    res = api.exec(sandbox, "touch /work/f && ls -l /work && stat -c %s /work/f")
    assert res["exit_code"] == 0, res
    assert " f\n" in res["stdout"] and res["stdout"].endswith("0\n"), res


def test_exit_codes(api, sandbox):
    for code in (0, 1, 42, 255):
        res = api.exec(sandbox, f"exit {code}")
        assert (res["exit_code"], res["signal"]) == (code, None), res
        with api.exec_stream(sandbox, f"exit {code}") as s:
            _, _, events = collect(s)
        assert events[0]["type"] == "start"
        assert events[-1]["type"] == "exit" and events[-1]["exit_code"] == code


def test_killed_by_a_signal_reports_it_and_128_plus_n(api, sandbox):
    for sig in (9, 15, 2):
        res = api.exec(sandbox, ["sh", "-c", f"kill -{sig} $$"])
        assert (res["signal"], res["exit_code"], res["timed_out"]) == (sig, 128 + sig, False), res
        with api.exec_stream(sandbox, ["sh", "-c", f"kill -{sig} $$"]) as s:
            _, _, events = collect(s)
        assert (events[-1]["signal"], events[-1]["exit_code"]) == (sig, 128 + sig), events[-1]


def test_stream_events_are_in_write_order(api, sandbox):
    script = DRAIN + r"""
for i in range(6):
    write(1, b"out%d\n" % i)
    write(2, b"err%d\n" % i)
write(1, b"last\n")
"""
    with api.exec_stream(sandbox, ["python3", "-c", script]) as s:
        assert s.status == 200, s.body
        assert s.headers["content-type"].startswith("application/x-ndjson")
        events = list(s)
    assert events[0]["type"] == "start" and isinstance(events[0]["pid"], int)
    assert events[-1]["type"] == "exit" and events[-1]["exit_code"] == 0, events[-1]
    seen = []  # consecutive events of one stream merged: a read may split a write, not reorder it
    for ev in events[1:-1]:
        if seen and seen[-1][0] == ev["type"]:
            seen[-1] = (ev["type"], seen[-1][1] + event_bytes(ev))
        else:
            seen.append((ev["type"], event_bytes(ev)))
    expected = []
    for i in range(6):
        expected += [("stdout", b"out%d\n" % i), ("stderr", b"err%d\n" % i)]
    expected.append(("stdout", b"last\n"))
    assert seen == expected


def test_stream_exit_event_fields(api, sandbox):
    with api.exec_stream(sandbox, "echo hi; exit 3") as s:
        out, err, events = collect(s)
    assert out == b"hi\n" and err == b""
    ex = events[-1]
    assert ex["type"] == "exit"
    assert (ex["exit_code"], ex["signal"], ex["timed_out"]) == (3, None, False)
    assert isinstance(ex["duration_ms"], int)
    assert [e["type"] for e in events].count("exit") == 1


def test_inline_stdin(api, sandbox):
    res = api.exec(sandbox, ["python3", "-c", "import sys; print(sys.stdin.read()[::-1])"], stdin="hello\nworld")
    assert res["stdout"] == "dlrow\nolleh\n", res


def test_inline_stdin_b64_carries_every_byte(api, sandbox):
    data = bytes(range(256)) * 4
    res = api.exec(sandbox, ["python3", "-c", "import sys; print(sys.stdin.buffer.read().hex())"],
                   stdin_b64=base64.b64encode(data).decode())
    assert res["exit_code"] == 0, res
    assert bytes.fromhex(res["stdout"].strip()) == data


def test_without_stdin_the_command_reads_end_of_file(api, sandbox):
    res = api.exec(sandbox, ["wc", "-c"], timeout=60)
    assert (res["exit_code"], res["stdout"].strip(), res["timed_out"]) == (0, "0", False), res


def test_timeout_kills_the_whole_process_tree(api, sandbox):
    res = api.exec(sandbox, ["sh", "-c", "sleep 1000 & echo $!; sleep 1000"], timeout=1)
    assert res["timed_out"] is True
    assert res["exit_code"] == 137
    child = res["stdout"].strip()
    assert child.isdigit(), res

    def no_sleep_left():
        ps = api.exec(sandbox, ["ps", "-eo", "pid,stat,comm"])
        rows = [l.split() for l in ps["stdout"].splitlines()[1:]]
        return not any(r[2] == "sleep" or r[0] == child for r in rows) or None

    wait_until(no_sleep_left, 10, "the timed-out command's background child to be gone")


def test_timeout_in_a_stream(api, sandbox):
    with api.exec_stream(sandbox, "echo before; sleep 1000", timeout=3) as s:
        out, _, events = collect(s)
    assert out == b"before\n"
    assert events[-1]["type"] == "exit"
    assert events[-1]["timed_out"] is True and events[-1]["exit_code"] == 137


def test_non_utf8_output_arrives_as_exact_bytes(api, sandbox):
    raw = b"\xff\xfe\x00abc\x80\xc3("
    cmd = ["python3", "-c", f"import os; os.write(1, {raw!r})"]
    with api.exec_stream(sandbox, cmd) as s:
        out, _, events = collect(s)
    assert out == raw
    assert any("data_b64" in e for e in events if e["type"] == "stdout")
    res = api.exec(sandbox, cmd)
    assert "stdout_b64" in res, res
    assert result_bytes(res, "stdout") == raw


def test_utf8_output_arrives_as_text(api, sandbox):
    text = "héllo wörld — ünïcödé 😀\n"
    with api.exec_stream(sandbox, ["printf", "%s", text]) as s:
        _, _, events = collect(s)
    outs = [e for e in events if e["type"] == "stdout"]
    assert "".join(e["data"] for e in outs) == text, outs
    res = api.exec(sandbox, ["printf", "%s", text])
    assert res["stdout"] == text


def test_a_valid_utf8_chunk_is_sent_as_data(api, sandbox):
    """docs/api.md: "a chunk that is valid UTF-8 is sent as the string data"."""
    with api.exec_stream(sandbox, ["printf", "\\n\\n\\n"]) as s:
        _, _, events = collect(s)
    outs = [e for e in events if e["type"] == "stdout"]
    assert outs and all("data" in e for e in outs), outs


def test_a_multibyte_character_is_never_split_across_events(api, sandbox):
    # Each character is written in pieces, every piece read by the agent on its own:
    # first a byte at a time, then an ASCII byte glued to a lead byte.
    script = DRAIN + r"""
for ch in "é€😀ü":
    for b in ch.encode():
        write(1, bytes([b]))
for ch in "é€😀":
    b = ch.encode()
    write(1, b"x" + b[:1])
    write(1, b[1:] + b"y")
write(1, b"\n")
"""
    with api.exec_stream(sandbox, ["python3", "-c", script]) as s:
        out, _, events = collect(s)
    assert out.decode() == "é€😀üxéyx€yx😀y\n"
    for ev in events:
        if ev["type"] == "stdout":
            chunk = event_bytes(ev)
            try:
                chunk.decode("utf-8")
            except UnicodeDecodeError:
                pytest.fail(f"event {ev} holds a piece of a character: {chunk!r}")


def test_large_output_streams_completely(api, sandbox):
    n = 8 << 20
    cmd = ["python3", "-c", f"import sys; sys.stdout.write('x' * {n})"]
    with api.exec_stream(sandbox, cmd) as s:
        out, _, events = collect(s)
    assert len(out) == n and out == b"x" * n
    assert events[-1]["exit_code"] == 0


# ----------------------------------------------------------------------------
# background processes


def test_stdin_taken_by_a_process_that_then_exits_is_a_success(api, sandbox):
    """The process reads exactly what it is sent and exits at once, before the request's body
    is over (here the end of a chunked body is held back until the exit is seen): the write
    happened, so it answers 204, not 409."""
    pid = start_proc(api, sandbox, ["head", "-c", "3"], stdin_open=True)
    conn = api.connection()
    try:
        conn.putrequest("POST", proc_path(sandbox, pid, "/stdin"))
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        conn.send(b"3\r\nabc\r\n")
        wait_until(lambda: api.ok("GET", proc_path(sandbox, pid))["state"] == "exited", 60, "head to exit")
        conn.send(b"0\r\n\r\n")
        resp = conn.getresponse()
        assert resp.status == 204, (resp.status, resp.read())
    finally:
        conn.close()
    assert api.ok("GET", proc_path(sandbox, pid))["exit_code"] == 0
    # one whose body still holds bytes when the process is gone gets 409
    status, body = api.json("POST", proc_path(sandbox, pid, "/stdin"), raw=b"abc")
    assert status == 409, (status, body)


def test_process_list_get_and_wait(api, sandbox):
    fast = start_proc(api, sandbox, ["sh", "-c", "echo quick; exit 5"])
    slow = start_proc(api, sandbox, ["sh", "-c", "read line; echo got $line; exit 7"], stdin_open=True)

    done = api.ok("GET", proc_path(sandbox, fast, "/wait"))
    assert (done["pid"], done["state"], done["exit_code"], done["signal"]) == (fast, "exited", 5, None)

    listed = api.ok("GET", f"/v1/sandboxes/{sandbox}/processes")["processes"]
    by_pid = {p["pid"]: p for p in listed}
    assert by_pid[fast]["state"] == "exited" and by_pid[fast]["exit_code"] == 5
    assert by_pid[slow]["state"] == "running" and by_pid[slow]["exit_code"] is None
    assert "read line" in by_pid[slow]["cmd"]
    assert by_pid[slow]["started_at"].endswith("Z")

    one = api.ok("GET", proc_path(sandbox, slow))
    assert one["pid"] == slow and one["state"] == "running"

    # A wait with a timeout on a running process answers "running" at the deadline.
    timed = api.ok("GET", proc_path(sandbox, slow, "/wait?timeout=0.2"))
    assert timed["state"] == "running" and timed["exit_code"] is None

    # A wait without a timeout answers when the process exits, not before.
    result = {}
    waiter = threading.Thread(target=lambda: result.update(api.ok("GET", proc_path(sandbox, slow, "/wait"))))
    waiter.start()
    api.ok("POST", proc_path(sandbox, slow, "/stdin"), raw=b"go\n", expect=(204,))
    waiter.join(IO_TIMEOUT)
    assert not waiter.is_alive()
    assert (result["state"], result["exit_code"]) == ("exited", 7), result

    # Waiting did not read the output: it is all still there.
    with api.stream("GET", proc_path(sandbox, slow, "/output")) as s:
        out, _, events = collect(s)
    assert out == b"got go\n"
    assert events[-1]["type"] == "exit" and events[-1]["exit_code"] == 7


def test_a_process_record_keeps_its_start(api, sandbox):
    """argv, the environment and folder the start gave, and its tag (at most 128 bytes)."""
    tag = "t" * 128
    pid = start_proc(api, sandbox, ["sleep", "300"], env={"A": "1"}, cwd="/tmp", tag=tag)
    shell = start_proc(api, sandbox, "sleep 301")
    try:
        by_pid = {p["pid"]: p for p in api.ok("GET", f"/v1/sandboxes/{sandbox}/processes")["processes"]}
        p = by_pid[pid]
        assert (p["argv"], p["env"], p["cwd"], p["tag"], p["cmd"]) == (["sleep", "300"], {"A": "1"}, "/tmp", tag,
                                                                       "sleep 300"), p
        q = api.ok("GET", proc_path(sandbox, shell))
        assert (q["argv"], q["env"], q["cwd"]) == (["/bin/sh", "-c", "sleep 301"], {}, "/work"), q
        assert "tag" not in q
        status, err = api.json("POST", f"/v1/sandboxes/{sandbox}/processes", {"cmd": ["true"], "tag": tag + "u"})
        assert status == 400 and "tag" in err["error"]["message"], err
    finally:
        for x in (pid, shell):
            api.json("POST", proc_path(sandbox, x, "/signal"), {"signal": 9})


def test_unknown_process_is_404(api, sandbox):
    for path in ("", "/wait", "/output"):
        status, body = api.json("GET", proc_path(sandbox, 99999, path))
        assert status == 404 and body["error"]["code"] == "not_found", (path, body)


def test_process_stdin_route_and_close(api, sandbox):
    pid = start_proc(api, sandbox, ["python3", "-u", "-c",
                                    "import sys\nfor l in sys.stdin: print(l.upper(), end='')\nprint('bye')"],
                     stdin_open=True)
    with api.stream("GET", proc_path(sandbox, pid, "/output")) as s:
        api.ok("POST", proc_path(sandbox, pid, "/stdin"), raw=b"hello\n", expect=(204,))
        got = b""
        while b"HELLO\n" not in got:
            ev = s.next_event()
            assert ev and ev["type"] == "stdout", ev
            got += event_bytes(ev)
        api.ok("POST", proc_path(sandbox, pid, "/stdin"), raw=bytes(range(32, 127)) + b"\n", expect=(204,))
        api.ok("DELETE", proc_path(sandbox, pid, "/stdin"), expect=(204,))
        out, _, events = collect(s)
    assert got + out == b"HELLO\n" + bytes(range(32, 127)).upper() + b"\nbye\n"
    assert events[-1]["type"] == "exit" and events[-1]["exit_code"] == 0


def test_stdin_to_a_process_without_stdin_is_refused(api, sandbox):
    pid = start_proc(api, sandbox, ["sh", "-c", "echo done"])
    api.ok("GET", proc_path(sandbox, pid, "/wait"))
    status, body = api.json("POST", proc_path(sandbox, pid, "/stdin"), raw=b"late\n")
    assert 400 <= status < 500 and "error" in body, (status, body)


def test_signal_a_background_process(api, sandbox):
    pid = start_proc(api, sandbox, ["sleep", "1000"])
    api.ok("POST", proc_path(sandbox, pid, "/signal"), {"signal": "TERM"}, expect=(204,))
    p = api.ok("GET", proc_path(sandbox, pid, "/wait"))
    assert (p["state"], p["signal"], p["exit_code"]) == ("exited", 15, 143), p

    pid = start_proc(api, sandbox, ["sleep", "1000"])
    api.ok("POST", proc_path(sandbox, pid, "/signal"), {"signal": 9}, expect=(204,))
    p = api.ok("GET", proc_path(sandbox, pid, "/wait"))
    assert (p["signal"], p["exit_code"]) == (9, 137), p

    status, body = api.json("POST", proc_path(sandbox, pid, "/signal"), {"signal": 9})
    assert status == 409 and body["error"]["code"] == "conflict", (status, body)


def test_signal_reaches_the_whole_process_group(api, sandbox):
    pid = start_proc(api, sandbox, ["sh", "-c", "sleep 1000 & sleep 1000 & wait"])
    wait_until(lambda: api.exec(sandbox, "pgrep -c -x sleep")["stdout"].strip() == "2", 10,
               "both sleeps to start")
    api.ok("POST", proc_path(sandbox, pid, "/signal"), {"signal": "KILL"}, expect=(204,))
    api.ok("GET", proc_path(sandbox, pid, "/wait"))
    wait_until(lambda: api.exec(sandbox, "pgrep -x sleep")["exit_code"] == 1, 10, "no sleep left")


COUNTER = r"""
import select, sys
i = 0
while True:
    r, _, _ = select.select([sys.stdin], [], [], 0.05)
    if r and not sys.stdin.readline():
        break
    print(i, flush=True)
    i += 1
print("bye", flush=True)
"""


def numbers(chunks):
    """The counter values in the complete lines of chunks (print() may write a number and its newline apart)."""
    text = b"".join(chunks)
    return [int(x) for x in text[:text.rfind(b"\n") + 1].split() if x.isdigit()]


def test_reattach_after_the_client_went_away(api, sandbox):
    pid = start_proc(api, sandbox, ["python3", "-u", "-c", COUNTER], stdin_open=True)

    first = api.stream("GET", proc_path(sandbox, pid, "/output"))
    assert first.status == 200, first.body
    seen = []
    while len(numbers(seen)) < 2:
        ev = first.next_event()
        assert ev and ev["type"] == "stdout", ev
        seen.append(event_bytes(ev))
    first.close()  # the client disappears mid-stream
    last_before = numbers(seen)[-1]

    p = api.ok("GET", proc_path(sandbox, pid))
    assert p["state"] == "running", "the process must outlive its reader"

    with api.stream("GET", proc_path(sandbox, pid, "/output")) as again:
        later = []
        while len(numbers(later)) < 3:
            ev = again.next_event()
            assert ev and ev["type"] == "stdout", ev
            later.append(event_bytes(ev))
        got = numbers(later)
        assert got[0] > last_before, (last_before, got)
        assert got == list(range(got[0], got[0] + len(got))), "output lost or reordered while attached"
        api.ok("DELETE", proc_path(sandbox, pid, "/stdin"), expect=(204,))
        out, _, events = collect(again)
    assert out.endswith(b"bye\n")
    assert events[-1]["type"] == "exit" and events[-1]["exit_code"] == 0


STREAM_KEEPALIVE_S = 15


def test_a_silent_stream_gets_keepalive_events(api, sandbox):
    """A stream with nothing to say for STREAM_KEEPALIVE_S gets a {"type": "keepalive"} event, which
    clients ignore; the output and the exit follow as usual."""
    with api.exec_stream(sandbox, ["sh", "-c", f"sleep {STREAM_KEEPALIVE_S + 3}; echo done"]) as s:
        out, _, events = collect(s)
    kinds = [e["type"] for e in events]
    assert "keepalive" in kinds, kinds
    assert kinds.index("keepalive") < kinds.index("stdout") and out == b"done\n", events
    assert events[-1]["type"] == "exit" and events[-1]["exit_code"] == 0


# Prints its total in chunks once it reads a line (so every reader can join first), then "end".
FLOOD = r"""
import sys
sys.stdin.readline()
n = int(sys.argv[1])
chunk = bytes(range(256)) * 256
while n > 0:
    k = min(n, len(chunk))
    sys.stdout.buffer.write(chunk[:k])
    n -= k
sys.stdout.buffer.flush()
"""

PROC_MAX_READERS = 16
SANDBOX_MAX_READERS = 128
PROC_DROP_KEEP = 64 * 1024
SP_WINDOW = 256 * 1024


def flood_bytes(n):
    return ((bytes(range(256)) * 256) * (n // 65536 + 1))[:n]


def open_reader(api, sbid, pid):
    s = api.stream("GET", proc_path(sbid, pid, "/output"))
    assert s.status == 200, s.body
    return s


def test_two_readers_get_the_same_bytes(api, sandbox):
    total = 3 * SP_WINDOW
    pid = start_proc(api, sandbox, ["python3", "-c", FLOOD, str(total)], stdin_open=True)
    with open_reader(api, sandbox, pid) as a, open_reader(api, sandbox, pid) as b:
        assert api.ok("GET", proc_path(sandbox, pid))["readers"] == 2
        api.ok("POST", proc_path(sandbox, pid, "/stdin"), raw=b"go\n", expect=(204,))
        # one reader at a time in this thread: under "block" the process waits for the slower
        got = {}
        reader = threading.Thread(target=lambda: got.update(a=collect(a)))
        reader.start()
        got["b"] = collect(b)
        reader.join(IO_TIMEOUT)
        assert not reader.is_alive()
    for name in "ab":
        out, _, events = got[name]
        assert out == flood_bytes(total), name
        assert events[-1]["type"] == "exit" and events[-1]["exit_code"] == 0, events[-1]


def test_a_reader_that_leaves_does_not_stall_the_others(api, sandbox):
    total = 4 * SP_WINDOW
    pid = start_proc(api, sandbox, ["python3", "-c", FLOOD, str(total)], stdin_open=True)
    left = open_reader(api, sandbox, pid)
    with open_reader(api, sandbox, pid) as stays:
        api.ok("POST", proc_path(sandbox, pid, "/stdin"), raw=b"go\n", expect=(204,))
        ev = left.next_event()
        assert ev["type"] == "stdout", ev
        left.close()  # leaves with output untaken: its share of the credit goes back
        out, _, events = collect(stays)
    assert out == flood_bytes(total)
    assert events[-1]["type"] == "exit" and events[-1]["exit_code"] == 0


def test_the_exit_reaches_every_reader(api, sandbox):
    pid = start_proc(api, sandbox, ["sh", "-c", "read x; echo $x; exit 4"], stdin_open=True)
    streams = [open_reader(api, sandbox, pid) for _ in range(3)]
    try:
        api.ok("POST", proc_path(sandbox, pid, "/stdin"), raw=b"hi\n", expect=(204,))
        for s in streams:
            out, _, events = collect(s)
            assert out == b"hi\n" and events[-1]["type"] == "exit" and events[-1]["exit_code"] == 4, events
    finally:
        for s in streams:
            s.close()
    assert api.ok("GET", proc_path(sandbox, pid))["readers"] == 0


def test_readers_of_one_process_are_limited(api, sandbox):
    pid = start_proc(api, sandbox, ["sh", "-c", "read x; echo $x"], stdin_open=True)
    streams = [open_reader(api, sandbox, pid) for _ in range(PROC_MAX_READERS)]
    try:
        status, _, body = api.request("GET", proc_path(sandbox, pid, "/output"))
        assert status == 429 and b"too_many" in body and b"readers" in body, (status, body)
        streams.pop().close()
        wait_until(lambda: api.ok("GET", proc_path(sandbox, pid))["readers"] < PROC_MAX_READERS, IO_TIMEOUT,
                   "the closed reader to be let go")
        streams.append(open_reader(api, sandbox, pid))  # room again
        api.ok("POST", proc_path(sandbox, pid, "/stdin"), raw=b"x\n", expect=(204,))
        for s in streams:
            out, _, events = collect(s)
            assert out == b"x\n" and events[-1]["type"] == "exit"
    finally:
        for s in streams:
            s.close()


def test_readers_of_one_sandbox_are_limited(api, sandbox):
    per = SANDBOX_MAX_READERS // PROC_MAX_READERS
    pids = [start_proc(api, sandbox, ["sh", "-c", "read x"], stdin_open=True) for _ in range(per + 1)]
    streams = []
    try:
        for pid in pids[:per]:
            streams += [open_reader(api, sandbox, pid) for _ in range(PROC_MAX_READERS)]
        status, _, body = api.request("GET", proc_path(sandbox, pids[per], "/output"))
        assert status == 429 and b"too_many" in body, (status, body)
        streams.pop().close()
        wait_until(lambda: sum(api.ok("GET", proc_path(sandbox, p))["readers"] for p in pids[:per])
                   < SANDBOX_MAX_READERS, IO_TIMEOUT, "the closed reader to be let go")
        streams.append(open_reader(api, sandbox, pids[per]))
    finally:
        for s in streams:
            s.close()
        for pid in pids:
            api.ok("DELETE", proc_path(sandbox, pid, "/stdin"), expect=(204,))


def test_output_policy_is_checked_and_shown(api, sandbox):
    status, _, body = api.request("POST", f"/v1/sandboxes/{sandbox}/processes", {"cmd": ["true"], "output": "lose"})
    assert status == 400 and b"output" in body, body
    status, _, body = api.request("POST", f"/v1/sandboxes/{sandbox}/exec", {"cmd": ["true"], "output": 1})
    assert status == 400, body
    blocked = start_proc(api, sandbox, ["true"])
    dropped = start_proc(api, sandbox, ["true"], output="drop")
    assert api.ok("GET", proc_path(sandbox, blocked))["output"] == "block"
    assert api.ok("GET", proc_path(sandbox, dropped))["output"] == "drop"
    res = api.ok("POST", f"/v1/sandboxes/{sandbox}/exec", {"cmd": ["echo", "hi"], "output": "drop"})
    assert res["stdout"] == "hi\n"  # a capture reads everything: nothing is dropped


def test_unread_output_of_a_drop_process_is_discarded_and_its_tail_kept(api, sandbox):
    total = 16 * SP_WINDOW  # far past every buffer on the way
    pid = start_proc(api, sandbox, ["python3", "-c", FLOOD, str(total)], stdin_open=True, stdin="go\n",
                     output="drop")
    done = api.ok("GET", proc_path(sandbox, pid, f"/wait?timeout={IO_TIMEOUT}"))
    assert (done["state"], done["exit_code"]) == ("exited", 0), done  # never held back
    with open_reader(api, sandbox, pid) as s:
        out, _, events = collect(s)
    assert events[0]["type"] == "dropped", events[:2]
    dropped = events[0]["bytes"]
    assert 0 < len(out) <= PROC_DROP_KEEP and dropped + len(out) == total, (dropped, len(out))
    assert out == flood_bytes(total)[-len(out):], "the tail is the most recent output"
    assert events[-1]["type"] == "exit" and events[-1]["exit_code"] == 0


def test_a_block_process_is_held_back_until_read(api, sandbox):
    total = 16 * SP_WINDOW
    pid = start_proc(api, sandbox, ["python3", "-c", FLOOD, str(total)], stdin_open=True, stdin="go\n")
    # unread, it cannot finish: its writes wait for a reader
    held = api.ok("GET", proc_path(sandbox, pid, "/wait?timeout=1"))
    assert held["state"] == "running" and held["output"] == "block", held
    with open_reader(api, sandbox, pid) as s:
        out, _, events = collect(s)
    assert out == flood_bytes(total) and all(e["type"] != "dropped" for e in events)
    assert events[-1]["type"] == "exit" and events[-1]["exit_code"] == 0


def test_output_of_a_finished_process_is_kept_for_its_first_reader(api, sandbox):
    pid = start_proc(api, sandbox, ["sh", "-c", "echo one; echo two >&2; exit 6"])
    api.ok("GET", proc_path(sandbox, pid, "/wait"))
    with api.stream("GET", proc_path(sandbox, pid, "/output")) as s:
        out, err, events = collect(s)
    assert (out, err) == (b"one\n", b"two\n")
    assert events[-1]["type"] == "exit" and events[-1]["exit_code"] == 6
    assert all(e["type"] != "start" for e in events)

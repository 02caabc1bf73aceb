"""sandbox.commands: results, typed errors, streaming order, background handles, stdin, signals."""

import hashlib
import os
import threading

import pytest

import space
from space import Sandbox

# Waits (at most 60 s) for /work/go to exist; the tests create it once they have
# seen the first line, so the command cannot end before the callback saw it.
WAIT_FOR_GO = ("i=0; while [ ! -e /work/go ]; do i=$((i+1)); [ $i -gt 600 ] && { echo gave up; exit 3; }; "
               "sleep 0.1; done")


def test_run_returns_the_result(sandbox):
    r = sandbox.commands.run("python3 -c 'print(6*7)'")
    assert (r.stdout, r.stderr, r.exit_code, r.signal, r.timed_out) == ("42\n", "", 0, None, False)
    assert isinstance(r.pid, int) and isinstance(r.duration_ms, int)
    r = sandbox.commands.run(["python3", "-c", "import sys; sys.stderr.write('to err')"])
    assert (r.stdout, r.stderr) == ("", "to err")


def test_a_process_over_the_memory_limit_says_so(sandbox):
    with pytest.raises(space.CommandExitError) as e:
        sandbox.commands.run(["python3", "-c", "a = []\nwhile True: a.append(b'x' * (16 << 20))"])
    r = e.value.result
    assert (r.exit_code, r.signal, r.oom_killed, r.oom_kills) == (137, 9, True, 1)
    assert sandbox.commands.run("echo alive").stdout == "alive\n"


def test_a_non_zero_exit_raises_with_the_output(sandbox):
    with pytest.raises(space.CommandExitError) as e:
        sandbox.commands.run("ls /nope")
    err = e.value
    assert err.exit_code == 2 and "/nope" in err.stderr and err.stdout == ""
    assert err.result.exit_code == 2 and isinstance(err, space.SpaceError)
    with pytest.raises(space.CommandExitError) as e:
        sandbox.commands.run("echo partial; exit 7")
    assert (e.value.exit_code, e.value.stdout) == (7, "partial\n")


def test_env_cwd_user_and_stdin(sandbox):
    r = sandbox.commands.run("echo $X $Y; pwd; id -un", env={"X": "1", "Y": "two words"}, cwd="/tmp", user="nobody")
    assert r.stdout == "1 two words\n/tmp\nnobody\n"
    assert sandbox.commands.run("pwd").stdout == "/work\n"
    assert sandbox.commands.run("cat", stdin="fed in").stdout == "fed in"
    assert sandbox.commands.run(["wc", "-c"], stdin=b"\x00\xff" * 10).stdout.strip() == "20"


def test_large_stdin_goes_through_the_stdin_route(sandbox):
    data = os.urandom(3 << 20)
    r = sandbox.commands.run("sha256sum", stdin=data)
    assert r.stdout.split()[0] == hashlib.sha256(data).hexdigest()


def test_binary_output_arrives_as_bytes(sandbox):
    r = sandbox.commands.run(r"printf '\377\376\000abc'")
    assert r.stdout_bytes == b"\xff\xfe\x00abc"
    assert r.stdout == "\ufffd\ufffd\x00abc"


def test_a_command_that_cannot_start_is_exec_failed(sandbox):
    with pytest.raises(space.ExecFailedError) as e:
        sandbox.commands.run(["/no/such/binary"])
    assert e.value.status == 422
    with pytest.raises(space.InvalidArgumentError):
        sandbox.commands.run([])


def test_a_command_past_its_timeout_is_killed_and_raises(sandbox):
    with pytest.raises(space.TimeoutError) as e:
        sandbox.commands.run("echo started; sleep 600", timeout=1)
    res = e.value.result
    assert res.timed_out and res.exit_code == 137 and res.stdout == "started\n"
    assert isinstance(e.value, TimeoutError)


def test_callbacks_see_the_first_line_before_the_command_ends(sandbox):
    events = []

    def on_stdout(text):
        events.append(("stdout", text))
        if "first" in text:
            sandbox.files.write("/work/go", "")  # only now may the command go on
            events.append(("released", None))

    def on_stderr(text):
        events.append(("stderr", text))

    r = sandbox.commands.run("echo first; echo warn >&2; " + WAIT_FOR_GO + "; echo second",
                             on_stdout=on_stdout, on_stderr=on_stderr)
    events.append(("returned", r.exit_code))
    out = [e for e in events if e[0] != "stderr"]
    released = out.index(("released", None))
    assert "".join(t for _, t in out[:released]) == "first\n"      # seen before the command could end
    assert "".join(t for _, t in out[released + 1:-1]) == "second\n"
    assert out[-1] == ("returned", 0)
    assert r.stdout == "first\nsecond\n" and r.stderr == "warn\n"


def test_a_failing_callback_stops_and_kills_the_command(sandbox, wait_until):
    def boom(text):
        raise ValueError("callback failed")

    with pytest.raises(ValueError):
        sandbox.commands.run("echo tick; exec sleep 100000", on_stdout=boom)
    sleeper = [p for p in sandbox.commands.list() if "sleep 100000" in p.cmd]
    assert sleeper
    wait_until(lambda: sandbox.commands.get(sleeper[0].pid).state == "exited", 60, "the command to be killed")


def test_background_command_with_stdin_and_kill(sandbox, wait_until):
    sandbox.files.write("/work/server.py", "import sys\nprint('ready', flush=True)\n"
                                           "for l in sys.stdin:\n    print('got', l.strip(), flush=True)\n")
    seen = []
    h = sandbox.commands.run("python3 server.py", background=True, on_stdout=seen.append)
    assert h.is_running() and h.exit_code is None
    wait_until(lambda: "ready" in "".join(seen), 60, "the server to start")
    h.send_stdin("hello\n")
    wait_until(lambda: "got hello" in "".join(seen), 60, "the answer to stdin")
    assert "got hello" in h.stdout
    assert h.kill() is True
    res = h.wait(timeout=60)  # ended by kill(): not an error
    assert res.exit_code == 137 and res.signal == 9 and "got hello\n" in res.stdout
    assert not h.is_running() and h.exit_code == 137
    assert h.kill() is False


def test_background_close_stdin_and_exit_codes(sandbox):
    h = sandbox.commands.run("cat; echo done >&2", background=True)
    h.send_stdin(b"bytes in\n")
    h.close_stdin()
    res = h.wait(timeout=60)
    assert (res.stdout, res.stderr, res.exit_code) == ("bytes in\n", "done\n", 0)
    failing = sandbox.commands.run("echo out; exit 4", background=True)
    with pytest.raises(space.CommandExitError) as e:
        failing.wait(timeout=60)
    assert e.value.exit_code == 4 and e.value.stdout == "out\n"
    given = sandbox.commands.run("cat", background=True, stdin="given")
    assert given.wait(timeout=60).stdout == "given"


def test_waiting_on_a_handle_has_a_timeout(sandbox):
    h = sandbox.commands.run("sleep 100000", background=True)
    with pytest.raises(space.TimeoutError):
        h.wait(timeout=0.2)
    assert h.is_running()
    assert h.signal("TERM") is True
    res = h.wait(timeout=60)  # signalled on purpose: not an error
    assert (res.exit_code, res.signal, h.exit_code) == (128 + 15, 15, 128 + 15)


def test_list_connect_kill_and_wait_by_pid(sandbox, wait_until):
    h = sandbox.commands.run("while read l; do echo \"echo $l\"; done", background=True)
    procs = {p.pid: p for p in sandbox.commands.list()}
    assert procs[h.pid].state == "running" and "while read" in procs[h.pid].cmd
    h.disconnect()
    # another client takes the process over by its pid
    other = Sandbox.connect(sandbox.id)
    seen = []
    h2 = other.commands.connect(h.pid, on_stdout=seen.append)
    other.commands.send_stdin(h.pid, "one\n")
    wait_until(lambda: "echo one" in "".join(seen), 60, "the reconnected handle to see output")
    with pytest.raises(space.TimeoutError):
        other.commands.wait(h.pid, timeout=0.1)
    assert other.commands.kill(h.pid) is True
    info = other.commands.wait(h.pid, timeout=60)
    assert info.state == "exited" and info.signal == 9
    assert other.commands.kill(h.pid) is False
    assert h2.wait(timeout=60).exit_code == 137
    with pytest.raises(space.ProcessNotFound):
        other.commands.get(999999)
    with pytest.raises(space.ProcessNotFound):
        other.commands.connect(999999)


def test_two_handles_read_one_command_and_the_output_policy(sandbox, wait_until):
    with pytest.raises(space.InvalidArgumentError):
        sandbox.commands.run("true", output="lose")
    h = sandbox.commands.run("read go; seq 1 3000", background=True)
    other = Sandbox.connect(sandbox.id).commands.connect(h.pid)
    wait_until(lambda: sandbox.commands.get(h.pid).readers == 2, 60, "both handles to be reading")
    assert sandbox.commands.get(h.pid).output == "block"
    h.send_stdin("go\n")
    want = "".join("%d\n" % i for i in range(1, 3001))
    assert h.wait(timeout=60).stdout == want and other.wait(timeout=60).stdout == want

    # "drop": nobody reads it and it still finishes; a later handle gets its last output
    d = sandbox.commands.run("read go; head -c 3000000 /dev/zero; echo; echo last", background=True, output="drop")
    d.disconnect()
    wait_until(lambda: sandbox.commands.get(d.pid).readers == 0, 60, "the handle to be let go")
    sandbox.commands.send_stdin(d.pid, "go\n")
    info = sandbox.commands.wait(d.pid, timeout=60)
    assert info.state == "exited" and info.output == "drop"
    handle = sandbox.commands.connect(d.pid)
    late = handle.wait(timeout=60)
    assert late.stdout.endswith("\nlast\n") and len(late.stdout_bytes) <= 64 * 1024
    assert handle.dropped + len(late.stdout_bytes) == 3000000 + len("\nlast\n"), handle.dropped


def test_a_foreground_command_survives_suspend_and_resume(sandbox, wait_until):
    seen, result = [], {}

    def run():
        try:
            result["r"] = sandbox.commands.run("echo first; " + WAIT_FOR_GO + "; echo second", on_stdout=seen.append)
        except Exception as e:  # reported by the main thread
            result["e"] = e

    t = threading.Thread(target=run)
    t.start()
    wait_until(lambda: seen, 60, "the first line")
    assert sandbox.suspend().state == "suspended"
    assert sandbox.resume().state == "running"
    sandbox.files.write("/work/go", "")
    t.join(120)
    assert not t.is_alive()
    assert "e" not in result, result
    assert result["r"].stdout == "first\nsecond\n"


def test_a_background_handle_follows_across_suspend_and_pause(sandbox, wait_until):
    seen = []
    h = sandbox.commands.run("while read l; do echo \"got $l\"; done", background=True, on_stdout=seen.append)
    h.send_stdin("a\n")
    wait_until(lambda: "got a" in "".join(seen), 60, "the first answer")
    sandbox.suspend()
    h.send_stdin("b\n")  # resumes the sandbox transparently
    wait_until(lambda: "got b" in "".join(seen), 60, "the answer after suspend")
    sandbox.pause()
    h.send_stdin("c\n")
    wait_until(lambda: "got c" in "".join(seen), 60, "the answer after pause")
    h.close_stdin()
    assert h.wait(timeout=60).stdout == "got a\ngot b\ngot c\n"

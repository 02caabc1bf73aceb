"""Terminals: a process started with "pty" has a terminal of its own in the sandbox (its
size asked, changed by /resize), what is written to its stdin is typed at it, and its output,
echo included, comes as one stdout stream. Then the CLI's `space shell` and `space exec -it`
under a real terminal (tmux): an interactive python3, a resize seen inside, Ctrl-C, exit codes,
and our terminal's settings restored on the way out.

A terminal's output is read until an expected piece of text appears (the program prints a
marker once it has done what the test waits for); nothing here waits for time to pass.
"""

import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from conftest import MICROVM, SPACE, collect, event_bytes, wait_until

MAX = 4096  # rows or columns of a terminal (SP_PTY_MAX)


def proc_path(sbid, pid, tail=""):
    return f"/v1/sandboxes/{sbid}/processes/{pid}{tail}"


def start_pty(api, sbid, cmd, cols=80, rows=24, **fields):
    body = api.ok("POST", f"/v1/sandboxes/{sbid}/processes",
                  {"cmd": cmd, "pty": {"cols": cols, "rows": rows}, **fields}, expect=(201,))
    return body["pid"]


def type_(api, sbid, pid, data):
    api.ok("POST", proc_path(sbid, pid, "/stdin"), raw=data, expect=(204,))


class Screen:
    """What a terminal process printed, read from its output stream as far as a test needs."""

    def __init__(self, stream):
        self.stream = stream
        self.got = b""
        self.seen = 0  # where the last expected text ended

    def expect(self, marker, timeout=60):
        """Reads until marker appears after the last one expected; returns the output between."""
        deadline = time.monotonic() + timeout
        while (at := self.got.find(marker, self.seen)) < 0:
            assert time.monotonic() < deadline, f"no {marker!r} in {timeout} s of output: {self.got!r}"
            ev = self.stream.next_event()
            assert ev is not None and ev["type"] in ("stdout", "keepalive"), (ev, self.got)
            if ev["type"] == "stdout":
                self.got += event_bytes(ev)
        start, self.seen = self.seen, at + len(marker)
        return self.got[start:self.seen]


# ----------------------------------------------------------------------------
# the API


def test_a_terminal_process_has_a_terminal_of_the_size_asked(api, sandbox):
    res = api.exec(sandbox, ["sh", "-c", "test -t 0 && test -t 1 && test -t 2 && stty size && tty"],
                   pty={"cols": 123, "rows": 45})
    assert res["exit_code"] == 0, res
    lines = res["stdout"].split("\r\n")  # a terminal turns \n into \r\n
    assert lines[0] == "45 123", res
    assert re.fullmatch(r"/dev/pts/\d+", lines[1]), res
    assert res["stderr"] == ""  # stderr is the terminal too: one stream


def test_two_clients_read_one_terminal(api, sandbox):
    pid = start_pty(api, sandbox, ["sh", "-c", "stty -echo; echo ready; read x; echo got-$x"])
    with api.stream("GET", proc_path(sandbox, pid, "/output")) as a, \
            api.stream("GET", proc_path(sandbox, pid, "/output")) as b:
        Screen(a).expect(b"ready")  # the first reader gets what was printed before it joined
        type_(api, sandbox, pid, b"hi\r")
        outs = [collect(s) for s in (a, b)]
    for out, err, events in outs:
        assert out.endswith(b"got-hi\r\n") and err == b"", out
        assert events[-1]["type"] == "exit" and events[-1]["exit_code"] == 0


def test_without_a_terminal_nothing_is_one(api, sandbox):
    res = api.exec(sandbox, ["sh", "-c", "test -t 0 || test -t 1 || echo none"])
    assert res["stdout"] == "none\n"


def test_an_interactive_python_session(api, sandbox):
    pid = start_pty(api, sandbox, ["python3", "-q"], cols=100, rows=30)
    with api.stream("GET", proc_path(sandbox, pid, "/output")) as s:
        term = Screen(s)
        term.expect(b">>> ")
        type_(api, sandbox, pid, b"import os, time\r")
        term.expect(b">>> ")
        type_(api, sandbox, pid, b"print('sum', 6 * 7)\r")
        assert b"print('sum', 6 * 7)" in term.expect(b"sum 42")  # what was typed is echoed

        term.expect(b">>> ")  # typed only at the prompt, as a person would
        type_(api, sandbox, pid, b"print('size', *os.get_terminal_size())\r")
        term.expect(b"size 100 30")
        term.expect(b">>> ")

        # Ctrl-C is a keystroke: the terminal turns it into SIGINT for the foreground job
        # (short sleeps: one SIGINT landing just before a long sleep's system call would wait it out,
        # in Python itself; between two short ones it is seen at once)
        type_(api, sandbox, pid, b"print('sleeping'); [time.sleep(0.05) for _ in range(12000)]\r")
        term.expect(b"sleeping\r\n")
        type_(api, sandbox, pid, b"\x03")
        term.expect(b"KeyboardInterrupt")
        term.expect(b">>> ")

        type_(api, sandbox, pid, b"raise SystemExit(3)\r")
        _, _, events = collect(s)
    assert events[-1]["type"] == "exit" and events[-1]["exit_code"] == 3, events[-1]
    assert all(ev["type"] in ("stdout", "exit", "keepalive") for ev in events)


# taken with sigwait, not in a handler: a second signal during a handler's print would stop it
WINCH = """
import os, signal
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGWINCH})
print("armed", flush=True)
while True:
    signal.sigwait({signal.SIGWINCH})
    print("winch", *os.get_terminal_size(), flush=True)
"""


def test_a_resize_signals_the_program(api, sandbox):
    pid = start_pty(api, sandbox, ["python3", "-c", WINCH])
    with api.stream("GET", proc_path(sandbox, pid, "/output")) as s:
        term = Screen(s)
        term.expect(b"armed")
        for cols, rows in ((132, 43), (20, 5)):
            api.ok("POST", proc_path(sandbox, pid, "/resize"), {"cols": cols, "rows": rows}, expect=(204,))
            term.expect(b"winch %d %d" % (cols, rows))
        api.ok("POST", proc_path(sandbox, pid, "/signal"), {"signal": "KILL"}, expect=(204,))
        _, _, events = collect(s)
    assert events[-1]["signal"] == 9


def test_the_listing_shows_the_terminal_and_its_size_now(api, sandbox):
    pid = start_pty(api, sandbox, ["sleep", "600"], cols=80, rows=24)
    assert api.ok("GET", proc_path(sandbox, pid))["pty"] == {"cols": 80, "rows": 24}
    api.ok("POST", proc_path(sandbox, pid, "/resize"), {"cols": MAX, "rows": 1}, expect=(204,))
    assert api.ok("GET", proc_path(sandbox, pid))["pty"] == {"cols": MAX, "rows": 1}
    res = api.exec(sandbox, ["sh", "-c", f"stty size < /proc/{pid}/fd/0"])
    assert res["stdout"] == f"1 {MAX}\n", res  # the terminal itself changed, not only the record
    plain = api.ok("POST", f"/v1/sandboxes/{sandbox}/processes", {"cmd": ["sleep", "600"]}, expect=(201,))["pid"]
    assert "pty" not in api.ok("GET", proc_path(sandbox, plain))


@pytest.mark.parametrize("pty", [
    {"cols": 0, "rows": 24}, {"cols": 80, "rows": 0}, {"cols": MAX + 1, "rows": 24}, {"cols": 80, "rows": MAX + 1},
    {"cols": -1, "rows": 24}, {"cols": "80", "rows": 24}, {"cols": 80}, {"cols": 80, "rows": 24, "x": 1},
    {"cols": 80.5, "rows": 24}, [80, 24], "80x24",
])
def test_a_bad_terminal_size_is_refused_and_nothing_starts(api, sandbox, pty):
    status, body = api.json("POST", f"/v1/sandboxes/{sandbox}/processes", {"cmd": ["sleep", "600"], "pty": pty})
    assert status == 400 and body["error"]["code"] == "invalid_argument", (status, body)
    assert api.ok("GET", f"/v1/sandboxes/{sandbox}/processes")["processes"] == []


def test_a_program_sets_its_terminal_as_python_and_password_prompts_do(api, sandbox):
    """tcsetattr(TCSAFLUSH), which tty.setraw and getpass use (gVisor's terminal refuses the
    call itself; the shim under /.space does what it means, docs/api.md)."""
    code = ("import termios, tty\n"
            "tty.setraw(0)\n"
            "print('raw', not termios.tcgetattr(0)[3] & termios.ICANON, end='\\r\\n')\n"
            "termios.tcsetattr(0, termios.TCSAFLUSH, termios.tcgetattr(0))\n")
    res = api.exec(sandbox, ["python3", "-c", code], pty={"cols": 80, "rows": 24})
    assert res["exit_code"] == 0 and res["stdout"] == "raw True\r\n", res


def test_the_largest_terminal_is_taken(api, sandbox):
    res = api.exec(sandbox, ["stty", "size"], pty={"cols": MAX, "rows": MAX})
    assert res["stdout"] == f"{MAX} {MAX}\r\n", res


def test_resize_is_refused_for_bad_sizes_plain_processes_and_exited_ones(api, sandbox):
    pid = start_pty(api, sandbox, ["sleep", "600"])
    for bad in ({"cols": 0, "rows": 1}, {"cols": 1, "rows": MAX + 1}, {"cols": 1}, {"rows": 1, "cols": "1"}):
        status, body = api.json("POST", proc_path(sandbox, pid, "/resize"), bad)
        assert status == 400, (bad, status, body)
    assert api.ok("GET", proc_path(sandbox, pid))["pty"] == {"cols": 80, "rows": 24}
    plain = api.ok("POST", f"/v1/sandboxes/{sandbox}/processes", {"cmd": ["sleep", "600"]}, expect=(201,))["pid"]
    status, body = api.json("POST", proc_path(sandbox, plain, "/resize"), {"cols": 80, "rows": 24})
    assert status == 409 and "no terminal" in body["error"]["message"], body
    done = start_pty(api, sandbox, ["true"])
    api.ok("GET", proc_path(sandbox, done, "/wait"))
    status, body = api.json("POST", proc_path(sandbox, done, "/resize"), {"cols": 80, "rows": 24})
    assert status == 409, body
    status, body = api.json("POST", proc_path(sandbox, 999999, "/resize"), {"cols": 80, "rows": 24})
    assert status == 404, body


@pytest.mark.skipif(not MICROVM, reason="gVisor's terminal (runsc 20221219) ignores the end-of-file character; "
                                        "docs/api.md says so")
def test_closing_a_terminals_stdin_types_end_of_file(api, sandbox):
    pid = start_pty(api, sandbox, ["sh", "-c", "cat; echo cat-ended"])
    with api.stream("GET", proc_path(sandbox, pid, "/output")) as s:
        type_(api, sandbox, pid, b"line\r")
        got = Screen(s).expect(b"line\r\nline\r\n")  # the echo, then cat's copy
        api.ok("DELETE", proc_path(sandbox, pid, "/stdin"), expect=(204,))
        out, _, events = collect(s)
    assert b"cat-ended" in got + out and events[-1]["exit_code"] == 0


def test_a_terminal_survives_suspend_and_resume(api, sandbox):
    pid = start_pty(api, sandbox, ["python3", "-q"])
    with api.stream("GET", proc_path(sandbox, pid, "/output")) as s:
        term = Screen(s)
        term.expect(b">>> ")
        type_(api, sandbox, pid, b"kept = 'before' + '-suspend'\r")
        term.expect(b">>> ")
    api.ok("POST", f"/v1/sandboxes/{sandbox}/suspend")
    api.ok("POST", f"/v1/sandboxes/{sandbox}/resume")
    with api.stream("GET", proc_path(sandbox, pid, "/output")) as s:  # attached again
        api.ok("POST", proc_path(sandbox, pid, "/resize"), {"cols": 90, "rows": 20}, expect=(204,))
        type_(api, sandbox, pid, b"import os; print(kept, *os.get_terminal_size())\r")
        Screen(s).expect(b"before-suspend 90 20")
        type_(api, sandbox, pid, b"raise SystemExit(0)\r")
        _, _, events = collect(s)
    assert events[-1]["exit_code"] == 0


def test_a_terminal_survives_pause_and_resume(api, sandbox):
    pid = start_pty(api, sandbox, ["python3", "-q"])
    with api.stream("GET", proc_path(sandbox, pid, "/output")) as s:
        term = Screen(s)
        term.expect(b">>> ")
        api.ok("POST", f"/v1/sandboxes/{sandbox}/pause")
        api.ok("POST", f"/v1/sandboxes/{sandbox}/resume")
        type_(api, sandbox, pid, b"print('after', 'pause')\r")
        term.expect(b"after pause")


# ----------------------------------------------------------------------------
# the CLI under a real terminal


class Tmux:
    """A tmux server of the test's own, one window of a given size running bash without rc files,
    where SPACE_HOST reaches the test's spaced."""

    def __init__(self, host, cols=120, rows=40):
        self.dir = tempfile.mkdtemp(prefix="space-tmux-")
        self.sock = os.path.join(self.dir, "sock")
        env = dict(os.environ, SPACE_HOST=host, PS1="$ ", TERM="xterm")
        env.pop("TMUX", None)
        self.run("new-session", "-d", "-x", str(cols), "-y", str(rows), "bash --norc --noprofile", env=env)
        self.run("set-option", "-g", "status", "off")  # every row is the window's
        self.run("resize-window", "-t", "0", "-x", str(cols), "-y", str(rows))

    def run(self, *args, env=None):
        return subprocess.run(["tmux", "-S", self.sock, *args], check=True, capture_output=True, text=True,
                              env=env or dict(os.environ, TERM="xterm"))

    def keys(self, *keys):
        self.run("send-keys", "-t", "0", *keys)

    def line(self, text):
        self.run("send-keys", "-t", "0", "-l", text)
        self.run("send-keys", "-t", "0", "Enter")

    def screen(self):
        return self.run("capture-pane", "-p", "-J", "-t", "0", "-S", "-200").stdout

    def wait_for(self, pattern, what=None):
        """Polls the screen until the regular expression matches; returns the match."""
        found = []

        def seen():
            m = re.search(pattern, self.screen())
            if m:
                found.append(m)
            return m is not None
        wait_until(seen, 60, what or f"{pattern!r} on the terminal (screen: {self.screen()[-600:]!r})", interval=0.05)
        return found[0]

    def close(self):
        subprocess.run(["tmux", "-S", self.sock, "kill-server"], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def tmux(spaced):
    if not shutil.which("tmux"):
        pytest.fail("tmux is missing: `make deps` installs it")
    t = Tmux(f"unix://{spaced.socket}")
    yield t
    t.close()


PROMPT = r"root@[^\s:]+:/work#\s*$"  # bash's, as a Debian login shell sets it


def test_space_shell_runs_an_interactive_session(tmux, api, sandbox):
    space = shlex.quote(SPACE)
    tmux.line(f"saved=$(stty -g); {space} shell {sandbox}; echo \"EXIT=$?\"; "
              f"[ \"$(stty -g)\" = \"$saved\" ] && echo TERMINAL-RESTORED")
    tmux.wait_for(PROMPT, "the sandbox's shell prompt")
    tmux.line("stty size; echo TERM=$TERM")
    tmux.wait_for(r"40 120\s+TERM=tmux")  # our terminal's kind, tmux's

    tmux.line("python3 -q")
    tmux.wait_for(r">>>\s*$")
    tmux.line("import os, time; print('size', *os.get_terminal_size())")
    tmux.wait_for(r"size 120 40")
    tmux.run("resize-window", "-t", "0", "-x", "100", "-y", "30")  # SIGWINCH to space, then inside
    tmux.wait_for(r"(?s)size 120 40.*>>>\s*$")
    tmux.line("print('size', *os.get_terminal_size())")
    tmux.wait_for(r"size 100 30")
    tmux.line("print('sleeping'); [time.sleep(0.05) for _ in range(12000)]")
    tmux.wait_for(r"sleeping\n")
    tmux.keys("C-c")  # a keystroke to the sandbox's terminal, not a signal to space
    tmux.wait_for(r"KeyboardInterrupt")
    tmux.line("exit()")
    tmux.wait_for(r"(?s)KeyboardInterrupt.*" + PROMPT)
    # a job of the shell's own, in the foreground: Ctrl-C stops it and the shell goes on
    tmux.line("sleep 600")
    wait_until(lambda: api.exec(sandbox, ["pgrep", "-x", "sleep"])["exit_code"] == 0, 60, "the shell's sleep to run")
    tmux.keys("C-c")
    tmux.wait_for(r"(?s)sleep 600\s+(\^C\s*)?" + PROMPT)  # back at the prompt (Linux echoes the ^C)
    tmux.line("echo \"sleep-ended=$?\"")
    tmux.wait_for(r"sleep-ended=130")
    tmux.line("exit 7")
    tmux.wait_for(r"EXIT=7\s+TERMINAL-RESTORED")


def test_space_exec_it_passes_the_exit_code_and_restores_the_terminal(tmux, sandbox):
    space = shlex.quote(SPACE)
    check = "[ \"$(stty -g)\" = \"$saved\" ] && echo RESTORED-$n"
    tmux.line(f"saved=$(stty -g); n=1; {space} exec -it {sandbox} -- sh -c 'stty size; exit 5'; "
              f"echo \"EXIT-$n=$?\"; {check}")
    tmux.wait_for(r"40 120\s+EXIT-1=5\s+RESTORED-1")
    # a command that cannot start, and a sandbox that does not exist: the same terminal after
    tmux.line(f"n=2; {space} exec -it {sandbox} -- /no/such/program; echo \"EXIT-$n=$?\"; {check}")
    tmux.wait_for(r"EXIT-2=127\s+RESTORED-2")
    tmux.line(f"n=3; {space} exec -it nosuchsandbox -- sh; echo \"EXIT-$n=$?\"; {check}")
    tmux.wait_for(r"EXIT-3=125\s+RESTORED-3")
    # space itself told to stop: the signal goes to the command, space exits with its status
    tmux.line(f"n=4; {space} exec -it {sandbox} -- sh -c 'echo READY; exec sleep 600'; echo \"EXIT-$n=$?\"; {check}")
    tmux.wait_for(r"READY")
    r = subprocess.run(["pgrep", "-f", f"^{SPACE} exec -it {sandbox} "], capture_output=True, text=True)
    assert len(r.stdout.split()) == 1, r
    os.kill(int(r.stdout), signal.SIGTERM)
    tmux.wait_for(r"EXIT-4=143\s+RESTORED-4")


def test_exec_it_without_a_terminal_is_a_usage_error(cli, sandbox):
    r = cli("exec", "-it", sandbox, "--", "true", input="")
    assert r.returncode == 125 and "terminal" in r.stderr, r
    r = cli("shell", sandbox, input="")
    assert r.returncode == 125 and "terminal" in r.stderr, r
    r = cli("exec", "-t", sandbox, "--", "sh", "-c", "test -t 1 && stty size", input=b"", text=False)
    assert r.returncode == 0 and r.stdout == b"24 80\r\n", r  # -t alone: a terminal, of the default size

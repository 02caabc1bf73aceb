"""sandbox.pty: a terminal's output as bytes as it comes, typing, resizing, waiting, connecting
again after a suspend, and the errors of a bad size or a process without a terminal."""

import threading
import time

import pytest

import space


class Seen:
    """The bytes a terminal showed, as its on_data callback got them; wait_for blocks until a
    piece of text appears after the last one waited for."""

    def __init__(self):
        self.data = b""
        self.pos = 0
        self.cond = threading.Condition()

    def __call__(self, chunk):
        assert isinstance(chunk, bytes)
        with self.cond:
            self.data += chunk
            self.cond.notify_all()

    def wait_for(self, text, timeout=60):
        deadline = time.monotonic() + timeout
        with self.cond:
            while (at := self.data.find(text, self.pos)) < 0:
                left = deadline - time.monotonic()
                assert left > 0, f"no {text!r} in {timeout} s: {self.data!r}"
                self.cond.wait(left)
            self.pos = at + len(text)


def test_a_terminal_session_typed_at_and_resized(sandbox):
    seen = Seen()
    term = sandbox.pty.create(cols=90, rows=25, on_data=seen, cmd=["python3", "-q"])
    seen.wait_for(b">>> ")
    term.send_input("import os; print('size', *os.get_terminal_size(), os.environ['TERM'])\r")
    seen.wait_for(b"size 90 25 xterm")
    term.resize(120, 50)
    term.send_input(b"print('size', *os.get_terminal_size())\r")
    seen.wait_for(b"size 120 50")
    term.send_input("raise SystemExit(4)\r")
    with pytest.raises(space.CommandExitError) as e:
        term.wait(timeout=60)
    assert e.value.result.exit_code == 4
    assert b"size 120 50" in term.output and term.output == seen.data  # one stream: what was shown
    assert [p.pid for p in sandbox.commands.list()] == [term.pid]


def test_the_default_is_a_login_shell(sandbox):
    seen = Seen()
    term = sandbox.pty.create(on_data=seen)
    term.send_input("stty size; echo $0 done\r")
    seen.wait_for(b"24 80")
    seen.wait_for(b"done")
    term.send_input("exit\r")
    assert term.wait(timeout=60).exit_code == 0


def test_a_terminal_is_followed_again_after_suspend(sandbox):
    seen = Seen()
    term = sandbox.pty.create(on_data=seen, cmd=["python3", "-q"])
    seen.wait_for(b">>> ")
    term.send_input("kept = 6 * 7\r")
    seen.wait_for(b">>> ")
    term.disconnect()
    sandbox.suspend()
    sandbox.resume()
    again = Seen()
    term = sandbox.pty.connect(term.pid, on_data=again)
    term.send_input("print('kept', kept)\r")
    again.wait_for(b"kept 42")
    assert sandbox.pty.kill(term.pid)
    assert term.wait(timeout=60).signal == 9


def test_bad_sizes_and_processes_without_a_terminal_raise(sandbox):
    for cols, rows in ((0, 24), (80, 0), (4097, 24), (80, 4097), ("80", 24), (True, 24)):
        with pytest.raises(space.InvalidArgumentError):
            sandbox.pty.create(cols=cols, rows=rows)
    assert sandbox.commands.list() == []  # nothing was started
    plain = sandbox.commands.run("sleep 600", background=True)
    with pytest.raises(space.ConflictError):
        sandbox.pty.resize(plain.pid, 80, 24)
    with pytest.raises(space.ProcessNotFound):
        sandbox.pty.resize(999999, 80, 24)
    plain.kill()

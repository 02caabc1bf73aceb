"""A stateful code interpreter inside a sandbox: `sandbox.run_code()` and code contexts.

A code context is one long-lived ``python3`` process in the sandbox running
the small REPL server shipped with this package (_repl_server.py). Cells go
to it as JSON lines on its standard input; it runs them in one namespace, so
variables, imports and functions stay between cells, and answers each with
markers on its stdout/stderr (see _repl_server.py for the framing). The
process is an ordinary sandbox process, so it lives through pause/resume and
suspend/resume with its memory.

One Follower thread per context reads the process's output for as long as
the context is used, parses the markers and queues what it finds; run()
takes from the queue with its deadline. When a cell runs past its timeout,
run() sends SIGINT to the interpreter's process group: the cell stops with
KeyboardInterrupt and the namespace is kept.

A context is found again by name from another client (its command line
carries the name and the marker token), so `Sandbox.connect(id).run_code()`
reaches the same interpreter. Each client reading a context gets all of its
output; cells are told apart by their ids, but one client should use a context
at a time (their cells share one interpreter).
"""

import codecs
import json
import pkgutil
import queue
import re
import secrets
import threading
import time

from . import errors
from ._output import Follower, ProcessOutput, TakenOver

__all__ = ["CodeContext", "Execution", "ExecutionError"]

DEFAULT_CODE_TIMEOUT = 300.0   # seconds a cell may run before it is interrupted
INTERRUPT_GRACE = 10.0         # seconds to wait for an interrupted cell to stop
INTERRUPT_REPEAT = 1.0         # SIGINT is repeated this often during the grace period
SIGINT = 2
ARG = "--space-code-context"
BOOT = "import sys; exec(sys.argv.pop())"   # runs the server source, given as the last argument
LISTING_WAIT = 30.0  # seconds to wait for the daemon to list an interpreter that /proc shows
# prints the pids of the interpreters named argv[2] (argv[1] is ARG), from /proc
PROBE = """
import os, sys
want = [a.encode() for a in sys.argv[1:3]]
for p in sorted((p for p in os.listdir('/proc') if p.isdigit()), key=int):
    if int(p) == os.getpid():
        continue
    try:
        a = open('/proc/%s/cmdline' % p, 'rb').read().split(b'\\0')
    except OSError:
        continue
    if len(a) > 6 and a[0].endswith(b'python3') and a[4:6] == want:
        print(p)
"""
NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
CMD_RE = re.compile(r"^python3 -u -c %s %s ([A-Za-z0-9_.-]{1,64}) ([0-9a-f]{8,64}) " % (re.escape(BOOT), ARG))

_server_source = None


def server_source():
    """The source of the REPL server run inside the sandbox."""
    global _server_source
    if _server_source is None:
        _server_source = pkgutil.get_data(__package__, "_repl_server.py").decode("utf-8")
    return _server_source


class ExecutionError:
    """An exception raised by a cell.

    Attributes:
        name: the exception's class name, like "ZeroDivisionError".
        message: str() of the exception.
        traceback: the formatted traceback, as Python prints it.
    """

    def __init__(self, name, message, traceback):
        self.name = name
        self.message = message
        self.traceback = traceback

    def __repr__(self):
        return "ExecutionError(name=%r, message=%r)" % (self.name, self.message)


class Execution:
    """The result of one cell.

    Attributes:
        text: repr() of the value of the cell's last expression, like a
            notebook shows it ("42"); None when the cell ends with a statement
            or the value is None.
        stdout, stderr: what the cell printed (including its subprocesses).
        error: an ExecutionError if the cell raised, else None. run_code()
            does not raise for errors in the cell.
        interrupted: whether the cell was interrupted because it ran past its timeout
            (error.name is then "KeyboardInterrupt").
    """

    def __init__(self, text, stdout, stderr, error, interrupted=False):
        self.text = text
        self.stdout = stdout
        self.stderr = stderr
        self.error = error
        self.interrupted = interrupted

    def __repr__(self):
        return "Execution(text=%r, stdout=%r, stderr=%r, error=%r)" % (self.text, self.stdout, self.stderr,
                                                                       self.error)


class _MarkerParser:
    """Splits one output stream (stdout or stderr) of the interpreter into cell events.

    feed() returns events: ("out", cell_id, bytes) and ("end", cell_id, payload bytes).
    Output before the first begin marker seen belongs to no cell (id None).
    """

    def __init__(self, mark):
        self.mark = mark
        self.buf = b""
        self.cell = None

    def _safe_len(self):
        """How much of buf can be released: all but a tail that may start a marker."""
        n = len(self.buf)
        for k in range(min(len(self.mark) - 1, n), 0, -1):
            if self.buf.endswith(self.mark[:k]):
                return n - k
        return n

    def feed(self, data):
        self.buf += data
        events = []
        while True:
            i = self.buf.find(self.mark)
            if i < 0:
                n = self._safe_len()
                if n:
                    events.append(("out", self.cell, self.buf[:n]))
                    self.buf = self.buf[n:]
                return events
            if i:
                events.append(("out", self.cell, self.buf[:i]))
                self.buf = self.buf[i:]
            nl = self.buf.find(b"\n")
            if nl < 0:
                return events  # the marker line is not complete yet
            line = self.buf[len(self.mark):nl]
            self.buf = self.buf[nl + 1:]
            kind, _, rest = line.partition(b":")
            cid, _, payload = rest.partition(b":")
            cid = cid.decode("ascii", "replace")
            if kind == b"B":
                self.cell = cid
            elif kind == b"E":
                events.append(("end", cid, payload))
                self.cell = None


class CodeContext:
    """One stateful Python interpreter in a sandbox (from ``sandbox.create_code_context()``).

    Attributes:
        name: the context's name, unique in its sandbox ("default" for run_code's own).
        pid: the interpreter's process id in the sandbox.
        language: "python".
    """

    def __init__(self, sandbox, name, pid, token):
        self._sb = sandbox
        self.name = name
        self.pid = pid
        self.language = "python"
        self._mark = ("\x1e\x1fspace-repl:" + token + ":").encode("ascii")
        self._lock = threading.Lock()
        self._queue = queue.Queue()
        self._follower = None
        self._dead = None  # the exception that ended the context, once it ended

    def __repr__(self):
        return "CodeContext(sandbox=%r, name=%r, pid=%r)" % (self._sb.id, self.name, self.pid)

    # -- starting and finding contexts

    @classmethod
    def _start(cls, sandbox, name, cwd=None, env=None, request_timeout=None):
        token = secrets.token_hex(12)
        # the name and token come first, so a listing that shortens long command lines still shows them
        body = {"cmd": ["python3", "-u", "-c", BOOT, ARG, name, token, server_source()], "stdin_open": True}
        if cwd:
            body["cwd"] = cwd
        if env:
            body["env"] = dict(env)
        t = sandbox._transport
        pid = t.json("POST", "/v1/sandboxes/%s/processes" % sandbox.id, body=body,
                     timeout=t.request_timeout if request_timeout is None else request_timeout)["pid"]
        return cls(sandbox, name, pid, token)

    @classmethod
    def _from_process(cls, sandbox, info):
        """A CodeContext for a running interpreter process, or None if `info` is not one."""
        if info.state != "running" or not info.cmd:
            return None
        m = CMD_RE.match(info.cmd)
        return cls(sandbox, m.group(1), info.pid, m.group(2)) if m else None

    @classmethod
    def _find(cls, sandbox, name):
        """The running interpreter named `name` in the sandbox (the newest), or None.

        A sandbox made from a snapshot or a fork may not list its processes for a
        moment after it starts (the daemon learns them from the agent), so when the
        daemon lists none, the sandbox's /proc is asked, and the daemon is polled
        until it lists what /proc shows.
        """
        def listed():
            found = [cls._from_process(sandbox, p) for p in sandbox.commands.list()]
            found = [c for c in found if c is not None and c.name == name]
            return found[-1] if found else None

        ctx = listed()
        if ctx is not None:
            return ctx
        probe = sandbox.commands.run(["python3", "-c", PROBE, ARG, name], timeout=60)
        pids = [int(p) for p in probe.stdout.split()]
        if not pids:
            return None
        deadline = time.monotonic() + LISTING_WAIT
        while time.monotonic() < deadline:
            time.sleep(0.05)
            ctx = listed()
            if ctx is not None:
                return ctx
        raise errors.SpaceError("the daemon does not list the interpreter %r (pid %s) of sandbox %s"
                                % (name, pids[-1], sandbox.id))

    # -- reading

    def _ensure_follower(self):
        if self._dead is not None:
            raise self._dead
        if self._follower is None:
            out = ProcessOutput(self._sb._transport, self._sb.id, self.pid)
            parsers = {"stdout": _MarkerParser(self._mark), "stderr": _MarkerParser(self._mark)}

            def sink(kind, payload):
                if kind in parsers:
                    for ev in parsers[kind].feed(payload):
                        self._queue.put((ev[0], kind, ev[1], ev[2]))
                else:
                    self._queue.put((kind, None, None, payload))

            self._follower = Follower(out, sink, "space-code-%s-%s" % (self._sb.id, self.name)).start()
            # the cell's output must come here, not to a reader this one is taking over from
            self._follower.wait_attached(self._sb._transport.request_timeout)

    def _drain(self):
        """Drops what arrived between cells; notes an exit, and forgets a reader that was taken over.

        Another client running a cell takes the interpreter's output over; the next
        cell run here takes it back, so the last client to run a cell reads its output.
        """
        while True:
            try:
                ev, _, _, payload = self._queue.get_nowait()
            except queue.Empty:
                return
            if ev == "exit":
                self._follower = None
                self._dead = errors.SpaceError("the interpreter of code context %r exited with code %s"
                                               % (self.name, payload.get("exit_code")))
            elif ev == "error":
                self._follower = None
                if not isinstance(payload, TakenOver):
                    self._dead = payload

    def _signal(self, sig):
        try:
            self._sb.commands.kill(self.pid, sig)
        except errors.SpaceError:
            pass

    # -- running cells

    def run(self, code, timeout=DEFAULT_CODE_TIMEOUT, on_stdout=None, on_stderr=None):
        """Runs one cell of Python code in this context and returns its Execution.

        Args:
            code: Python source; the value of a final expression becomes ``text``.
            timeout: seconds the cell may run (default 300; None: no limit). Past
                it the cell is interrupted with KeyboardInterrupt, the Execution
                has ``interrupted=True`` and the context keeps its state.
            on_stdout, on_stderr: called with the cell's output text as it is produced.

        Errors inside the cell do not raise: they are in ``Execution.error``.

        Raises:
            TimeoutError: an interrupted cell did not stop within 10 s (the context
                stays busy with it).
            SpaceError: the interpreter died (``exit()`` from a thread, a crash)
                or another client took its output over.
        """
        if not isinstance(code, str):
            raise TypeError("code must be a str")
        with self._lock:
            self._drain()
            self._ensure_follower()
            cid = secrets.token_hex(8)
            out = {"stdout": bytearray(), "stderr": bytearray()}
            dec = {k: codecs.getincrementaldecoder("utf-8")("replace") for k in out}
            cbs = {"stdout": on_stdout, "stderr": on_stderr}
            ended = {"stdout": False, "stderr": False}
            try:
                self._sb.commands.send_stdin(self.pid, json.dumps({"id": cid, "code": code}) + "\n")
            except (errors.ConflictError, errors.ProcessNotFound) as e:
                self._detach()
                self._dead = errors.SpaceError("the interpreter of code context %r is gone: %s" % (self.name, e))
                raise self._dead
            deadline = None if timeout is None else time.monotonic() + timeout
            try:
                result, interrupted = self._wait_cell(cid, out, dec, cbs, ended, deadline)
            except BaseException as e:
                # the caller stops waiting (a callback raised, Ctrl-C...): stop the cell too
                if self._dead is None and not isinstance(e, TakenOver):
                    self._signal(SIGINT)
                raise
            for k, cb in cbs.items():
                if cb is not None:
                    text = dec[k].decode(b"", final=True)
                    if text:
                        cb(text)
            err = result.get("error")
            error = ExecutionError(err.get("name"), err.get("message"), err.get("traceback")) if err else None
            return Execution(result.get("text"), bytes(out["stdout"]).decode("utf-8", "replace"),
                             bytes(out["stderr"]).decode("utf-8", "replace"), error,
                             interrupted and error is not None and error.name == "KeyboardInterrupt")

    def _wait_cell(self, cid, out, dec, cbs, ended, deadline):
        """Reads cell `cid`'s output until both of its end markers.

        Returns (the result object, whether the cell was interrupted). Past the
        deadline, SIGINT goes to the interpreter every INTERRUPT_REPEAT seconds
        until the cell ends or INTERRUPT_GRACE passes.
        """
        interrupted = False
        give_up = None
        result = None
        while not (ended["stdout"] and ended["stderr"]):
            wait = None
            now = time.monotonic()
            if deadline is not None:
                if now >= deadline:
                    if not interrupted:
                        interrupted = True
                        give_up = now + INTERRUPT_GRACE
                    elif now >= give_up:
                        raise errors.TimeoutError(
                            "cell still runs %s s after it was interrupted" % INTERRUPT_GRACE)
                    self._signal(SIGINT)
                    deadline = now + INTERRUPT_REPEAT
                wait = max(0.0, deadline - now)
            try:
                ev, stream, cell, payload = self._queue.get(timeout=wait)
            except queue.Empty:
                continue
            if ev == "out" and cell == cid:
                out[stream] += payload
                if cbs[stream] is not None:
                    text = dec[stream].decode(payload)
                    if text:
                        cbs[stream](text)
            elif ev == "end" and cell == cid:
                ended[stream] = True
                if stream == "stdout":
                    result = json.loads(payload.decode("utf-8"))
            elif ev == "exit":
                self._follower = None
                self._dead = errors.SpaceError("the interpreter of code context %r exited with code %s"
                                               % (self.name, payload.get("exit_code")))
                raise self._dead
            elif ev == "error":
                self._follower = None
                if isinstance(payload, TakenOver):
                    raise payload  # another client runs cells here now; the next run() takes it back
                self._dead = payload
                raise payload
        return result, interrupted

    def interrupt(self):
        """Sends SIGINT to the interpreter: a running cell stops with KeyboardInterrupt."""
        self._signal(SIGINT)

    def is_alive(self):
        """Whether the interpreter process still runs."""
        if self._dead is not None:
            return False
        try:
            return self._sb.commands.get(self.pid).state == "running"
        except errors.ProcessNotFound:
            return False

    def close(self):
        """Stops the interpreter (its state is lost) and this context's reader."""
        if self._follower is not None:
            self._follower.stop()
            self._follower = None
        self._signal(9)
        self._dead = errors.SpaceError("code context %r was closed" % self.name)

    def _detach(self):
        """Stops reading without stopping the interpreter."""
        if self._follower is not None:
            self._follower.stop()
            self._follower = None

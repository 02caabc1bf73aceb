"""Running commands in a sandbox: `sandbox.commands`.

run() in the foreground streams the command's output over an exec stream and
returns a CommandResult when it exits (or raises CommandExitError for a
non-zero exit, TimeoutError when its `timeout` killed it). With
background=True it starts the process, follows its output in a thread and
returns a CommandHandle at once. Callbacks receive text as it is produced:
in the calling thread for a foreground command, in the handle's thread for a
background one.
"""

import base64
import codecs
import threading

from . import errors
from .errors import CommandExitError
from ._output import Follower, ProcessOutput

__all__ = ["Commands", "CommandResult", "CommandHandle", "ProcessInfo"]

INLINE_STDIN_MAX = 192 * 1024   # stdin sent inside the request; more goes through the stdin route
TIMEOUT_GRACE = 30.0            # how much longer than a command's timeout the client waits for its exit
SIGKILL = 9


class CommandResult:
    """What a finished command produced.

    Attributes:
        pid: its process id in the sandbox.
        stdout, stderr: its output, decoded as UTF-8 (invalid bytes replaced).
        stdout_bytes, stderr_bytes: the same output, as bytes.
        exit_code: the exit status, or 128 + N when signal N killed it.
        signal: the number of the signal that killed it, or None.
        timed_out: whether its `timeout` killed it.
        oom_killed: whether it was killed because the sandbox's memory reached its limit.
        oom_kills: how many of it and the processes it started were killed so.
        duration_ms: how long it ran, in milliseconds.
    """

    def __init__(self, pid, stdout_bytes, stderr_bytes, exit_code, signal=None, timed_out=False, duration_ms=None,
                 oom_killed=False, oom_kills=0):
        self.pid = pid
        self.stdout_bytes = bytes(stdout_bytes)
        self.stderr_bytes = bytes(stderr_bytes)
        self.stdout = self.stdout_bytes.decode("utf-8", "replace")
        self.stderr = self.stderr_bytes.decode("utf-8", "replace")
        self.exit_code = exit_code
        self.signal = signal
        self.timed_out = timed_out
        self.oom_killed = oom_killed
        self.oom_kills = oom_kills
        self.duration_ms = duration_ms

    def __repr__(self):
        return "CommandResult(pid=%r, exit_code=%r, stdout=%r, stderr=%r)" % (
            self.pid, self.exit_code, _clip(self.stdout), _clip(self.stderr))


class ProcessInfo:
    """A process the sandbox runs or remembers (from `commands.list()`).

    Attributes:
        pid, cmd: its id and command line.
        state: "running" or "exited".
        exit_code, signal: how it ended (None while it runs).
        started_at: when it started (RFC 3339 string, UTC).
        output: its output policy, "block" or "drop" (see commands.run).
        readers: how many clients read its output now.
    """

    def __init__(self, d):
        self.pid = d.get("pid")
        self.cmd = d.get("cmd")
        self.state = d.get("state")
        self.exit_code = d.get("exit_code")
        self.signal = d.get("signal")
        self.started_at = d.get("started_at")
        self.output = d.get("output")
        self.readers = d.get("readers")

    def __repr__(self):
        return "ProcessInfo(pid=%r, state=%r, cmd=%r)" % (self.pid, self.state, _clip(self.cmd))


def _clip(s, n=60):
    return s if s is None or len(s) <= n else s[:n] + "..."


def _to_bytes(data):
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError("expected str or bytes, not %s" % type(data).__name__)


OUTPUT_POLICIES = ("block", "drop")


def _process_body(cmd, env, cwd, user, timeout, output=None):
    """The body of a process start from what commands.run and pty.create take; checks them."""
    if not isinstance(cmd, str) and not (isinstance(cmd, (list, tuple)) and cmd
                                         and all(isinstance(a, str) for a in cmd)):
        raise errors.InvalidArgumentError("cmd must be a shell string or a non-empty list of strings")
    body = {"cmd": cmd if isinstance(cmd, str) else list(cmd)}
    if env:
        body["env"] = dict(env)
    if cwd:
        body["cwd"] = cwd
    if user:
        body["user"] = user
    if timeout is not None:
        if timeout <= 0:
            raise errors.InvalidArgumentError("timeout must be positive (None for no timeout)")
        body["timeout"] = timeout
    if output is not None:
        if output not in OUTPUT_POLICIES:
            raise errors.InvalidArgumentError("output must be \"block\" or \"drop\"")
        body["output"] = output
    return body


class _Collector:
    """Accumulates output and hands decoded text to the callbacks."""

    def __init__(self, on_stdout, on_stderr):
        self.buf = {"stdout": bytearray(), "stderr": bytearray()}
        self.dec = {k: codecs.getincrementaldecoder("utf-8")("replace") for k in self.buf}
        self.cb = {"stdout": on_stdout, "stderr": on_stderr}

    def feed(self, kind, data):
        self.buf[kind] += data
        cb = self.cb[kind]
        if cb is not None:
            text = self.dec[kind].decode(data)
            if text:
                cb(text)

    def flush(self):
        for kind, cb in self.cb.items():
            if cb is not None:
                text = self.dec[kind].decode(b"", final=True)
                if text:
                    cb(text)

    def result(self, pid, ev):
        return CommandResult(pid, self.buf["stdout"], self.buf["stderr"], ev.get("exit_code"), ev.get("signal"),
                             bool(ev.get("timed_out")), ev.get("duration_ms"), bool(ev.get("oom_killed")),
                             ev.get("oom_kills") or 0)


class Commands:
    """Runs and manages processes in one sandbox; reached as `sandbox.commands`."""

    def __init__(self, sandbox):
        self._sb = sandbox
        self._signalled = set()  # pids this client sent a signal to: their handles' wait() does not raise

    @property
    def _t(self):
        return self._sb._transport

    def _path(self, rest=""):
        return "/v1/sandboxes/%s/processes%s" % (self._sb.id, rest)

    def run(self, cmd, background=False, env=None, cwd=None, user=None, timeout=None, stdin=None,
            on_stdout=None, on_stderr=None, request_timeout=None, output=None):
        """Runs a command; waits for it, or with background=True returns a handle at once.

        Args:
            cmd: a shell string (run by ``/bin/sh -c``) or an argv list.
            background: start it and return a CommandHandle instead of waiting.
            env: variables added to the sandbox's environment for this command.
            cwd: working directory (absolute); default ``/work``.
            user: user name from the sandbox's ``/etc/passwd``; default root.
            timeout: seconds after which the daemon kills the command's process
                group. Default: none, the command may run for ever.
            stdin: str or bytes given on standard input, then end of file. For a
                background command without ``stdin``, standard input stays open
                for ``handle.send_stdin()``.
            on_stdout, on_stderr: called with each piece of text as it is produced.
            request_timeout: seconds to wait for the daemon to start the command.
            output: what happens to output nobody reads: "block" (the daemon's
                default) holds the command back until it is read; "drop" never
                does: it is discarded but for its last 64 KiB, and a handle that
                joins later gets that.

        Returns:
            a CommandResult (foreground) or a CommandHandle (background).

        Raises:
            CommandExitError: the command exited with a non-zero code (foreground).
            TimeoutError: its ``timeout`` killed it (``.result`` holds its output).
            ExecFailedError: an argv command could not be started.
            SandboxNotFound, ConflictError, AuthError, SpaceError.
        """
        body = _process_body(cmd, env, cwd, user, timeout, output)
        data = None if stdin is None else _to_bytes(stdin)
        # Inline stdin goes with the request; larger stdin, and any stdin of a background
        # command (the daemon ignores inline stdin on POST /processes), goes through the
        # stdin route once the process exists.
        via_route = data is not None and (background or len(data) > INLINE_STDIN_MAX)
        if data is not None and not via_route:
            body["stdin_b64"] = base64.b64encode(data).decode("ascii")
        elif via_route or background:
            body["stdin_open"] = True
        rt = self._t.request_timeout if request_timeout is None else request_timeout
        if background:
            pid = self._t.json("POST", self._path(), body=body, timeout=rt)["pid"]
            handle = CommandHandle(self._sb, pid, on_stdout, on_stderr)
            if via_route:
                handle._feed_stdin(data)
            return handle
        return self._run_foreground(body, data if via_route else None, timeout, on_stdout, on_stderr, rt)

    def _run_foreground(self, body, stdin_via_route, timeout, on_stdout, on_stderr, request_timeout):
        body["stream"] = True
        read_timeout = None if timeout is None else timeout + TIMEOUT_GRACE
        stream = self._t.open("POST", "/v1/sandboxes/%s/exec" % self._sb.id, body=body,
                              timeout=max(request_timeout, read_timeout or 0))
        pid = None
        try:
            for ev in stream.events():
                if ev.get("type") == "start":
                    pid = ev["pid"]
                    break
                if ev.get("type") == "error":
                    raise errors.from_event(ev)
            if pid is None:
                raise errors.SpaceError("the exec stream ended before the command started")
        except BaseException:
            stream.close()
            raise
        stream.set_timeout(read_timeout)
        output = ProcessOutput(self._t, self._sb.id, pid, stream, read_timeout)
        col = _Collector(on_stdout, on_stderr)
        exited = False
        try:
            if stdin_via_route is not None:
                threading.Thread(target=self._upload_stdin, args=(pid, stdin_via_route), daemon=True).start()
            for kind, payload in output:
                if kind == "exit":
                    exited = True
                    col.flush()
                    res = col.result(pid, payload)
                    if res.timed_out:
                        raise errors.TimeoutError("command timed out after %s s" % timeout, res)
                    if res.exit_code != 0:
                        raise CommandExitError(res)
                    return res
                col.feed(kind, payload)
            raise errors.SpaceError("the output of process %d ended without its exit" % pid)
        except BaseException:
            # like subprocess.run: a command the caller stopped waiting for is killed
            output.close()
            if not exited:
                self._kill_quietly(pid)
            raise
        finally:
            output.close()

    def _upload_stdin(self, pid, data):
        try:
            self.send_stdin(pid, data)
            self.close_stdin(pid)
        except errors.SpaceError:
            pass  # the command exited before reading it all

    def _kill_quietly(self, pid):
        try:
            self.kill(pid)
        except errors.SpaceError:
            pass

    def list(self):
        """The processes the sandbox runs, and the last exited ones it remembers; a list of ProcessInfo."""
        return [ProcessInfo(p) for p in self._t.json("GET", self._path())["processes"]]

    def get(self, pid):
        """The ProcessInfo of process `pid`; raises ProcessNotFound."""
        return ProcessInfo(self._t.json("GET", self._path("/%d" % pid), not_found=errors.ProcessNotFound))

    def connect(self, pid, on_stdout=None, on_stderr=None):
        """A CommandHandle for a process started earlier (by this client or another).

        The handle follows the process's output from what nobody has read yet
        (when nobody was reading it), beside any other reader: each gets all of it.
        """
        self.get(pid)
        return CommandHandle(self._sb, pid, on_stdout, on_stderr)

    def kill(self, pid, signal=SIGKILL):
        """Sends `signal` (default SIGKILL; a number or a name like "TERM") to the process group of `pid`.

        Returns True if the signal was sent, False if the process had already exited.
        A handle of this process then returns from wait() without raising.
        """
        self._signalled.add(pid)
        try:
            self._t.request("POST", self._path("/%d/signal" % pid), body={"signal": signal},
                            not_found=errors.ProcessNotFound)
        except errors.ConflictError:
            return False
        return True

    def send_stdin(self, pid, data):
        """Writes str or bytes to the standard input of `pid` (started with its stdin open)."""
        self._t.request("POST", self._path("/%d/stdin" % pid), data=_to_bytes(data),
                        not_found=errors.ProcessNotFound)

    def close_stdin(self, pid):
        """Closes the standard input of `pid`: it reads end of file."""
        self._t.request("DELETE", self._path("/%d/stdin" % pid), not_found=errors.ProcessNotFound)

    def wait(self, pid, timeout=None):
        """Waits until `pid` exits and returns its ProcessInfo (without its output).

        Raises TimeoutError if it still runs after `timeout` seconds (None: wait for ever).
        """
        query = {} if timeout is None else {"timeout": "%g" % timeout}
        rt = None if timeout is None else timeout + self._t.request_timeout
        info = ProcessInfo(self._t.json("GET", self._path("/%d/wait" % pid), query=query, timeout=rt,
                                        not_found=errors.ProcessNotFound))
        if info.state != "exited":
            raise errors.TimeoutError("process %d still runs after %s s" % (pid, timeout))
        return info


class CommandHandle:
    """A command running in the background (from ``commands.run(..., background=True)``).

    Its output is followed in a thread from the moment the handle exists: the
    callbacks see it as it is produced, and ``stdout``/``stderr`` hold what
    has arrived so far.

    Attributes:
        pid: the process id in the sandbox.
    """

    def __init__(self, sandbox, pid, on_stdout=None, on_stderr=None):
        self._dropped = 0
        self._sb = sandbox
        self.pid = pid
        self._col = _Collector(on_stdout, on_stderr)
        self._done = threading.Event()
        self._lock = threading.RLock()  # callbacks run under it and may read .stdout
        self._exit = None
        self._error = None
        self._callback_error = None
        out = ProcessOutput(sandbox._transport, sandbox.id, pid)
        self._follower = Follower(out, self._on_event, "space-cmd-%s-%d" % (sandbox.id, pid)).start()
        # from here on the output comes to this handle too
        self._follower.wait_attached(sandbox._transport.request_timeout)

    def __repr__(self):
        return "CommandHandle(sandbox=%r, pid=%r, exit_code=%r)" % (self._sb.id, self.pid, self.exit_code)

    def _on_event(self, kind, payload):
        if kind == "dropped":
            with self._lock:
                self._dropped += payload
            return
        if kind in ("stdout", "stderr"):
            with self._lock:
                try:
                    self._col.feed(kind, payload)
                except Exception as e:  # a failing callback must not stop the following
                    self._callback_error = self._callback_error or e
            return
        with self._lock:
            if kind == "exit":
                try:
                    self._col.flush()
                except Exception as e:
                    self._callback_error = self._callback_error or e
                self._exit = payload
            else:
                self._error = payload
        self._done.set()

    @property
    def dropped(self):
        """Output bytes this handle missed: a "drop" command's, printed before it connected
        while nobody read it (beyond what the daemon keeps). 0 under "block"."""
        with self._lock:
            return self._dropped

    @property
    def stdout(self):
        """The standard output received so far, as text."""
        with self._lock:
            return bytes(self._col.buf["stdout"]).decode("utf-8", "replace")

    @property
    def stderr(self):
        """The standard error received so far, as text."""
        with self._lock:
            return bytes(self._col.buf["stderr"]).decode("utf-8", "replace")

    @property
    def exit_code(self):
        """The exit code once the command has exited, else None."""
        return None if self._exit is None else self._exit.get("exit_code")

    def is_running(self):
        """Whether the command has not been seen to exit yet."""
        return not self._done.is_set()

    def wait(self, timeout=None):
        """Waits for the command to exit and returns its CommandResult.

        Raises:
            CommandExitError: it exited with a non-zero code, unless this client
                signalled it (kill(), signal(), commands.kill()): stopping a
                command on purpose is not an error.
            TimeoutError: `timeout` seconds passed first (the command keeps running),
                or the command's own timeout killed it.
            SpaceError: following its output failed, or a callback raised (re-raised here).
        """
        if not self._done.wait(timeout):
            raise errors.TimeoutError("process %d still runs after %s s" % (self.pid, timeout))
        if self._error is not None:
            raise self._error
        if self._callback_error is not None:
            raise self._callback_error
        res = self._col.result(self.pid, self._exit)
        if res.timed_out:
            raise errors.TimeoutError("command timed out", res)
        if res.exit_code != 0 and self.pid not in self._sb.commands._signalled:
            raise CommandExitError(res)
        return res

    def send_stdin(self, data):
        """Writes str or bytes to the command's standard input."""
        self._sb.commands.send_stdin(self.pid, data)

    def close_stdin(self):
        """Closes the command's standard input (it reads end of file)."""
        self._sb.commands.close_stdin(self.pid)

    def _feed_stdin(self, data):
        threading.Thread(target=self._sb.commands._upload_stdin, args=(self.pid, data), daemon=True).start()

    def signal(self, signal):
        """Sends a signal (number or name, like 15 or "TERM") to the command's process group.

        Returns False if it had already exited.
        """
        return self._sb.commands.kill(self.pid, signal)

    def kill(self):
        """Kills the command's process group with SIGKILL; wait() then returns without raising.

        Returns False if it had already exited.
        """
        return self._sb.commands.kill(self.pid, SIGKILL)

    def disconnect(self):
        """Stops following the output; the command keeps running (see ``commands.connect``)."""
        self._follower.stop()
        self._done.set()
        if self._exit is None and self._error is None:
            self._error = errors.SpaceError("disconnected from process %d" % self.pid)


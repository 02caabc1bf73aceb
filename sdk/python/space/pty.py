"""Terminals in a sandbox: `sandbox.pty`.

create() starts a program (a login shell unless told otherwise) with a
terminal of its own in the sandbox, and returns a PtyHandle at once: what the
program writes to its terminal, echo of what is typed included, comes to
`on_data` as bytes, in the handle's thread, as it is produced. send_input()
types at it ("\\r" is Enter, "\\x03" Ctrl-C), resize() changes its size (its
programs get SIGWINCH). The terminal lives in the sandbox: after a pause or a
suspend and resume, connect() follows it again.
"""

from . import errors
from .commands import CommandHandle, _process_body, _to_bytes

__all__ = ["Pty", "PtyHandle"]

MAX_SIZE = 4096  # rows or columns of a terminal (the daemon's SP_PTY_MAX)
# a login shell: bash where the sandbox has it, else sh (what `space shell` runs)
LOGIN_SHELL = ["/bin/sh", "-c", "if command -v bash >/dev/null 2>&1; then exec bash -l; fi; exec sh -l"]


def _size(cols, rows):
    for name, v in (("cols", cols), ("rows", rows)):
        if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= MAX_SIZE:
            raise errors.InvalidArgumentError("%s must be an integer in 1..%d" % (name, MAX_SIZE))
    return {"cols": cols, "rows": rows}


class Pty:
    """Starts and drives terminals in one sandbox; reached as `sandbox.pty`."""

    def __init__(self, sandbox):
        self._sb = sandbox

    def _path(self, rest=""):
        return "/v1/sandboxes/%s/processes%s" % (self._sb.id, rest)

    def create(self, cols=80, rows=24, on_data=None, cmd=None, env=None, cwd=None, user=None, timeout=None,
               term="xterm"):
        """Starts `cmd` (default: a login shell) with a terminal of cols x rows; returns a PtyHandle.

        Args:
            cols, rows: the terminal's size, each 1..4096.
            on_data: called with each piece of output (bytes) as it is produced.
            cmd: a shell string or an argv list; default a login shell.
            env: variables added for it; TERM is `term` unless env gives one.
            cwd, user, timeout: as for commands.run().

        Raises:
            InvalidArgumentError: a bad size or command.
            ConflictError: the sandbox's agent predates terminals.
            ExecFailedError, SandboxNotFound, SpaceError.
        """
        if cmd is None:
            cmd = LOGIN_SHELL
        env = dict(env or {})
        env.setdefault("TERM", term)
        body = _process_body(cmd, env, cwd, user, timeout)
        body["pty"] = _size(cols, rows)
        pid = self._sb._transport.json("POST", self._path(), body=body)["pid"]
        return PtyHandle(self._sb, pid, on_data)

    def connect(self, pid, on_data=None):
        """A PtyHandle following terminal process `pid` again (from output nobody has read yet)."""
        self._sb.commands.get(pid)
        return PtyHandle(self._sb, pid, on_data)

    def send_input(self, pid, data):
        """Types str or bytes at the terminal of `pid`."""
        self._sb.commands.send_stdin(pid, _to_bytes(data))

    def resize(self, pid, cols, rows):
        """Gives the terminal of `pid` a new size; its foreground programs get SIGWINCH.

        Raises ConflictError for a process without a terminal or one that exited.
        """
        self._sb._transport.request("POST", self._path("/%d/resize" % pid), body=_size(cols, rows),
                                    not_found=errors.ProcessNotFound)

    def kill(self, pid):
        """Kills the terminal's process group; returns False if it had already exited."""
        return self._sb.commands.kill(pid)


class PtyHandle(CommandHandle):
    """A program running with a terminal (from ``sandbox.pty.create()``).

    ``output`` holds the bytes received so far; wait() returns a CommandResult
    whose stdout is everything the terminal showed (a terminal has one stream).
    """

    def __init__(self, sandbox, pid, on_data=None):
        self._on_data = on_data
        super().__init__(sandbox, pid)

    def __repr__(self):
        return "PtyHandle(sandbox=%r, pid=%r, exit_code=%r)" % (self._sb.id, self.pid, self.exit_code)

    def _on_event(self, kind, payload):
        if kind == "stdout" and self._on_data is not None:
            with self._lock:
                try:
                    self._on_data(bytes(payload))
                except Exception as e:  # a failing callback must not stop the following
                    self._callback_error = self._callback_error or e
        super()._on_event(kind, payload)

    @property
    def output(self):
        """What the terminal showed so far, as bytes."""
        with self._lock:
            return bytes(self._col.buf["stdout"])

    def send_input(self, data):
        """Types str or bytes at the terminal."""
        self._sb.pty.send_input(self.pid, data)

    def resize(self, cols, rows):
        """Gives the terminal a new size."""
        self._sb.pty.resize(self.pid, cols, rows)

"""The exceptions of the space SDK.

Every error the SDK raises is a :class:`SpaceError`. Errors the daemon
reports carry its HTTP ``status``, its error ``code`` and, for conflicts, the
sandbox ``state``; the SDK picks the subclass from them (see
:func:`from_response`).

Hierarchy::

    SpaceError
    ├── AuthError                 401: missing or wrong token (TCP only)
    ├── NotFoundError             404
    │   ├── SandboxNotFound
    │   ├── FileNotFound
    │   ├── ProcessNotFound
    │   ├── SnapshotNotFound
    │   └── TemplateNotFound
    ├── PermissionDeniedError     403: a file call's user may not do it
    ├── ConflictError             409: the sandbox's state forbids it
    ├── InvalidArgumentError      400 (also a ValueError)
    ├── TooLargeError             413
    ├── ExecFailedError           422: the command could not be started
    ├── LimitError                429: a named limit was reached
    ├── UnavailableError          503: the sandbox's agent is not connected
    ├── IsolationUnavailableError the host cannot run the isolation kind asked for now
    ├── CommandExitError          a command exited with a non-zero code
    ├── BuildError                a template build failed (its stream's last event)
    ├── TimeoutError              a deadline passed (also the builtin TimeoutError)
    └── ConnectionError           the daemon cannot be reached (also the builtin)
"""

import builtins
import json

__all__ = [
    "SpaceError", "AuthError", "NotFoundError", "SandboxNotFound", "FileNotFound", "ProcessNotFound",
    "SnapshotNotFound", "TemplateNotFound", "PermissionDeniedError", "ConflictError", "InvalidArgumentError", "TooLargeError", "ExecFailedError",
    "LimitError", "UnavailableError", "IsolationUnavailableError", "CommandExitError", "BuildError", "TimeoutError",
    "ConnectionError",
]


class SpaceError(Exception):
    """Base class of every error raised by the SDK.

    Attributes:
        message: what went wrong, for a person.
        status: the HTTP status the daemon answered, or None for client-side errors.
        code: the daemon's error code (``"not_found"``, ``"conflict"``...), or None.
    """

    def __init__(self, message, status=None, code=None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code

    def __str__(self):
        return self.message


class AuthError(SpaceError):
    """The daemon refused the request's credentials (401): set ``SPACE_TOKEN`` or pass ``token=``."""


class NotFoundError(SpaceError):
    """Something the request names does not exist (404)."""


class SandboxNotFound(NotFoundError):
    """The sandbox does not exist (never did, or was deleted)."""


class FileNotFound(NotFoundError):
    """The path does not exist inside the sandbox."""


class ProcessNotFound(NotFoundError):
    """The sandbox has no process with that pid (or no longer remembers it)."""


class SnapshotNotFound(NotFoundError):
    """The snapshot does not exist."""


class TemplateNotFound(NotFoundError):
    """The template does not exist."""


class PermissionDeniedError(SpaceError):
    """403: a file call made as a ``user`` that the sandbox's permissions refuse."""


class ConflictError(SpaceError):
    """The operation is not allowed in the sandbox's current state (409).

    Attributes:
        state: the sandbox's state when the daemon refused (``"suspended"``...), if it said.
    """

    def __init__(self, message, status=409, code="conflict", state=None):
        super().__init__(message, status, code)
        self.state = state


class InvalidArgumentError(SpaceError, ValueError):
    """The request was malformed: a bad path, field or value (400)."""


class TooLargeError(SpaceError):
    """A body, command or environment was over its limit (413)."""


class ExecFailedError(SpaceError):
    """The command could not be started: not found, or not executable (422)."""


class LimitError(SpaceError):
    """A named limit was reached: sandboxes, or processes per sandbox (429)."""


class UnavailableError(SpaceError):
    """The sandbox's agent is not connected (503); usually brief."""


class IsolationUnavailableError(SpaceError):
    """The daemon's host cannot run the isolation kind asked for ("microvm"...), now: the
    message gives the reason (400 at a create; 503 for a sandbox of such a kind).
    ``Sandbox.isolation_kinds()`` says which kinds it runs."""


class CommandExitError(SpaceError):
    """A command exited with a non-zero exit code.

    Attributes:
        result: the :class:`~space.CommandResult` of the command.
        stdout, stderr: its output, as text.
        exit_code: its exit code (128 + N when signal N killed it).
        signal: the signal that killed it, or None.
    """

    def __init__(self, result):
        tail = (result.stderr or result.stdout or "").strip().splitlines()[-3:]
        msg = "command exited with code %d" % result.exit_code
        if tail:
            msg += ": " + " | ".join(tail)
        super().__init__(msg)
        self.result = result
        self.stdout = result.stdout
        self.stderr = result.stderr
        self.exit_code = result.exit_code
        self.signal = result.signal


class BuildError(SpaceError):
    """A template build failed: a step's command exited non-zero, a COPY source was missing,
    the Dockerfile or the context was refused, or the build was cancelled. The build's output
    came before it (``on_log``); nothing was recorded, so a template of that name stays as it was.

    Attributes:
        step: the number of the step that failed (1 is the first line the build counts), or
            None when the build failed before or outside any step (a bad Dockerfile...).
        exit_code: the exit code of the step's command, for a RUN that failed, else None.
        code: the daemon's error code (``"build_failed"``, ``"cancelled"``...).
        event: the whole ``error`` event.
    """

    def __init__(self, event):
        err = event.get("error") or {}
        self.step = event.get("step")
        self.exit_code = event.get("exit_code")
        self.event = event
        msg = err.get("message") or "the build failed"
        if self.step is not None:
            msg = "step %s: %s" % (self.step, msg)
        super().__init__(msg, None, err.get("code"))


class TimeoutError(SpaceError, builtins.TimeoutError):
    """A deadline passed: a request, a command's ``timeout``, or a wait.

    It is also a builtin :class:`TimeoutError`, so ``except TimeoutError``
    catches it either way.

    Attributes:
        result: for a command killed at its timeout, its :class:`~space.CommandResult`
            (exit code 137, output so far); otherwise None.
    """

    def __init__(self, message, result=None):
        SpaceError.__init__(self, message)
        self.result = result


class ConnectionError(SpaceError, builtins.ConnectionError):
    """The daemon could not be reached (no socket, connection refused or reset).

    It is also a builtin :class:`ConnectionError`.
    """

    def __init__(self, message):
        SpaceError.__init__(self, message)


_BY_STATUS = {
    400: InvalidArgumentError,
    401: AuthError,
    403: PermissionDeniedError,
    404: NotFoundError,
    413: TooLargeError,
    422: ExecFailedError,
    429: LimitError,
    503: UnavailableError,
}


def error_from(status, code, message, state=None, not_found=None):
    """The exception for an error the daemon reported.

    ``not_found`` is the NotFoundError subclass the caller expects for a 404
    (a file for a files route...); a 404 that names the sandbox itself is
    always a SandboxNotFound.
    """
    message = message or ("HTTP %d" % status)
    if status == 409:
        return ConflictError(message, status, code or "conflict", state)
    if status == 404:
        if message.startswith("no sandbox") or (message.startswith("sandbox ") and message.endswith("was deleted")):
            cls = SandboxNotFound
        else:
            cls = not_found or NotFoundError
        return cls(message, status, code)
    if code == "isolation_unavailable":
        return IsolationUnavailableError(message, status, code)
    cls = _BY_STATUS.get(status, SpaceError)
    return cls(message, status, code)


_STATUS_OF_CODE = {
    "invalid_argument": 400, "unauthorized": 401, "permission_denied": 403, "not_found": 404, "method_not_allowed": 405,
    "conflict": 409, "too_large": 413, "exec_failed": 422, "too_many": 429, "internal": 500,
    "unavailable": 503,
}


def from_event(ev, not_found=None):
    """The exception for an ``{"type": "error", "error": {...}}`` event of a stream."""
    err = ev.get("error") or {}
    code = err.get("code")
    return error_from(_STATUS_OF_CODE.get(code, 500), code, err.get("message"), err.get("state"), not_found)


def from_response(status, body, not_found=None):
    """The exception for an error response: HTTP ``status`` and its raw ``body`` bytes."""
    code = message = state = None
    try:
        err = json.loads(body.decode("utf-8"))["error"]
        code, message, state = err.get("code"), err.get("message"), err.get("state")
    except (ValueError, KeyError, TypeError, AttributeError):
        text = body.decode("utf-8", "replace").strip() if body else ""
        message = "HTTP %d%s" % (status, (": " + text[:300]) if text else "")
    return error_from(status, code, message, state, not_found)

"""space: the Python SDK of the space sandbox platform.

Talks to spaced over its Unix socket or over TCP with a token, configured by
SPACE_HOST (``unix:///run/space/space.sock`` by default, ``http://HOST:PORT``
or ``https://HOST:PORT``), SPACE_TOKEN and SPACE_CA, like the CLI. Standard
library only.

    from space import Sandbox
    with Sandbox.create(timeout=300) as sb:
        print(sb.commands.run("echo hi").stdout)
        sb.run_code("x = 40")
        print(sb.run_code("x + 2").text)      # 42

See docs/sdk-python.md for every method.
"""

from .code import CodeContext, Execution, ExecutionError
from .commands import CommandHandle, CommandResult, Commands, ProcessInfo
from .errors import (AuthError, BuildError, CommandExitError, ConflictError, ConnectionError, ExecFailedError,
                     FileNotFound, InvalidArgumentError, IsolationUnavailableError, LimitError, NotFoundError,
                     PermissionDeniedError, ProcessNotFound, SandboxNotFound, SnapshotNotFound, SpaceError, TemplateNotFound, TimeoutError,
                     TooLargeError, UnavailableError)
from .files import EntryInfo, FileStream, Files, FilesystemEvent, WatchHandle, WriteInfo
from .pty import Pty, PtyHandle
from .sandbox import Sandbox, SandboxInfo, SandboxMetrics, Snapshot, Template

__version__ = "0.1.0"

__all__ = [
    "Sandbox", "SandboxInfo", "SandboxMetrics", "Snapshot", "Template",
    "Commands", "CommandResult", "CommandHandle", "ProcessInfo",
    "Files", "EntryInfo", "WriteInfo", "FileStream", "FilesystemEvent", "WatchHandle", "Pty", "PtyHandle",
    "CodeContext", "Execution", "ExecutionError",
    "SpaceError", "AuthError", "NotFoundError", "SandboxNotFound", "FileNotFound", "ProcessNotFound",
    "SnapshotNotFound", "TemplateNotFound", "PermissionDeniedError", "ConflictError", "InvalidArgumentError",
    "TooLargeError",
    "ExecFailedError", "LimitError", "UnavailableError", "IsolationUnavailableError", "CommandExitError",
    "BuildError", "TimeoutError", "ConnectionError",
]

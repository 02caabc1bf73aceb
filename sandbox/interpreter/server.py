"""sandbox/interpreter/server.py - the code interpreter's server, run inside a sandbox of template
code-interpreter-v1 (docs/e2b.md, "Code Interpreter"): E2B's Code Interpreter SDKs speak to it on
port 49999 through the E2B front, and it runs their code in Jupyter kernels (python, r), a
Node.js process (javascript, js_kernel.js) or a bash shell.

  POST /execute {"code", "context_id" | "language", "env_vars"}  -> NDJSON, one event a line:
       {"type": "stdout"|"stderr", "text"}, {"type": "result", "is_main_result", <formats>},
       {"type": "error", "name", "value", "traceback"},
       {"type": "number_of_executions", "execution_count"}, then {"type": "end_of_execution"}
  POST /contexts {"language", "cwd"} -> {"id", "language", "cwd"};  GET /contexts -> [...]
  DELETE /contexts/{id};  POST /contexts/{id}/restart;  GET /health

A context is a kernel, a Node.js process or a shell. The default one of each language is made on its first use (python's
before the server listens, so that a server that answers has a kernel ready). A client that
goes away while its cell runs (the SDK's timeoutMs passed, the caller was cut off) has the cell
interrupted (the kernel's SIGINT), not the kernel restarted: the context keeps its state.
Errors are HTTP statuses with a text body, as the SDK's extractError reads them (404: a
context that is not there; 400: a request it cannot take).

Standard library and Debian's python3-jupyter-client only.
"""

import json
import os
import select
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from jupyter_client.manager import KernelManager

PORT = 49999
BODY_MAX = 1 << 20             # a request's body, at most (the E2B front's GW_MAX_BODY too)
KERNEL_READY_S = 120           # a kernel's start, at most
POLL_S = 0.2                   # how often a running cell looks whether its client is still there
CONTEXTS_MAX = 4               # kernels at once, the default ones included (each a process of
                               # 50-100 MB: more would not fit a sandbox of 512 MB)
DEFAULT_CWD = "/home/user" if os.path.isdir("/home/user") else "/"
KERNEL_SOCKETS = "/run/space-interpreter"  # the kernels' channels: <context id>-<n>, Unix sockets

# A language's kernel (its Jupyter kernelspec name).
KERNELS = {"python": "space-python3", "r": "ir"}
# bash: a shell of our own (BashContext); javascript: a Node.js process of our own (JsContext)
LANGUAGES = set(KERNELS) | {"bash", "javascript"}
ALIASES = {"js": "javascript"}  # the names E2B's SDKs also take for a language
JS_KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "js_kernel.js")
# MIME type of a kernel's output -> the SDK's name for that format.
FORMATS = {
    "text/plain": "text", "text/html": "html", "text/markdown": "markdown", "image/svg+xml": "svg",
    "image/png": "png", "image/jpeg": "jpeg", "application/pdf": "pdf", "text/latex": "latex",
    "application/json": "json", "application/javascript": "javascript",
}


class HttpError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class BaseContext:
    """What every context has: its id, language, folder, and the lock that lets one cell run in
    it at a time. A context also has start(), stop(), restart() and run(code, env_vars, emit,
    gone)."""

    def __init__(self, language, cwd):
        self.id = str(uuid.uuid4())
        self.language = language
        self.cwd = cwd
        self.lock = threading.Lock()

    def describe(self):
        return {"id": self.id, "language": self.language, "cwd": self.cwd}


class Context(BaseContext):
    """One Jupyter kernel."""

    def __init__(self, language, cwd):
        super().__init__(language, cwd)
        self.km = None
        self.kc = None

    def start(self):
        # its channels are Unix sockets (ZeroMQ's ipc), not loopback TCP: gVisor (runsc
        # 20221219) cannot save a listening TCP socket a process waits on, so a kernel on TCP
        # would make the sandbox's suspend fail
        self.km = KernelManager(kernel_name=KERNELS[self.language], transport="ipc",
                                ip=os.path.join(KERNEL_SOCKETS, self.id))
        self.km.start_kernel(cwd=self.cwd)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=KERNEL_READY_S)

    def stop(self):
        if self.kc:
            self.kc.stop_channels()
        if self.km:
            self.km.shutdown_kernel(now=True)

    def restart(self):
        with self.lock:
            self.kc.stop_channels()
            self.km.restart_kernel(now=True)
            self.kc = self.km.client()
            self.kc.start_channels()
            self.kc.wait_for_ready(timeout=KERNEL_READY_S)

    def run(self, code, env_vars, emit, gone):
        """Runs code, handing each event to emit(dict); gone() says whether the client left, and
        then the cell is interrupted and its remaining output dropped."""
        with self.lock:
            undo = self._set_env(env_vars)
            try:
                self._cell(code, emit, gone)
            finally:
                if undo:
                    self._silent(undo)

    def _silent(self, code):
        msg_id = self.kc.execute(code, silent=True, store_history=False)
        self._wait(msg_id, lambda m: None, lambda: False)

    def _set_env(self, env_vars):
        """Sets env_vars in the kernel for one cell; the code that puts them back, or None."""
        if not env_vars:
            return None
        pairs = {str(k): str(v) for k, v in env_vars.items()}
        self._silent("import os as __sp_os\n__sp_env = {k: __sp_os.environ.get(k) for k in %r}\n"
                     "__sp_os.environ.update(%r)" % (list(pairs), pairs))
        return ("for __sp_k, __sp_v in __sp_env.items():\n"
                "    __sp_os.environ.pop(__sp_k, None) if __sp_v is None else __sp_os.environ.__setitem__(__sp_k, __sp_v)\n"
                "del __sp_env, __sp_os")

    def _cell(self, code, emit, gone):
        msg_id = self.kc.execute(code, store_history=True, allow_stdin=False, stop_on_error=True)

        def on_msg(msg):
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                emit({"type": "stdout" if content.get("name") == "stdout" else "stderr", "text": content["text"]})
            elif kind in ("execute_result", "display_data"):
                out = {"type": "result", "is_main_result": kind == "execute_result"}
                for mime, value in content.get("data", {}).items():
                    out[FORMATS.get(mime, mime)] = value
                emit(out)
            elif kind == "error":
                emit({"type": "error", "name": content.get("ename", ""), "value": content.get("evalue", ""),
                      "traceback": "\n".join(content.get("traceback", []))})
            elif kind == "execute_input":
                emit({"type": "number_of_executions", "execution_count": content.get("execution_count")})

        self._wait(msg_id, on_msg, gone)

    def _wait(self, msg_id, on_msg, gone):
        """Hands the kernel's messages about msg_id to on_msg until the kernel is idle again."""
        interrupted = False
        while True:
            if not interrupted and gone():
                self.km.interrupt_kernel()
                interrupted = True
            try:
                msg = self.kc.get_iopub_msg(timeout=POLL_S)
            except Exception:  # queue.Empty: nothing yet
                if not self.km.is_alive():
                    raise HttpError(500, "the kernel died")
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle":
                return
            if not interrupted:
                on_msg(msg)


class ProcessContext(BaseContext):
    """A context that is a process of the server's own, in a session of its own (its start()
    makes self.proc): stopped with its whole group, restarted as a new one."""

    def __init__(self, language, cwd):
        super().__init__(language, cwd)
        self.proc = None
        self.count = 0

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        if self.proc:
            self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if f:
                    f.close()

    def restart(self):
        with self.lock:
            self.stop()
            self.start()


class BashContext(ProcessContext):
    """A bash shell that keeps its state (variables, functions, folder) from cell to cell. A cell
    is a file the shell sources, followed by a marker on each stream with its exit status; an
    interrupt is the shell's SIGINT, on which it returns from the cell (its trap) and lives on."""

    def __init__(self, language, cwd):
        super().__init__(language, cwd)
        self.token = "\x1eSPACE-CELL-%s" % self.id  # in no program's output

    def start(self):
        self.proc = subprocess.Popen(["bash", "--noprofile", "--norc"], cwd=self.cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.proc.stdin.write(b"trap 'return 130' INT\n")
        self.proc.stdin.flush()

    def run(self, code, env_vars, emit, gone):
        with self.lock:
            if self.proc.poll() is not None:  # a cell's `exit` ended the shell: a new one
                self.stop()
                self.start()
            fd, path = tempfile.mkstemp(prefix="space-cell-", suffix=".sh")
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(code + "\n")
                self.count += 1
                emit({"type": "number_of_executions", "execution_count": self.count})
                self.proc.stdin.write(("source %s </dev/null; printf '%%s %%d\\n' '%s' $?; printf '%%s\\n' '%s' >&2\n"
                                       % (shlex.quote(path), self.token, self.token)).encode())
                self.proc.stdin.flush()
                status = self._read(emit, gone)
            finally:
                os.unlink(path)
            if status is None:
                emit({"type": "error", "name": "ShellExited", "value": "the shell ended", "traceback": ""})
            elif status != 0:
                emit({"type": "error", "name": "ExitStatus", "value": "exit status %d" % status, "traceback": ""})

    def _read(self, emit, gone):
        """Hands the cell's output to emit until both markers came; its exit status, or None when
        the shell ended first."""
        pending = {self.proc.stdout: b"", self.proc.stderr: b""}
        names = {self.proc.stdout: "stdout", self.proc.stderr: "stderr"}
        token = self.token.encode()
        status, interrupted = None, False
        while pending:
            if not interrupted and gone():
                os.killpg(self.proc.pid, signal.SIGINT)
                interrupted = True
            ready = select.select(list(pending), [], [], POLL_S)[0]
            for f in ready:
                data = os.read(f.fileno(), 65536)
                buf = pending[f] + data
                at = buf.find(token)
                if not data or at >= 0:  # the shell's end, or the cell's
                    out = buf if at < 0 else buf[:at]
                    if f is self.proc.stdout and at >= 0:
                        status = int(buf[at + len(token):].split(b"\n", 1)[0] or 0)
                    del pending[f]
                else:  # whole lines go out as they come
                    cut = buf.rfind(b"\n") + 1
                    out, pending[f] = buf[:cut], buf[cut:]
                if out and not interrupted:
                    emit({"type": names[f], "text": out.decode(errors="replace")})
        return status


class JsContext(ProcessContext):
    """A Node.js process (js_kernel.js) that keeps one context from cell to cell: a cell is a
    line of JSON on its stdin, its events JSON lines on its stdout up to {"type": "end"}; an
    interrupt is its SIGINT, which ends the cell and keeps the context."""

    def start(self):
        self.proc = subprocess.Popen(["node", JS_KERNEL], cwd=self.cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, start_new_session=True)

    def run(self, code, env_vars, emit, gone):
        with self.lock:
            self.count += 1
            emit({"type": "number_of_executions", "execution_count": self.count})
            try:
                self.proc.stdin.write(json.dumps({"code": code}).encode() + b"\n")
                self.proc.stdin.flush()
            except OSError:
                pass  # it ended meanwhile: _read says so
            if not self._read(emit, gone):
                emit({"type": "error", "name": "KernelExited", "value": "the javascript process ended", "traceback": ""})
                self.stop()  # the next cell gets a new one
                self.start()

    def _read(self, emit, gone):
        """Hands the cell's events to emit until its end; False when the process ended first."""
        buf, interrupted = b"", False
        fd = self.proc.stdout.fileno()
        while True:
            if not interrupted and gone():
                os.kill(self.proc.pid, signal.SIGINT)
                interrupted = True
            if not select.select([fd], [], [], POLL_S)[0]:
                continue
            data = os.read(fd, 65536)
            if not data:
                return False
            buf += data
            *lines, buf = buf.split(b"\n")
            for line in lines:
                event = json.loads(line)
                if event.get("type") == "end":
                    return True
                if not interrupted:
                    emit(event)


class Contexts:
    def __init__(self):
        self.lock = threading.Lock()
        self.making = threading.Lock()  # held while a default context is made
        self.all = {}
        self.defaults = {}  # language -> its default context's id

    def create(self, language, cwd):
        language = (language or "python").lower()
        language = ALIASES.get(language, language)
        if language not in LANGUAGES:
            raise HttpError(400, "language %r is not offered here (%s)" % (language, ", ".join(sorted(LANGUAGES))))
        with self.lock:
            if len(self.all) >= CONTEXTS_MAX:
                raise HttpError(429, "at most %d contexts at once" % CONTEXTS_MAX)
        kind = {"bash": BashContext, "javascript": JsContext}.get(language, Context)
        ctx = kind(language, cwd or DEFAULT_CWD)
        ctx.start()
        with self.lock:
            self.all[ctx.id] = ctx
        return ctx

    def get(self, context_id):
        with self.lock:
            ctx = self.all.get(context_id)
        if not ctx:
            raise HttpError(404, "context %s is not there" % context_id)
        return ctx

    def default(self, language):
        language = (language or "python").lower()
        language = ALIASES.get(language, language)
        with self.making:  # two first calls at once make one kernel
            with self.lock:
                ctx = self.all.get(self.defaults.get(language, ""))
            if not ctx:
                ctx = self.create(language, DEFAULT_CWD)
                with self.lock:
                    self.defaults[language] = ctx.id
        return ctx

    def remove(self, context_id):
        with self.lock:
            ctx = self.all.pop(context_id, None)
        if not ctx:
            raise HttpError(404, "context %s is not there" % context_id)
        ctx.stop()

    def list(self):
        with self.lock:
            return [c.describe() for c in self.all.values()]


CONTEXTS = Contexts()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request a connection; a stream ends when it closes

    def log_message(self, fmt, *args):
        sys.stderr.write("interpreter: %s\n" % (fmt % args))

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n < 0 or n > BODY_MAX:
            raise HttpError(413, "a body of at most %d bytes" % BODY_MAX)
        data = self.rfile.read(n) if n else b""
        try:
            body = json.loads(data) if data else {}
        except ValueError:
            raise HttpError(400, "the body is not JSON")
        if not isinstance(body, dict):
            raise HttpError(400, "the body is not a JSON object")
        return body

    def _answer(self, status, body=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status, message):
        data = message.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self, method):
        path = self.path.split("?", 1)[0].rstrip("/") or "/"
        parts = path.strip("/").split("/")
        if method == "GET" and path == "/health":
            return self._answer(200, {"status": "ok"})
        if method == "POST" and path == "/execute":
            return self._execute(self._body())
        if path == "/contexts":
            if method == "GET":
                return self._answer(200, CONTEXTS.list())
            if method == "POST":
                body = self._body()
                return self._answer(200, CONTEXTS.create(body.get("language"), body.get("cwd")).describe())
        if len(parts) == 2 and parts[0] == "contexts" and method == "DELETE":
            CONTEXTS.remove(parts[1])
            return self._answer(204)
        if len(parts) == 3 and parts[0] == "contexts" and parts[2] == "restart" and method == "POST":
            CONTEXTS.get(parts[1]).restart()
            return self._answer(204)
        raise HttpError(404, "no route %s %s" % (method, path))

    def _execute(self, body):
        code = body.get("code")
        if not isinstance(code, str):
            raise HttpError(400, "\"code\" must be a string")
        env_vars = body.get("env_vars") or {}
        if not isinstance(env_vars, dict):
            raise HttpError(400, "\"env_vars\" must be an object")
        if body.get("context_id") and body.get("language"):
            raise HttpError(400, "give context_id or language, not both")
        ctx = CONTEXTS.get(body["context_id"]) if body.get("context_id") else CONTEXTS.default(body.get("language"))
        if env_vars and ctx.language != "python":
            raise HttpError(400, "env_vars are taken in python contexts only")
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()
        left = [False]

        def emit(event):
            if left[0]:
                return
            try:
                self.wfile.write(json.dumps(event).encode() + b"\n")
                self.wfile.flush()
            except OSError:
                left[0] = True

        def gone():
            # the client's end of the connection: readable with nothing to read is its close
            if not left[0] and select.select([self.connection], [], [], 0)[0]:
                try:
                    left[0] = self.connection.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    left[0] = True
            return left[0]

        try:
            ctx.run(code, env_vars, emit, gone)
        except HttpError as e:
            emit({"type": "error", "name": "ServerError", "value": str(e), "traceback": ""})
        emit({"type": "end_of_execution"})

    def _serve(self, method):
        try:
            self._route(method)
        except HttpError as e:
            self._error(e.status, str(e))
        except Exception as e:  # a kernel that would not start or answer
            self._error(500, "%s: %s" % (type(e).__name__, e))

    def do_GET(self):
        self._serve("GET")

    def do_POST(self):
        self._serve("POST")

    def do_DELETE(self):
        self._serve("DELETE")


def main():
    os.makedirs(KERNEL_SOCKETS, mode=0o700, exist_ok=True)
    CONTEXTS.default("python")  # a server that answers has its default kernel ready
    server = ThreadingHTTPServer(("0.0.0.0", PORT), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()

"""Following the output of one process, across broken streams.

ProcessOutput yields ("stdout", bytes), ("stderr", bytes), ("dropped", n: output
bytes of a "drop" process this reader missed) and finally ("exit", info) for
one process of a sandbox. It starts from an exec stream
already open (a foreground command) or attaches with
GET .../processes/{pid}/output, and when the stream ends without an exit
event (the daemon restarted, the agent reconnected, the connection broke) it
attaches again: the daemon keeps output nobody has read, so nothing is lost
or repeated (under the "drop" output policy, the daemon keeps only the last
of it). A suspend ends the stream with an error naming the state: then it
waits, reading the sandbox's record (which does not resume it), until the
sandbox runs again, and attaches then. It stops for good when the exit
arrives, when the sandbox or the process is gone, or when close() is called
from any thread. Other readers of
the same process get the same output beside it.

Follower runs a ProcessOutput in a daemon thread and hands each event to a
callable: the machinery of background commands and code contexts.
"""

import threading
import time

from . import errors
from ._transport import event_bytes

REATTACH_GIVE_UP = 300.0   # seconds of failed re-attaching before the follower gives up
REATTACH_BACKOFF = (0.05, 1.0)
RESUME_POLL = 0.5          # seconds between looks at a suspended sandbox's state


class TakenOver(errors.SpaceError):
    """Another reader attached to the process's output; this one stopped."""


class ProcessOutput:
    """Iterates over the output events of process `pid` of sandbox `sandbox_id`.

    stream: an OpenResponse of an exec stream whose `start` event was read
    already, or None to attach. read_timeout: seconds a read may wait for the
    daemon (None: for ever); on expiry the iteration raises TimeoutError.
    """

    def __init__(self, transport, sandbox_id, pid, stream=None, read_timeout=None):
        self.transport = transport
        self.sandbox_id = sandbox_id
        self.pid = pid
        self.read_timeout = read_timeout
        self._stream = stream
        self._closed = False
        self._lock = threading.Lock()
        # set once the output is attached (so output produced from now on comes here), or
        # once following ended; a caller about to make the process talk waits for it
        self.attached = threading.Event()
        if stream is not None:
            self.attached.set()

    def _attach(self):
        path = "/v1/sandboxes/%s/processes/%d/output" % (self.sandbox_id, self.pid)
        return self.transport.open("GET", path, timeout=self.read_timeout, not_found=errors.ProcessNotFound)

    def _set_stream(self, s):
        with self._lock:
            if self._closed:
                s.close()
                return False
            self._stream = s
            return True

    def __iter__(self):
        failing_since = None
        delay = REATTACH_BACKOFF[0]
        while not self._closed:
            if self._stream is None:
                try:
                    if not self._set_stream(self._attach()):
                        return
                    self.attached.set()
                except (errors.ConnectionError, errors.UnavailableError):
                    now = time.monotonic()
                    failing_since = failing_since or now
                    if now - failing_since > REATTACH_GIVE_UP:
                        raise
                    self._pause(delay)
                    delay = min(delay * 2, REATTACH_BACKOFF[1])
                    continue
            stream = self._stream
            try:
                for ev in stream.events():
                    kind = ev.get("type")
                    if kind in ("stdout", "stderr"):
                        failing_since, delay = None, REATTACH_BACKOFF[0]
                        yield kind, event_bytes(ev)
                    elif kind == "dropped":
                        yield kind, int(ev.get("bytes") or 0)
                    elif kind == "exit":
                        yield "exit", ev
                        return
                    elif kind == "error":
                        err = ev.get("error") or {}
                        if err.get("state") == "suspended":
                            self._wait_running()
                            failing_since, delay = None, REATTACH_BACKOFF[0]
                            break  # re-attach once it runs
                        if err.get("code") == "conflict":
                            raise TakenOver(err.get("message") or "another reader took over the output",
                                            409, "conflict")
                        break  # re-attach
            except errors.ConnectionError:
                pass  # re-attach
            finally:
                stream.close()
                self._stream = None
            if self._closed:
                return
            now = time.monotonic()
            failing_since = failing_since or now
            if now - failing_since > REATTACH_GIVE_UP:
                raise errors.ConnectionError("lost the output of process %d for %d s" % (self.pid, REATTACH_GIVE_UP))
            self._pause(delay)
            delay = min(delay * 2, REATTACH_BACKOFF[1])

    def _wait_running(self):
        """Waits until the sandbox runs again (someone resumed it), without resuming it; raises
        when it is gone or failed."""
        path = "/v1/sandboxes/%s" % self.sandbox_id
        while not self._closed:
            state = self.transport.json("GET", path, not_found=errors.SandboxNotFound).get("state")
            if state == "running":
                return
            if state in ("failed", "deleting"):
                raise errors.SpaceError("sandbox %s is %s" % (self.sandbox_id, state))
            self._pause(RESUME_POLL)

    def _pause(self, delay):
        # waiting between re-attach attempts; close() does not need to cut it short
        time.sleep(delay)

    def close(self):
        """Stops following; a read blocked in another thread returns."""
        with self._lock:
            self._closed = True
            s = self._stream
        if s is not None:
            s.close()


class Follower:
    """Follows a process's output in a daemon thread.

    sink(kind, payload) is called in that thread for each event:
    ("stdout"|"stderr", bytes), ("exit", info), and, if following failed,
    ("error", exception). Exactly one of "exit" and "error" ends it, unless
    stop() was called first.
    """

    def __init__(self, output, sink, name):
        self.output = output
        self.sink = sink
        self._stopped = False
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self):
        """Starts the thread; returns self."""
        self.thread.start()
        return self

    def _run(self):
        try:
            for kind, payload in self.output:
                self.sink(kind, payload)
        except errors.SpaceError as e:
            if not self._stopped:
                self.sink("error", e)
        except Exception as e:  # a bug must still end the waiters
            if not self._stopped:
                self.sink("error", errors.SpaceError("following process output failed: %r" % (e,)))
        finally:
            self.output.attached.set()

    def wait_attached(self, timeout):
        """Waits until the output is attached (or following ended); False if `timeout` passed first."""
        return self.output.attached.wait(timeout)

    def stop(self):
        """Stops following (the process keeps running)."""
        self._stopped = True
        self.output.close()

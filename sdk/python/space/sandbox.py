"""Sandboxes, snapshots and templates: the objects an application holds.

A Sandbox is a handle on one sandbox of a spaced: its id and the Transport
used to reach the daemon. It owns no resource on the client except the
threads that follow background output; the sandbox lives in the daemon until
it is killed (by `kill()`, the end of a `with` block, or its timeout_action).
"""

import datetime
import os
import secrets
import tarfile
import tempfile
import threading
from urllib.parse import quote

from . import errors
from ._transport import Transport
from .code import CodeContext, DEFAULT_CODE_TIMEOUT, NAME_RE
from .commands import Commands
from .pty import Pty
from .files import Files

__all__ = ["Sandbox", "SandboxInfo", "Snapshot", "Template"]

TRANSITION_TIMEOUT = 300.0  # seconds a lifecycle request (suspend, snapshot, fork...) may take by default
IMPORT_TIMEOUT = 3600.0     # seconds an import may take: spaced answers once skopeo and umoci are done
ARCHIVE_SOURCES = ("oci-archive", "docker-archive")  # imports whose body is the archive
DEFAULT_CONTEXT = "default"


def _time(s):
    """A datetime (UTC) for an RFC 3339 string from the daemon, or None."""
    if not s:
        return None
    for shape in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ"):  # a sandbox's created_at has milliseconds
        try:
            return datetime.datetime.strptime(s, shape).replace(tzinfo=datetime.timezone.utc)
        except ValueError:
            pass
    return None


class SandboxInfo:
    """What the daemon knows about a sandbox, at the time it was asked.

    Attributes:
        id: the sandbox id.
        state: "creating", "running", "pausing", "paused", "suspending",
            "suspended", "resuming", "deleting" or "failed".
        template, cpus, memory_mb, disk_mb: how it was made.
        isolation: what isolates it for its whole life, "gvisor" or "microvm"
            (driver: the same, its older name).
        metadata: its labels (dict of str).
        created_at: datetime (UTC).
        timeout: idle timeout in seconds (0: none); lifetime: seconds (0: none).
        timeout_action: "suspend" or "kill"; keepalive_processes: bool.
        timeout_at, expires_at: datetime (UTC) when the idle timeout or the
            lifetime runs out, or None.
        reason: why a failed sandbox failed, else None.
        network: its network (dict: "egress", "allow", "deny", "address", "gateway",
            "host_address", "bytes_out", "bytes_in"), or None for one made with no network.
        auto_resume: whether a request for it resumes it when paused or suspended.
        raw: the whole JSON object.
    """

    def __init__(self, d):
        self.raw = d
        self.id = d.get("id")
        self.state = d.get("state")
        self.template = d.get("template")
        self.cpus = d.get("cpus")
        self.memory_mb = d.get("memory_mb")
        self.disk_mb = d.get("disk_mb")
        self.metadata = d.get("metadata") or {}
        self.created_at = _time(d.get("created_at"))
        self.timeout = d.get("timeout")
        self.lifetime = d.get("lifetime")
        self.timeout_action = d.get("timeout_action")
        self.keepalive_processes = d.get("keepalive_processes")
        self.timeout_at = _time(d.get("timeout_at"))
        self.expires_at = _time(d.get("expires_at"))
        self.isolation = d.get("isolation")
        self.driver = d.get("driver")
        self.reason = d.get("reason")
        self.network = d.get("network")
        self.auto_resume = d.get("auto_resume")

    def __repr__(self):
        return "SandboxInfo(id=%r, state=%r, metadata=%r)" % (self.id, self.state, self.metadata)


class SandboxMetrics:
    """What a sandbox used at one moment, as the daemon measured it from the host (one sample of
    ``sandbox.metrics()``; the daemon samples a running sandbox every few seconds).

    Attributes:
        timestamp: datetime (UTC) of the sample.
        cpu_used_pct: CPU used over the interval before it, in percent of all its CPUs (0-100;
            0 in the first sample after a start or resume).
        cpu_count: its CPUs.
        mem_used, mem_total: memory used and its limit, bytes; mem_cache: of mem_used, the
            page cache of its files (0 where the host cannot tell, a microVM).
        disk_used, disk_total: its disk's used bytes and its size.
        raw: the whole JSON object.
    """

    def __init__(self, d):
        self.raw = d
        self.timestamp = _time(d.get("timestamp"))
        self.cpu_used_pct = d.get("cpu_used_pct")
        self.cpu_count = d.get("cpu_count")
        self.mem_used = d.get("mem_used_bytes")
        self.mem_total = d.get("mem_total_bytes")
        self.mem_cache = d.get("mem_cache_bytes")
        self.disk_used = d.get("disk_used_bytes")
        self.disk_total = d.get("disk_total_bytes")

    def __repr__(self):
        return "SandboxMetrics(timestamp=%r, cpu_used_pct=%r, mem_used=%r, disk_used=%r)" % (
            self.timestamp, self.cpu_used_pct, self.mem_used, self.disk_used)


def _unix_seconds(t, name):
    """Whole Unix seconds of a datetime or a number, for a metrics bound."""
    if isinstance(t, datetime.datetime):
        if t.tzinfo is None:
            raise errors.InvalidArgumentError("%s must be a datetime with a time zone" % name)
        return int(t.timestamp())
    if isinstance(t, (int, float)) and not isinstance(t, bool):
        return int(t)
    raise errors.InvalidArgumentError("%s must be a datetime or Unix seconds" % name)


class Snapshot:
    """A named, read-only copy of a sandbox (memory and files), from ``sandbox.snapshot()``.

    Start new sandboxes from it with ``Sandbox.create(snapshot=snap)``.

    Attributes:
        id: the snapshot id ("s-...").
        sandbox_id: the sandbox it was taken from.
        name: its name, or None.
        template, cpus, memory_mb, disk_mb, env, metadata: what sandboxes made from it get.
        isolation: the kind of the sandbox it was taken from, the only one that can restore it.
        created_at: datetime (UTC).
        raw: the whole JSON object.
    """

    def __init__(self, d, transport):
        self.raw = d
        self.id = d.get("id")
        self.sandbox_id = d.get("sandbox_id")
        self.name = d.get("name")
        self.template = d.get("template")
        self.cpus = d.get("cpus")
        self.memory_mb = d.get("memory_mb")
        self.disk_mb = d.get("disk_mb")
        self.env = d.get("env") or {}
        self.metadata = d.get("metadata") or {}
        self.isolation = d.get("isolation")
        self.created_at = _time(d.get("created_at"))
        self._transport = transport

    def __repr__(self):
        return "Snapshot(id=%r, sandbox_id=%r, name=%r)" % (self.id, self.sandbox_id, self.name)

    def delete(self):
        """Deletes the snapshot. Returns False if it did not exist."""
        try:
            self._transport.request("DELETE", "/v1/snapshots/%s" % self.id, timeout=TRANSITION_TIMEOUT,
                                    not_found=errors.SnapshotNotFound)
            return True
        except errors.SnapshotNotFound:
            return False


class Template:
    """A root filesystem sandboxes start from (``Sandbox.create(template=name)``); made by
    spaced's operator, ``Sandbox.build_template()`` or ``Sandbox.import_template()``.

    Attributes:
        name: its name; key: its files' key in the machine's cache.
        source: where it came from (a package set, or an image).
        config: its defaults (for an image: ``env``, ``workdir``, ``user``, ``cmd``; for a
            build: ``env``, ``workdir``, ``user``, ``labels``).
        sandboxes: how many sandboxes start from it (from ``get_template`` only, else None).
        created_at: datetime (UTC).
        raw: the whole JSON object.
    """

    def __init__(self, d):
        self.raw = d
        self.name = d.get("name")
        self.key = d.get("key")
        self.source = d.get("source")
        self.config = d.get("config") or {}
        self.sandboxes = d.get("sandboxes")
        self.created_at = _time(d.get("created_at"))

    def __repr__(self):
        return "Template(name=%r, source=%r)" % (self.name, self.source)


class Sandbox:
    """One sandbox of a spaced. Make one with ``Sandbox.create()`` or ``Sandbox.connect()``.

    Used as a context manager, the sandbox is killed at the end of the block.

    Attributes:
        id: the sandbox id.
        commands: run and manage processes (a Commands).
        files: read and write files (a Files).
        pty: terminals, for interactive programs (a Pty).
    """

    def __init__(self, sandbox_id, host=None, token=None, request_timeout=None, ca=None, _transport=None):
        """A handle on sandbox `sandbox_id`, made without asking the daemon anything.

        Prefer ``Sandbox.connect()``, which checks that it exists and resumes it.
        """
        self.id = sandbox_id
        self._transport = _transport or Transport(host, token, request_timeout, ca)
        self.commands = Commands(self)
        self.files = Files(self)
        self.pty = Pty(self)
        self._contexts = {}
        self._contexts_lock = threading.Lock()
        self._fresh = False

    def __repr__(self):
        return "Sandbox(%r)" % self.id

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()

    def _path(self, rest=""):
        return "/v1/sandboxes/%s%s" % (self.id, rest)

    # -- making, finding and removing sandboxes

    @classmethod
    def create(cls, template=None, timeout=None, env=None, metadata=None, cpus=None, memory_mb=None,
               disk_mb=None, lifetime=None, timeout_action=None, keepalive_processes=None, snapshot=None,
               isolation=None, network=None, auto_resume=None, host=None, token=None, request_timeout=None,
               ca=None):
        """Creates a sandbox and returns it once its first command can run.

        Args:
            template: root file system to start from; default "default".
            timeout: idle timeout in seconds (default 300; 0: none). When it passes
                with no activity, `timeout_action` happens.
            env: environment (dict of str) of every process in the sandbox.
            metadata: labels (dict of str), for ``Sandbox.list(metadata=...)``.
            cpus: whole CPUs (1..64, default 1); memory_mb: memory limit (default 512).
            disk_mb: size of its disk, the files it writes (64..262144, default 5120);
                filling it gives ENOSPC inside.
            lifetime: maximum lifetime in seconds from creation (default: none).
            timeout_action: "suspend" (default) or "kill" when a timeout runs out.
            keepalive_processes: whether a running process counts as activity.
            snapshot: a Snapshot (or snapshot id) to restore instead of a template;
                template, cpus, memory_mb, disk_mb and isolation then come from it.
            isolation: what isolates it, "gvisor" (gVisor's user-space kernel) or
                "microvm" (a microVM with its own kernel); default: the daemon's.
                A kind the daemon's host cannot run now raises IsolationUnavailableError;
                one other than a snapshot's, InvalidArgumentError.
            network: its egress policy, a dict {"egress": "none" | "open" | "allow",
                "allow": [CIDR, ...], "deny": [CIDR, ...]} (default: the daemon's mode,
                empty lists), or False for no network interface at all.
            auto_resume: whether a command or file call on it while it is paused or
                suspended resumes it first (True) or raises ConflictError (False); default:
                the daemon's setting (True unless spaced runs with --no-auto-resume).
            host, token: the daemon to use; default $SPACE_HOST and $SPACE_TOKEN.
            request_timeout: seconds any request may wait for the daemon (default 60).
            ca: for an https host, the CA bundle (PEM file) that signed the daemon's
                certificate; default $SPACE_CA, then the system's.
        """
        t = Transport(host, token, request_timeout, ca)
        body = {}
        for key, val in (("template", template), ("timeout", timeout), ("cpus", cpus), ("memory_mb", memory_mb),
                         ("disk_mb", disk_mb),
                         ("lifetime", lifetime), ("timeout_action", timeout_action),
                         ("keepalive_processes", keepalive_processes), ("isolation", isolation),
                         ("network", network), ("auto_resume", auto_resume)):
            if val is not None:
                body[key] = val
        if env:
            body["env"] = dict(env)
        if metadata:
            body["metadata"] = dict(metadata)
        if snapshot is not None:
            body["snapshot"] = snapshot.id if isinstance(snapshot, Snapshot) else snapshot
        # a create waits for the sandbox's agent; restoring a snapshot takes longer than a cold start
        d = t.json("POST", "/v1/sandboxes", body=body, timeout=max(t.request_timeout, TRANSITION_TIMEOUT),
                   not_found=errors.SnapshotNotFound if snapshot is not None else None)
        sb = cls(d["id"], _transport=t)
        sb._fresh = snapshot is None  # a new sandbox runs no interpreter yet
        return sb

    @classmethod
    def connect(cls, sandbox_id, timeout=None, host=None, token=None, request_timeout=None, ca=None):
        """A Sandbox for an existing sandbox; a paused or suspended one is resumed first.

        Args:
            timeout: a new idle timeout in seconds, counted from now (default: the
                sandbox keeps what was left of its own).

        Raises SandboxNotFound if there is no such sandbox.
        """
        sb = cls(sandbox_id, host, token, request_timeout, ca)
        info = sb.get_info()
        if info.state in ("paused", "pausing", "suspended", "suspending", "resuming") or timeout is not None:
            sb.resume(timeout=timeout)
        return sb

    @staticmethod
    def list(metadata=None, state=None, host=None, token=None, request_timeout=None, ca=None):
        """The sandboxes of the daemon, oldest first; a list of SandboxInfo.

        Args:
            metadata: only sandboxes whose metadata has every given key and value.
            state: only sandboxes in this state (a str) or these states (a list).
        """
        t = Transport(host, token, request_timeout, ca)
        query = {"label": ["%s=%s" % (k, v) for k, v in (metadata or {}).items()]} if metadata else None
        out = [SandboxInfo(d) for d in t.json("GET", "/v1/sandboxes", query=query)["sandboxes"]]
        if state is not None:
            states = {state} if isinstance(state, str) else set(state)
            out = [i for i in out if i.state in states]
        return out

    def get_info(self):
        """A fresh SandboxInfo of this sandbox; raises SandboxNotFound."""
        return SandboxInfo(self._transport.json("GET", self._path(), not_found=errors.SandboxNotFound))

    def is_running(self):
        """Whether the sandbox exists and is running (not paused, suspended or failed)."""
        try:
            return self.get_info().state == "running"
        except errors.SandboxNotFound:
            return False

    def kill(self):
        """Deletes the sandbox: every process is killed and its files removed.

        Returns False if it did not exist (any more).
        """
        for ctx in list(self._contexts.values()):
            ctx._detach()
        self._contexts.clear()
        try:
            self._transport.request("DELETE", self._path(), timeout=TRANSITION_TIMEOUT,
                                    not_found=errors.SandboxNotFound)
            return True
        except errors.SandboxNotFound:
            return False

    # -- lifecycle

    def _transition(self, action, body=None, timeout=TRANSITION_TIMEOUT):
        return SandboxInfo(self._transport.json("POST", self._path("/" + action), body=body,
                                                timeout=max(self._transport.request_timeout, timeout),
                                                not_found=errors.SandboxNotFound))

    def pause(self):
        """Freezes every process; memory stays on the host (quick, not durable).

        Returns the SandboxInfo. Raises ConflictError from states that cannot pause.
        """
        return self._transition("pause")

    def resume(self, timeout=None):
        """Resumes a paused or suspended sandbox (a running one is left as it is).

        Args:
            timeout: a new idle timeout in seconds, counted from now.

        Returns the SandboxInfo.
        """
        return self._transition("resume", {"timeout": timeout} if timeout is not None else None)

    def set_timeout(self, timeout=None, lifetime=None, timeout_action=None):
        """Moves when the sandbox ends; what is left None stays as it is.

        Args:
            timeout: a new idle timeout in seconds, counted from now (0: none); any request
                to the sandbox's processes or files starts it again.
            lifetime: a new lifetime in seconds, counted from now (0: none); the sandbox
                ends then whatever it does.
            timeout_action: "suspend" or "kill", what either does when it passes.

        Returns the SandboxInfo (``timeout_at`` and ``expires_at`` say when each fires).
        """
        body = {k: v for k, v in (("timeout", timeout), ("lifetime", lifetime),
                                  ("timeout_action", timeout_action)) if v is not None}
        return SandboxInfo(self._transport.json("POST", self._path("/timeout"), body=body,
                                                not_found=errors.SandboxNotFound))

    def suspend(self):
        """Writes memory, processes and files to disk, durably, and frees the sandbox's resources.

        Any later request to the sandbox (or ``resume()``, ``Sandbox.connect()``)
        brings it back where it was. Returns the SandboxInfo.
        """
        return self._transition("suspend")

    def sync(self):
        """Flushes the sandbox's files to durable storage; returns once they are there."""
        return self._transition("sync")

    def ports(self):
        """The TCP ports processes in the sandbox listen on, on any address: a list of
        ``{"port": 8000, "address": "0.0.0.0", "protocol": "tcp"}``."""
        return self._transport.json("GET", self._path("/ports"), not_found=errors.SandboxNotFound)["ports"]

    def metrics(self, start=None, end=None):
        """What the sandbox used of its CPUs, memory and disk: a list of SandboxMetrics,
        oldest first, from the samples the daemon took while it ran (every 5 s, its last
        120). A paused or suspended sandbox gives those of when it ran, and is not resumed.

        Args:
            start, end: only samples taken from / until then (datetime with a time zone,
                or Unix seconds), both inclusive.
        """
        query = {}
        if start is not None:
            query["start"] = str(_unix_seconds(start, "start"))
        if end is not None:
            query["end"] = str(_unix_seconds(end, "end"))
        d = self._transport.json("GET", self._path("/metrics"), query=query or None, not_found=errors.SandboxNotFound)
        return [SandboxMetrics(m) for m in d["metrics"]]

    def network(self):
        """The sandbox's network: its policy, addresses and byte counts (a dict, see
        ``SandboxInfo.network``), or None for a sandbox made with no network."""
        return self._transport.json("GET", self._path(), not_found=errors.SandboxNotFound).get("network")

    def set_network(self, egress=None, allow=None, deny=None):
        """Changes the egress policy; new connections follow it at once, open ones go on.

        What is left None stays as it is (a change of egress away from "allow" drops the
        allow list). Returns the new network (as ``network()``)."""
        body = {k: v for k, v in (("egress", egress), ("allow", allow), ("deny", deny)) if v is not None}
        return self._transport.json("PATCH", self._path("/network"), body=body,
                                    not_found=errors.SandboxNotFound)["network"]

    def snapshot(self, name=None):
        """Takes a named, read-only snapshot (memory and files); the sandbox runs on.

        Returns a Snapshot, to start new sandboxes from with ``Sandbox.create(snapshot=...)``.
        """
        d = self._transport.json("POST", self._path("/snapshot"), body={"name": name} if name else None,
                                 timeout=max(self._transport.request_timeout, TRANSITION_TIMEOUT),
                                 not_found=errors.SandboxNotFound)
        return Snapshot(d, self._transport)

    def fork(self, count=1):
        """Starts `count` (1..16) copies of this sandbox as it is now, memory included.

        Each copy has its own files. Returns a list of Sandbox.
        """
        d = self._transport.json("POST", self._path("/fork"), body={"count": count},
                                 timeout=max(self._transport.request_timeout, TRANSITION_TIMEOUT),
                                 not_found=errors.SandboxNotFound)
        return [Sandbox(s["id"], _transport=self._transport) for s in d["sandboxes"]]

    @staticmethod
    def isolation_kinds(host=None, token=None, request_timeout=None, ca=None):
        """The isolation kinds of the daemon: ``{"default": KIND, "available": {KIND: its
        runtime, or None where the host cannot run it}, "unavailable": {KIND: why}}``."""
        v = Transport(host, token, request_timeout, ca).json("GET", "/v1/version")
        return v.get("isolation") or {"default": v.get("driver"), "available": {v.get("driver"): v.get("runtime")},
                                      "unavailable": {}}

    # -- snapshots

    @staticmethod
    def list_snapshots(host=None, token=None, request_timeout=None, ca=None):
        """Every snapshot of the daemon; a list of Snapshot."""
        t = Transport(host, token, request_timeout, ca)
        return [Snapshot(d, t) for d in t.json("GET", "/v1/snapshots")["snapshots"]]

    @staticmethod
    def get_snapshot(snapshot_id, host=None, token=None, request_timeout=None, ca=None):
        """The Snapshot with this id; raises SnapshotNotFound."""
        t = Transport(host, token, request_timeout, ca)
        return Snapshot(t.json("GET", "/v1/snapshots/%s" % snapshot_id, not_found=errors.SnapshotNotFound), t)

    @staticmethod
    def delete_snapshot(snapshot_id, host=None, token=None, request_timeout=None, ca=None):
        """Deletes the snapshot with this id; returns False if it did not exist."""
        return Snapshot({"id": snapshot_id}, Transport(host, token, request_timeout, ca)).delete()

    # -- templates

    @staticmethod
    def list_templates(host=None, token=None, request_timeout=None, ca=None):
        """Every template of the daemon, by name; a list of Template."""
        t = Transport(host, token, request_timeout, ca)
        return [Template(d) for d in t.json("GET", "/v1/templates")["templates"]]

    @staticmethod
    def get_template(name, host=None, token=None, request_timeout=None, ca=None):
        """The Template with this name; raises TemplateNotFound."""
        t = Transport(host, token, request_timeout, ca)
        return Template(t.json("GET", "/v1/templates/%s" % quote(name, safe=""), not_found=errors.TemplateNotFound))

    @staticmethod
    def build_template(name, context=".", dockerfile=None, build_args=None, on_log=None, host=None, token=None,
                       request_timeout=None, ca=None, packages=None):
        """Builds template `name` from a Dockerfile, as ``space template build``; returns its Template.

        The folder `context` is sent whole as a tar stream (as ``tar -c -C context .``
        makes it: every file, links kept as links, never followed), and the build's events
        are read as they come. Building a name again replaces its template once the build
        succeeds; one that fails leaves it as it was.

        Args:
            name: the template's name, NAME or NAME:TAG ([A-Za-z0-9][A-Za-z0-9._-]* each;
                NAME:latest is NAME; not "default").
            context: the build context, a folder; default the current one.
            dockerfile: the Dockerfile's path inside the context (default "Dockerfile");
                an absolute path must lie inside the context.
            build_args: values of the Dockerfile's ARGs (dict of str).
            packages: Debian packages (a list of str) the default template gets before the
                steps, installed by the host's mmdebstrap (the Dockerfile must start from the
                default template).
            on_log: called, in the calling thread, with each event of the build as a dict:
                ``{"type": "step", "step", "steps", "line", "text", "cached"}``,
                ``{"type": "output", "stream", "data" (or "data_b64")}``,
                ``{"type": "waiting", "message"}`` (another build of this name runs), and
                the last, ``done`` or ``error``. If it raises (or the wait is interrupted),
                the request is closed, which cancels the build, and the exception propagates.
            host, token, request_timeout, ca: as for ``Sandbox.create()``; request_timeout
                bounds each wait for a byte (spaced sends one every 15 s of a build).

        Raises BuildError when the build fails (a step's command, a missing source, a
        Dockerfile spaced refuses); InvalidArgumentError for a context that is not a
        folder, a Dockerfile outside it, a bad build argument or (from spaced) a bad name;
        ConflictError for "default"; LimitError while spaced runs as many builds as it
        may. A file of the context that cannot be read raises its OSError.
        """
        root = os.path.realpath(context)
        if not os.path.isdir(root):
            raise errors.InvalidArgumentError("the build context %s is not a folder" % (context,))
        query = {"name": name}
        if dockerfile is not None:
            query["dockerfile"] = _dockerfile_in(root, context, dockerfile)
        if build_args:
            query["build_arg"] = [_build_arg(k, v) for k, v in dict(build_args).items()]
        if packages:
            query["packages"] = ",".join(packages)
        t = Transport(host, token, request_timeout, ca)
        with _context_tar(root) as body:
            stream = t.open("POST", "/v1/templates", query=query, data=body,
                            headers={"Content-Type": "application/x-tar"})
        with stream:  # leaving early closes the request, which cancels the build
            for ev in stream.events():
                kind = ev.get("type")
                if kind == "keepalive":
                    continue
                if on_log is not None:
                    on_log(ev)
                if kind == "done":
                    return Template(ev.get("template") or {})
                if kind == "error":
                    raise errors.BuildError(ev)
        raise errors.SpaceError("the build of template %s ended without a template" % name)

    @staticmethod
    def import_template(name, source, host=None, token=None, request_timeout=None, ca=None):
        """Makes template `name` from a container image, as ``space template import``; returns its Template.

        Args:
            name: the template's name ([A-Za-z0-9][A-Za-z0-9._-]*; not "default").
            source: "oci-archive:FILE" or "docker-archive:FILE" (a local file, sent to
                spaced) or "docker://REFERENCE" (spaced pulls it).
            host, token, request_timeout, ca: as for ``Sandbox.create()``. spaced answers
                once the image is unpacked: the call waits up to an hour (or request_timeout
                if longer).

        Raises InvalidArgumentError for a source of another form (before any request) and
        for an image skopeo or umoci refuse (with their reason); an archive that cannot be
        read raises its OSError.
        """
        kind, _, rest = source.partition(":") if isinstance(source, str) else ("", "", "")
        if not ((kind in ARCHIVE_SOURCES and rest) or (kind == "docker" and rest.startswith("//") and rest[2:])):
            raise errors.InvalidArgumentError(
                "source must be oci-archive:FILE, docker-archive:FILE or docker://REFERENCE, not %r" % (source,))
        t = Transport(host, token, request_timeout, ca)
        timeout = max(t.request_timeout, IMPORT_TIMEOUT)
        if kind == "docker":
            d = t.json("POST", "/v1/templates", query={"name": name, "source": source}, timeout=timeout)
        else:
            with open(rest, "rb") as archive:
                d = t.json("POST", "/v1/templates", query={"name": name, "source": kind}, data=archive,
                           timeout=timeout)
        return Template(d)

    @staticmethod
    def delete_template(name, host=None, token=None, request_timeout=None, ca=None):
        """Removes the template; False if it did not exist. ConflictError while a sandbox or
        snapshot starts from it, and for the default one."""
        t = Transport(host, token, request_timeout, ca)
        try:
            t.request("DELETE", "/v1/templates/%s" % quote(name, safe=""), timeout=TRANSITION_TIMEOUT,
                      not_found=errors.TemplateNotFound)
            return True
        except errors.TemplateNotFound:
            return False

    # -- code interpreter

    def create_code_context(self, language="python", cwd=None, env=None, name=None):
        """Starts a new, independent interpreter in the sandbox and returns its CodeContext.

        Args:
            language: only "python".
            cwd: its working directory (default /work); env: extra environment.
            name: a unique name ([A-Za-z0-9_.-], at most 64); default a random one.
        """
        _check_language(language)
        if name is None:
            name = "ctx-" + secrets.token_hex(4)
        if not NAME_RE.match(name):
            raise errors.InvalidArgumentError("a code context name is 1-64 characters of [A-Za-z0-9_.-]")
        ctx = CodeContext._start(self, name, cwd, env)
        with self._contexts_lock:
            self._contexts[name] = ctx
        return ctx

    def list_code_contexts(self):
        """The interpreters running in the sandbox (started by any client); a list of CodeContext."""
        found = []
        for p in self.commands.list():
            ctx = CodeContext._from_process(self, p)
            if ctx is not None:
                with self._contexts_lock:
                    known = self._contexts.get(ctx.name)
                found.append(known if known is not None and known.pid == ctx.pid else ctx)
        return found

    def _default_context(self):
        with self._contexts_lock:
            ctx = self._contexts.get(DEFAULT_CONTEXT)
        if ctx is not None and ctx._dead is None:
            return ctx
        # Another client (or an earlier Sandbox object) may have started it, or taken its
        # output over from this one: use the running interpreter, the newest if several.
        ctx = None if self._fresh else CodeContext._find(self, DEFAULT_CONTEXT)
        if ctx is None:
            ctx = CodeContext._start(self, DEFAULT_CONTEXT)
        with self._contexts_lock:
            self._contexts[DEFAULT_CONTEXT] = ctx
        return ctx

    def run_code(self, code, language="python", context=None, timeout=DEFAULT_CODE_TIMEOUT, on_stdout=None,
                 on_stderr=None):
        """Runs a cell of code in a stateful interpreter inside the sandbox; returns an Execution.

        Variables, imports and functions persist between calls (and across
        pause/resume and suspend/resume). ``Execution.text`` is the value of
        the cell's last expression; errors are returned in ``Execution.error``,
        not raised.

        Args:
            code: Python source.
            language: only "python".
            context: a CodeContext from ``create_code_context()``; default: the
                sandbox's "default" context, started on first use (and found
                again by a later ``Sandbox.connect()``).
            timeout: seconds before the cell is interrupted with KeyboardInterrupt
                (default 300; None: no limit); earlier state is kept.
            on_stdout, on_stderr: called with the cell's output as it is produced.
        """
        _check_language(language)
        ctx = context if context is not None else self._default_context()
        return ctx.run(code, timeout=timeout, on_stdout=on_stdout, on_stderr=on_stderr)


def _context_tar(root):
    """The folder root as a tar stream, in an anonymous temporary file at its start.

    As the CLI's ``tar -c -C root .``: names start with "./", links are kept as links
    (never followed), hard links as hard links; sockets are left out.
    """
    f = tempfile.TemporaryFile()
    try:
        with tarfile.open(fileobj=f, mode="w", format=tarfile.GNU_FORMAT) as tar:
            tar.add(root, arcname=".")
        f.seek(0)
    except BaseException:
        f.close()
        raise
    return f


def _dockerfile_in(root, context, dockerfile):
    """The Dockerfile's path inside the context whose real path is root, for the query."""
    path = os.fspath(dockerfile)
    rel = os.path.relpath(os.path.realpath(path), root) if os.path.isabs(path) else os.path.normpath(path)
    if rel in (".", "..") or rel.startswith("../") or os.path.isabs(rel):
        raise errors.InvalidArgumentError("the Dockerfile %s is not inside the build context %s" % (path, context))
    return rel


def _build_arg(name, value):
    name = str(name)
    if not name or "=" in name:
        raise errors.InvalidArgumentError("a build argument's name must be non-empty and hold no '=', not %r" % (name,))
    return "%s=%s" % (name, value)


def _check_language(language):
    if language not in ("python", "python3"):
        raise errors.InvalidArgumentError("language %r is not supported: only \"python\"" % (language,))


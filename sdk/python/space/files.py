"""Moving files in and out of a sandbox: `sandbox.files`.

Paths are absolute paths inside the sandbox, or relative ones: from the
user's home when a call names a `user`, else from the sandbox's working folder
(/work). Every call takes `user`: a name from the sandbox's /etc/passwd, a uid
or "UID:GID"; the call is then made as that user (its permissions apply, what
it makes is its own). Reads and writes stream: a file
of any size passes in blocks of 1 MiB, never whole in the daemon's memory
(and, with format="stream" or a file object, never whole in yours).
"""

import io
import os

from . import errors
from ._transport import BLOCK

__all__ = ["Files", "EntryInfo", "WriteInfo", "FileStream", "FilesystemEvent", "WatchHandle"]


class EntryInfo:
    """One file system entry (from `files.list()` and `files.stat()`).

    Attributes:
        name: its base name.
        path: its absolute path.
        type: "file", "dir", "symlink" or "other".
        size: its size in bytes.
        mode: its permission bits as an octal string, like "0644".
        mtime: when it was last modified (RFC 3339 string, UTC, with nanoseconds).
        uid, gid: its owner's and group's ids.
        owner, group: their names in the sandbox (the id as a string when it has
            none; None from a sandbox whose agent predates them).
        symlink_target: a link's target as stored, None for anything else.
    """

    def __init__(self, d):
        self.name = d.get("name")
        self.path = d.get("path")
        self.type = d.get("type")
        self.size = d.get("size")
        self.mode = d.get("mode")
        self.mtime = d.get("mtime")
        self.uid = d.get("uid")
        self.gid = d.get("gid")
        self.owner = d.get("owner")
        self.group = d.get("group")
        self.symlink_target = d.get("symlink_target")

    @property
    def is_dir(self):
        """Whether the entry is a directory."""
        return self.type == "dir"

    def __repr__(self):
        return "EntryInfo(path=%r, type=%r, size=%r)" % (self.path, self.type, self.size)


class WriteInfo:
    """What `files.write()` wrote: `path` and `size` in bytes."""

    def __init__(self, d):
        self.path = d.get("path")
        self.size = d.get("size")

    def __repr__(self):
        return "WriteInfo(path=%r, size=%r)" % (self.path, self.size)


class FileStream:
    """A file being read from a sandbox, as an iterator of byte chunks.

    Use it in a ``with`` block, or iterate to the end: either closes the connection.
    """

    def __init__(self, response, path):
        self._resp = response
        self.path = path

    def __iter__(self):
        try:
            while True:
                chunk = self._resp.read_chunk(BLOCK)
                if not chunk:
                    return
                yield chunk
        finally:
            self.close()

    def read(self, size=BLOCK):
        """Up to `size` bytes more; b"" at the end of the file."""
        return self._resp.read_chunk(size)

    def close(self):
        """Stops reading and closes the connection."""
        self._resp.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class FilesystemEvent:
    """One change in a watched folder (from iterating a `WatchHandle`).

    Attributes:
        type: "create" (made, or the new name of a move), "write", "remove", "rename" (the
            old name of a move), "chmod" (mode, owner or times), or "lost": events were
            dropped here because they were read too slowly.
        name: what changed, relative to the watched folder ("" for the folder itself and
            for "lost").
    """

    def __init__(self, d):
        self.type = d.get("type")
        self.name = d.get("name", "")

    def __eq__(self, other):
        return isinstance(other, FilesystemEvent) and (self.type, self.name) == (other.type, other.name)

    def __repr__(self):
        return "FilesystemEvent(type=%r, name=%r)" % (self.type, self.name)


class WatchHandle:
    """A folder being watched (from `files.watch()`); iterate it for the changes as they
    happen. The iteration ends when the folder is removed or moved away, or after `stop()`.

    Use it in a ``with`` block, or call `stop()`: either ends the watch in the sandbox.
    """

    def __init__(self, response, path):
        self._resp = response
        self.path = path

    def __iter__(self):
        for ev in self._resp.events():
            kind = ev.get("type")
            if kind == "error":
                raise errors.from_event(ev, errors.FileNotFound)
            if kind == "end":
                return
            if kind not in ("start", "keepalive"):
                yield FilesystemEvent(ev)

    def stop(self):
        """Ends the watch (a thread iterating the handle sees the iteration end)."""
        self._resp.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class Files:
    """The file system of one sandbox; reached as `sandbox.files`.

    Every method takes `request_timeout`: the seconds the daemon may stay
    silent before TimeoutError (default: the sandbox's request timeout).
    """

    def __init__(self, sandbox):
        self._sb = sandbox

    @property
    def _t(self):
        return self._sb._transport

    def _path(self, rest=""):
        return "/v1/sandboxes/%s/files%s" % (self._sb.id, rest)

    @staticmethod
    def _as(query, user):
        if user is not None:
            query["user"] = str(user)
        return query

    def _kw(self, request_timeout):
        kw = {"not_found": errors.FileNotFound}
        if request_timeout is not None:
            kw["timeout"] = request_timeout
        return kw

    def read(self, path, format="text", user=None, request_timeout=None):
        """Reads the file at `path`.

        Args:
            format: "text" (a str, decoded as UTF-8), "bytes", or "stream"
                (a FileStream that yields the bytes in chunks as they come).

        Raises:
            FileNotFound: nothing at `path`.
            InvalidArgumentError: `path` is a directory, or `user` unknown.
            PermissionDeniedError: `user` may not read it.
        """
        if format not in ("text", "bytes", "stream"):
            raise errors.InvalidArgumentError('format must be "text", "bytes" or "stream"')
        resp = self._t.open("GET", self._path(), query=self._as({"path": path}, user), **self._kw(request_timeout))
        stream = FileStream(resp, path)
        if format == "stream":
            return stream
        with stream:
            data = b"".join(stream)
        return data.decode("utf-8") if format == "text" else data

    def write(self, path, data, mode=None, user=None, request_timeout=None):
        """Writes `data` to the file at `path`, replacing it; parent directories are made.

        Args:
            data: str (written as UTF-8), bytes, or a binary file object opened
                for reading (sent in blocks from its current position).
            mode: permission bits, as an int (0o755) or an octal string ("0755");
                default 0644.
            user: the file and the parents made are this user's.

        Returns:
            a WriteInfo with the (absolute) path and the number of bytes written.
        """
        if isinstance(data, str):
            data = data.encode("utf-8")
        elif isinstance(data, (bytearray, memoryview)):
            data = bytes(data)
        elif not isinstance(data, bytes):
            if not hasattr(data, "read"):
                raise TypeError("data must be str, bytes or a binary file object")
            if not _has_fileno(data):
                data = data.read()
                if isinstance(data, str):
                    data = data.encode("utf-8")
        query = self._as({"path": path}, user)
        if mode is not None:
            query["mode"] = mode if isinstance(mode, str) else "%04o" % mode
        return WriteInfo(self._t.json("PUT", self._path(), query=query, data=data, **self._kw(request_timeout)))

    def list(self, path, user=None, request_timeout=None):
        """The entries of directory `path`, sorted by name; a list of EntryInfo.

        spaced answers a listing in pages (at most 2,000 entries each); this follows them."""
        entries, query = [], self._as({"path": path}, user)
        while True:
            d = self._t.json("GET", self._path("/list"), query=query, **self._kw(request_timeout))
            entries.extend(EntryInfo(e) for e in d["entries"])
            if not d.get("truncated") or not d.get("next"):
                return entries
            query = self._as({"path": path, "after": d["next"]}, user)

    def stat(self, path, user=None, request_timeout=None):
        """The EntryInfo of `path` (a link's own, not its target's); raises FileNotFound."""
        return EntryInfo(self._t.json("GET", self._path("/stat"), query=self._as({"path": path}, user),
                                      **self._kw(request_timeout)))

    def exists(self, path, user=None, request_timeout=None):
        """Whether anything (file, directory, link) is at `path`."""
        try:
            self.stat(path, user, request_timeout)
            return True
        except errors.FileNotFound:
            return False

    def remove(self, path, user=None, request_timeout=None):
        """Removes the file, or the whole directory tree, at `path`; raises FileNotFound."""
        self._t.request("DELETE", self._path(), query=self._as({"path": path}, user), **self._kw(request_timeout))

    def make_dir(self, path, user=None, request_timeout=None):
        """Makes directory `path` and its parents; an existing directory is fine. Returns its absolute path."""
        d = self._t.json("POST", self._path("/mkdir"), body=self._as({"path": path}, user), **self._kw(request_timeout))
        return d.get("path", path) if isinstance(d, dict) else path

    def watch(self, path, recursive=False, request_timeout=None):
        """Watches the folder at `path` for changes made inside the sandbox.

        Returns once the sandbox watches: every change after that is seen. With `recursive`,
        every folder below `path` is watched too, those made later included. A sandbox has
        at most 16 watches at once; a stopped one gives its place back.

        Args:
            request_timeout: the seconds the daemon may stay silent before TimeoutError while
                iterating (it sends a keepalive every 15 s).

        Returns:
            a WatchHandle: iterate it for FilesystemEvent objects.

        Raises:
            FileNotFound: nothing at `path`.
            InvalidArgumentError: `path` is not a folder, or a recursive watch
                would follow more than 1,024 folders.
            LimitError: the sandbox has 16 watches open.
        """
        query = {"path": path, "recursive": "1" if recursive else "0"}
        resp = self._t.open("GET", self._path("/watch"), query=query, **self._kw(request_timeout))
        handle = WatchHandle(resp, path)
        first = next(iter(resp.events()), None)
        if not first or first.get("type") != "start":
            handle.stop()
            if first and first.get("type") == "error":
                raise errors.from_event(first, errors.FileNotFound)
            raise errors.SpaceError("the watch of %s ended before it started" % path)
        return handle

    def rename(self, old_path, new_path, user=None, request_timeout=None):
        """Renames (moves) `old_path` to `new_path` inside the sandbox."""
        self._t.request("POST", self._path("/rename"), body=self._as({"from": old_path, "to": new_path}, user),
                        **self._kw(request_timeout))


def _has_fileno(f):
    try:
        os.fstat(f.fileno())
        f.tell()
        return True
    except (AttributeError, OSError, io.UnsupportedOperation, ValueError):
        return False

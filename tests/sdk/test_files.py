"""sandbox.files: reading, writing, listing, removing, and a 100 MiB round trip."""

import hashlib
import io
import os

import pytest

import space

MiB = 1 << 20


def test_write_read_exists_list_remove(sandbox):
    info = sandbox.files.write("/work/a.txt", "text or bytes")
    assert (info.path, info.size) == ("/work/a.txt", 13)
    assert sandbox.files.read("/work/a.txt") == "text or bytes"
    sandbox.files.write("/work/b.bin", b"\x00\xff\x10")
    assert sandbox.files.read("/work/b.bin", format="bytes") == b"\x00\xff\x10"
    sandbox.files.write("/work/u.txt", "héllo ✓")
    assert sandbox.files.read("/work/u.txt") == "héllo ✓"
    assert sandbox.commands.run("cat /work/a.txt").stdout == "text or bytes"

    entries = sandbox.files.list("/work")
    assert [e.name for e in entries] == ["a.txt", "b.bin", "u.txt"]
    a = entries[0]
    assert (a.path, a.type, a.size, a.is_dir) == ("/work/a.txt", "file", 13, False)
    assert sandbox.files.exists("/work/a.txt")
    sandbox.files.remove("/work/a.txt")
    assert not sandbox.files.exists("/work/a.txt")
    assert [e.name for e in sandbox.files.list("/work")] == ["b.bin", "u.txt"]


def test_dirs_stat_rename_and_mode(sandbox):
    sandbox.files.make_dir("/work/d/e/f")
    sandbox.files.make_dir("/work/d/e/f")  # existing is fine
    assert sandbox.files.stat("/work/d/e").is_dir
    sandbox.files.write("/work/new/deep/file.txt", "parents are made")
    assert sandbox.files.read("/work/new/deep/file.txt") == "parents are made"
    sandbox.files.rename("/work/new/deep/file.txt", "/work/d/moved.txt")
    assert not sandbox.files.exists("/work/new/deep/file.txt")
    assert sandbox.files.read("/work/d/moved.txt") == "parents are made"
    sandbox.files.write("/work/run.sh", "#!/bin/sh\necho ran\n", mode=0o755)
    st = sandbox.files.stat("/work/run.sh")
    assert st.mode == "0755" and st.type == "file" and st.mtime
    assert sandbox.commands.run("/work/run.sh").stdout == "ran\n"
    sandbox.files.write("/work/ro.txt", "x", mode="0600")
    assert sandbox.files.stat("/work/ro.txt").mode == "0600"
    sandbox.files.remove("/work/d")  # a whole tree
    assert not sandbox.files.exists("/work/d/e/f")


def test_missing_paths_and_bad_paths(sandbox):
    for call in (lambda: sandbox.files.read("/work/nope"), lambda: sandbox.files.stat("/work/nope"),
                 lambda: sandbox.files.remove("/work/nope"), lambda: sandbox.files.list("/work/nope")):
        with pytest.raises(space.FileNotFound) as e:
            call()
        assert isinstance(e.value, space.NotFoundError) and e.value.status == 404
    assert sandbox.files.exists("/work/nope") is False
    with pytest.raises(space.InvalidArgumentError):
        sandbox.files.read("/work")  # a directory
    with pytest.raises(space.InvalidArgumentError):
        sandbox.files.read("/work/a", format="xml")
    with pytest.raises(space.InvalidArgumentError) as e:
        sandbox.files.stat("/work", user="nobody-of-that-name")
    assert "no such user" in e.value.message


def test_relative_paths_users_and_what_entries_say(sandbox):
    # without a user a relative path starts at /work; with one, at its home
    assert sandbox.files.write("relative.txt", "x").path == "/work/relative.txt"
    info = sandbox.files.write("notes/a.txt", "mine", user="user")
    assert (info.path, info.size) == ("/home/user/notes/a.txt", 4)
    assert sandbox.files.read("notes/a.txt", user="user") == "mine"
    assert sandbox.files.make_dir("made", user=1000) == "/home/user/made"
    st = sandbox.files.stat("/home/user/notes/a.txt")
    assert (st.owner, st.group, st.uid, st.gid) == ("user", "user", 1000, 1000)
    assert st.mtime.endswith("Z") and len(st.mtime) == len("2026-12-07T10:11:12.123456789Z")
    assert sandbox.commands.run("stat -c %U /home/user/notes /home/user/made").stdout == "user\nuser\n"
    sandbox.commands.run("ln -s notes/a.txt /home/user/link")
    entries = {e.name: e for e in sandbox.files.list(".", user="user")}
    assert entries["link"].symlink_target == "notes/a.txt" and entries["notes"].symlink_target is None
    assert sandbox.files.exists("link", user="user")
    sandbox.files.rename("link", "link2", user="user")
    sandbox.files.remove("link2", user="user")
    assert not sandbox.files.exists("/home/user/link2")
    # root's files stay root's
    sandbox.files.write("/work/secret", "s", mode=0o600)
    with pytest.raises(space.PermissionDeniedError) as e:
        sandbox.files.read("/work/secret", user="user")
    assert e.value.status == 403
    with pytest.raises(space.PermissionDeniedError):
        sandbox.files.write("/work/x", "x", user="user")


def test_write_from_a_file_object_and_read_as_a_stream(sandbox, tmp_path):
    data = os.urandom(5 * MiB + 123)
    local = tmp_path / "up.bin"
    local.write_bytes(data)
    with open(local, "rb") as f:
        assert sandbox.files.write("/work/up.bin", f).size == len(data)
    assert sandbox.files.write("/work/mem.bin", io.BytesIO(b"from memory")).size == 11
    assert sandbox.files.read("/work/mem.bin") == "from memory"
    with sandbox.files.read("/work/up.bin", format="stream") as stream:
        got = b"".join(stream)
    assert got == data


def test_a_100_mib_file_round_trip(sandbox):
    data = os.urandom(100 * MiB)
    want = hashlib.sha256(data).hexdigest()
    assert sandbox.files.write("/work/big.bin", data).size == 100 * MiB
    assert sandbox.files.stat("/work/big.bin").size == 100 * MiB
    assert sandbox.commands.run("sha256sum /work/big.bin").stdout.split()[0] == want
    assert hashlib.sha256(sandbox.files.read("/work/big.bin", format="bytes")).hexdigest() == want
    h = hashlib.sha256()
    n = 0
    for chunk in sandbox.files.read("/work/big.bin", format="stream"):
        h.update(chunk)
        n += 1
    assert h.hexdigest() == want and n > 1  # it came in pieces


def test_watch_a_folder_recursive_or_not_and_stop(sandbox):
    sandbox.files.make_dir("/work/w")
    with sandbox.files.watch("/work/w", recursive=True) as deep, sandbox.files.watch("/work/w") as flat:
        sandbox.commands.run("mkdir /work/w/sub && echo x > /work/w/sub/f.txt && echo m > /work/w/marker")
        marker = space.FilesystemEvent({"type": "create", "name": "marker"})
        seen = []
        for ev in deep:
            seen.append(ev)
            if ev == marker:
                break
        assert space.FilesystemEvent({"type": "create", "name": "sub/f.txt"}) in seen
        plain = []
        for ev in flat:
            plain.append(ev)
            if ev == marker:
                break
        assert [e for e in plain if e.name.startswith("sub/")] == [], plain
    with pytest.raises(space.FileNotFound):
        sandbox.files.watch("/work/nothing-here")
    sandbox.files.write("/work/plain.txt", "x")
    with pytest.raises(space.InvalidArgumentError):
        sandbox.files.watch("/work/plain.txt")
    # removing the folder ends the iteration
    w = sandbox.files.watch("/work/w")
    sandbox.commands.run("rm -r /work/w")
    assert space.FilesystemEvent({"type": "remove", "name": ""}) in list(w)

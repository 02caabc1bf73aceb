"""Moving files in and out of a sandbox, and managing them: read, write,
stat, list, mkdir, remove, rename.

What goes in through the files API is checked from inside the sandbox with
its own tools, and the other way round, so neither side vouches for itself.
"""

import hashlib
import os

from conftest import q

MiB = 1 << 20


def files(sbid, path, tail=""):
    return f"/v1/sandboxes/{sbid}/files{tail}?path={q(path)}"


def put(api, sbid, path, data, mode=None):
    url = files(sbid, path) + (f"&mode={mode}" if mode else "")
    return api.ok("PUT", url, raw=data, expect=(201,))


def get(api, sbid, path):
    status, hdrs, body = api.request("GET", files(sbid, path))
    assert status == 200, (status, body[:300])
    return body


def stat(api, sbid, path):
    return api.json("GET", files(sbid, path, "/stat"))


def test_binary_round_trip_with_every_byte_value(api, sandbox):
    data = bytes(range(256)) * 64 + bytes(reversed(range(256))) + b"\x00" * 7
    res = put(api, sandbox, "/work/bin.dat", data)
    assert res == {"path": "/work/bin.dat", "size": len(data)}
    inside = api.exec(sandbox, ["sha256sum", "/work/bin.dat"])
    assert inside["stdout"].split()[0] == hashlib.sha256(data).hexdigest()
    status, hdrs, body = api.request("GET", files(sandbox, "/work/bin.dat"))
    assert status == 200
    assert hdrs["content-type"] == "application/octet-stream"
    assert body == data


def test_a_file_made_inside_reads_back_exactly(api, sandbox):
    api.exec(sandbox, ["python3", "-c", "open('/work/made.bin','wb').write(bytes(range(256))[::-1] * 3)"])
    assert get(api, sandbox, "/work/made.bin") == bytes(range(256))[::-1] * 3


def test_empty_file_and_replacement(api, sandbox):
    assert put(api, sandbox, "/work/e", b"")["size"] == 0
    assert get(api, sandbox, "/work/e") == b""
    put(api, sandbox, "/work/r.txt", b"a long first version\n")
    put(api, sandbox, "/work/r.txt", b"short\n")
    assert get(api, sandbox, "/work/r.txt") == b"short\n"
    assert api.exec(sandbox, ["cat", "/work/r.txt"])["stdout"] == "short\n"


def test_mode_is_applied(api, sandbox):
    put(api, sandbox, "/work/run.sh", b"#!/bin/sh\necho ran\n", mode="0755")
    status, st = stat(api, sandbox, "/work/run.sh")
    assert status == 200 and st["mode"] == "0755", st
    res = api.exec(sandbox, ["/work/run.sh"])
    assert (res["exit_code"], res["stdout"]) == (0, "ran\n")
    status, body = api.json("PUT", files(sandbox, "/work/x") + "&mode=rw-r--r--", raw=b"x")
    assert status == 400 and body["error"]["code"] == "invalid_argument"


def test_200_mib_upload_and_download_by_sha256(api, sandbox, tmp_path):
    size = 200 * MiB
    src = tmp_path / "big.bin"
    want = hashlib.sha256()
    with open(src, "wb") as f:
        block = os.urandom(MiB)
        for i in range(size // MiB):
            chunk = i.to_bytes(8, "little") + block[8:]  # every MiB different
            want.update(chunk)
            f.write(chunk)
    with open(src, "rb") as f:
        res = api.ok("PUT", files(sandbox, "/work/big.bin"), raw=f, expect=(201,), timeout=600)
    src.unlink()
    assert res["size"] == size

    inside = api.exec(sandbox, ["sha256sum", "/work/big.bin"], timeout=600)
    assert inside["stdout"].split()[0] == want.hexdigest()

    got = hashlib.sha256()
    n = 0
    conn = api.connection(timeout=600)
    try:
        conn.request("GET", files(sandbox, "/work/big.bin"))
        resp = conn.getresponse()
        assert resp.status == 200
        while True:
            chunk = resp.read(MiB)
            if not chunk:
                break
            n += len(chunk)
            got.update(chunk)
    finally:
        conn.close()
    assert n == size
    assert got.hexdigest() == want.hexdigest()


def test_mkdir_makes_parents_and_tolerates_existing(api, sandbox):
    for _ in range(2):
        status, _ = api.json("POST", f"/v1/sandboxes/{sandbox}/files/mkdir", {"path": "/work/a/b/c"})
        assert status == 201
    status, st = stat(api, sandbox, "/work/a/b/c")
    assert status == 200
    assert (st["name"], st["path"], st["type"]) == ("c", "/work/a/b/c", "dir")
    assert api.exec(sandbox, ["test", "-d", "/work/a/b/c"])["exit_code"] == 0


def test_put_creates_parent_directories(api, sandbox):
    put(api, sandbox, "/work/deep/er/file.txt", b"x")
    assert api.exec(sandbox, ["cat", "/work/deep/er/file.txt"])["stdout"] == "x"


def test_stat_of_a_file(api, sandbox):
    put(api, sandbox, "/work/s/f.txt", b"hello")
    status, st = stat(api, sandbox, "/work/s/f.txt")
    assert status == 200
    assert st["name"] == "f.txt" and st["path"] == "/work/s/f.txt"
    assert st["type"] == "file" and st["size"] == 5 and st["mode"] == "0644"
    assert st["mtime"].endswith("Z")


def test_list_is_sorted_and_typed(api, sandbox):
    for name in ("zeta.txt", "alpha.txt", "mid.txt"):
        put(api, sandbox, f"/work/l/{name}", name.encode())
    api.json("POST", f"/v1/sandboxes/{sandbox}/files/mkdir", {"path": "/work/l/beta"})
    api.exec(sandbox, ["ln", "-s", "alpha.txt", "/work/l/link"])
    status, body = api.json("GET", files(sandbox, "/work/l", "/list"))
    assert status == 200
    entries = body["entries"]
    assert [e["name"] for e in entries] == ["alpha.txt", "beta", "link", "mid.txt", "zeta.txt"]
    types = {e["name"]: e["type"] for e in entries}
    assert types == {"alpha.txt": "file", "beta": "dir", "link": "symlink", "mid.txt": "file", "zeta.txt": "file"}
    sizes = {e["name"]: e["size"] for e in entries if e["type"] == "file"}
    assert sizes == {"alpha.txt": 9, "mid.txt": 7, "zeta.txt": 8}
    assert all(e["path"] == "/work/l/" + e["name"] for e in entries)


def test_rename(api, sandbox):
    put(api, sandbox, "/work/old/name.txt", b"content")
    status, _ = api.json("POST", f"/v1/sandboxes/{sandbox}/files/rename",
                         {"from": "/work/old/name.txt", "to": "/work/new.txt"})
    assert status == 204
    assert stat(api, sandbox, "/work/old/name.txt")[0] == 404
    assert get(api, sandbox, "/work/new.txt") == b"content"
    status, body = api.json("POST", f"/v1/sandboxes/{sandbox}/files/rename",
                            {"from": "/work/none", "to": "/work/other"})
    assert status == 404 and body["error"]["code"] == "not_found", (status, body)


def test_remove_file_and_whole_tree(api, sandbox):
    put(api, sandbox, "/work/t/one.txt", b"1")
    put(api, sandbox, "/work/t/sub/two.txt", b"2")
    put(api, sandbox, "/work/t/sub/deeper/three.txt", b"3")
    status, _, _ = api.request("DELETE", files(sandbox, "/work/t/one.txt"))
    assert status == 204
    assert stat(api, sandbox, "/work/t/one.txt")[0] == 404
    status, _, _ = api.request("DELETE", files(sandbox, "/work/t"))
    assert status == 204
    assert stat(api, sandbox, "/work/t")[0] == 404
    assert api.exec(sandbox, ["test", "-e", "/work/t"])["exit_code"] == 1
    names = [e["name"] for e in api.ok("GET", files(sandbox, "/work", "/list"))["entries"]]
    assert "t" not in names


def test_missing_paths_and_directories(api, sandbox):
    for method, tail in (("GET", ""), ("GET", "/stat"), ("GET", "/list"), ("DELETE", "")):
        status, body = api.json(method, files(sandbox, "/work/no/such/thing", tail))
        assert status == 404 and body["error"]["code"] == "not_found", (method, tail, status, body)
    status, body = api.json("GET", files(sandbox, "/work"))
    assert status == 400 and body["error"]["code"] == "invalid_argument", (status, body)


def test_entries_name_owners_link_targets_and_sub_second_times(api, sandbox):
    api.exec(sandbox, ["sh", "-c", "mkdir -p /work/o && echo x > /work/o/f && ln -s ../o/f /work/o/l && "
                       "chown 1000:1000 /work/o/f && touch -d '2026-01-02 03:04:05.123456789 UTC' /work/o/f && "
                       "touch /work/o/n && chown 4242:4343 /work/o/n"])
    status, st = stat(api, sandbox, "/work/o/f")
    assert status == 200
    assert (st["owner"], st["group"], st["uid"], st["gid"]) == ("user", "user", 1000, 1000)
    assert st["mtime"] == "2026-01-02T03:04:05.123456789Z"
    assert "symlink_target" not in st
    status, link = stat(api, sandbox, "/work/o/l")
    assert (link["type"], link["symlink_target"], link["owner"], link["group"]) == ("symlink", "../o/f", "root", "root")
    entries = {e["name"]: e for e in api.ok("GET", files(sandbox, "/work/o", "/list"))["entries"]}
    assert entries["l"]["symlink_target"] == "../o/f" and entries["l"]["path"] == "/work/o/l"
    assert entries["f"]["owner"] == "user" and entries["f"]["mtime"] == st["mtime"]
    # ids the sandbox has no name for show as numbers
    assert (entries["n"]["owner"], entries["n"]["group"]) == ("4242", "4343")


def test_files_written_as_a_user_are_its_own_and_relative_paths_start_at_its_home(api, sandbox):
    res = api.ok("PUT", files(sandbox, "new/dir/a.txt") + "&user=user", raw=b"mine", expect=(201,))
    assert res == {"path": "/home/user/new/dir/a.txt", "size": 4}
    out = api.exec(sandbox, ["stat", "-c", "%U:%G %a %n", "/home/user/new", "/home/user/new/dir",
                             "/home/user/new/dir/a.txt"])["stdout"].splitlines()
    assert out == ["user:user 755 /home/user/new", "user:user 755 /home/user/new/dir",
                   "user:user 644 /home/user/new/dir/a.txt"]
    status, st = api.json("GET", files(sandbox, "new/dir/a.txt", "/stat") + "&user=user")
    assert (status, st["path"], st["owner"]) == (200, "/home/user/new/dir/a.txt", "user")
    body = api.ok("GET", files(sandbox, "new", "/list") + "&user=1000")
    assert [e["path"] for e in body["entries"]] == ["/home/user/new/dir"]
    status, made = api.json("POST", f"/v1/sandboxes/{sandbox}/files/mkdir", {"path": "m/n", "user": "user"})
    assert (status, made) == (201, {"path": "/home/user/m/n"})
    status, _ = api.json("POST", f"/v1/sandboxes/{sandbox}/files/rename",
                         {"from": "m", "to": "/tmp/m-moved", "user": "1000:1000"})
    assert status == 204
    assert api.exec(sandbox, ["stat", "-c", "%U", "/tmp/m-moved/n"])["stdout"] == "user\n"
    status, _, _ = api.request("DELETE", files(sandbox, "new") + "&user=user")
    assert status == 204
    assert api.exec(sandbox, ["test", "-e", "/home/user/new"])["exit_code"] == 1
    # without a user a relative path is taken from /work, and the file is root's
    assert put(api, sandbox, "rel.txt", b"r") == {"path": "/work/rel.txt", "size": 1}
    assert api.exec(sandbox, ["stat", "-c", "%U", "/work/rel.txt"])["stdout"] == "root\n"


def test_a_user_meets_the_permissions_it_would_meet_inside(api, sandbox):
    put(api, sandbox, "/work/secret", b"root only", mode="0600")
    for method, url, body in (("GET", files(sandbox, "/work/secret") + "&user=user", None),
                              ("PUT", files(sandbox, "/work/by-user.txt") + "&user=user", None),
                              ("DELETE", files(sandbox, "/work/secret") + "&user=user", None),
                              ("POST", f"/v1/sandboxes/{sandbox}/files/mkdir", {"path": "/work/x", "user": "user"})):
        status, answer = api.json(method, url, body)
        assert status == 403 and answer["error"]["code"] == "permission_denied", (method, url, status, answer)
    assert get(api, sandbox, "/work/secret") == b"root only"
    assert api.exec(sandbox, ["ls", "/work/by-user.txt", "/work/x"])["exit_code"] != 0


def test_an_unknown_or_malformed_user_is_a_clear_400(api, sandbox):
    for user in ("nobody-by-this-name", "31337", "1:4294967295", "x" * 256):
        status, body = api.json("GET", files(sandbox, "/tmp", "/stat") + f"&user={q(user)}")
        assert status == 400 and body["error"]["code"] == "invalid_argument", (user, status, body)
        assert "user" in body["error"]["message"], body
    # 255 bytes is still a name to look up (and there is none)
    status, body = api.json("GET", files(sandbox, "/tmp", "/stat") + f"&user={'x' * 255}")
    assert status == 400 and "no such user" in body["error"]["message"], body
    status, body = api.json("POST", f"/v1/sandboxes/{sandbox}/files/mkdir", {"path": "/tmp/u", "user": ""})
    assert status == 400, body


def test_the_default_template_has_the_user_account(api, sandbox):
    r = api.exec(sandbox, ["sh", "-c", "getent passwd user; id user; stat -c '%U:%G %a' /home/user"])
    assert r["stdout"] == ("user:x:1000:1000::/home/user:/bin/bash\n"
                           "uid=1000(user) gid=1000(user) groups=1000(user)\nuser:user 755\n"), r
    assert api.exec(sandbox, ["stat", "-c", "%U %a", "/work"])["stdout"] == "root 755\n"


def test_a_command_with_a_user_starts_in_its_home(api, sandbox):
    r = api.exec(sandbox, ["sh", "-c", "id -un; pwd"], user="user")
    assert r["stdout"] == "user\n/home/user\n"
    assert api.exec(sandbox, ["pwd"])["stdout"] == "/work\n"
    assert api.exec(sandbox, ["pwd"], user="user", cwd="/tmp")["stdout"] == "/tmp\n"
    # a relative cwd starts at the user's home, or at /work without a user
    api.exec(sandbox, ["mkdir", "-p", "/home/user/sub", "/work/sub"])
    assert api.exec(sandbox, ["pwd"], user="user", cwd="sub")["stdout"] == "/home/user/sub\n"
    assert api.exec(sandbox, ["pwd"], cwd="sub")["stdout"] == "/work/sub\n"
    # nobody's home does not exist: it starts in /work
    assert api.exec(sandbox, ["pwd"], user="nobody")["stdout"] == "/work\n"

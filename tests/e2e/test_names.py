"""Names inside a sandbox: localhost and the sandbox's own host name resolve as on a Debian
machine (/etc/hosts, /etc/hostname), a server on `localhost` is reachable, and a fork or a
create from a snapshot answers to its own name, not its source's, keeping what the source
wrote to /etc/hosts."""
import json

# What a program sees of its names: the kernel's host name, the files, and what the C
# library's resolver (files, as nsswitch.conf says) answers, for a server on `localhost`.
NAMES = r"""
import json, socket, subprocess, threading
name = socket.gethostname()
def addrs(host, family=0):
    try:
        return sorted({a[4][0] for a in socket.getaddrinfo(host, 80, family, socket.SOCK_STREAM)})
    except OSError as e:
        return str(e)
srv = socket.create_server(("localhost", 0))
port = srv.getsockname()[1]
threading.Thread(target=lambda: srv.accept()[0].sendall(b"hi"), daemon=True).start()
with socket.create_connection(("localhost", port), timeout=10) as c:
    got = c.recv(2).decode()
print(json.dumps({"name": name, "hostname_file": open("/etc/hostname").read(),
                  "localhost4": addrs("localhost", socket.AF_INET),
                  "localhost6": addrs("localhost", socket.AF_INET6),
                  "own": addrs(name),
                  "getent": subprocess.run(["getent", "hosts", "localhost"], capture_output=True, text=True).stdout,
                  "served": got}))
"""


def names(api, sbid):
    res = api.exec(sbid, ["python3", "-c", NAMES])
    assert res["exit_code"] == 0, res
    return json.loads(res["stdout"])


def assert_named(api, sbid):
    got = names(api, sbid)
    assert got["name"] == sbid, got
    assert got["hostname_file"] == sbid + "\n", got
    assert got["localhost4"] == ["127.0.0.1"], got
    assert got["localhost6"] == ["::1"], got
    assert got["own"] == ["127.0.1.1"], got
    # as on Debian, getent answers with the IPv6 line when there is one
    assert got["getent"].split()[0] in ("127.0.0.1", "::1") and "localhost" in got["getent"].split()[1:], got
    assert got["served"] == "hi", got
    return got


def test_localhost_and_the_sandboxs_own_name_resolve(api, sandbox):
    assert_named(api, sandbox)
    hosts = api.exec(sandbox, ["cat", "/etc/hosts"])["stdout"]
    assert hosts.count(sandbox) == 1, hosts


def test_a_fork_and_a_clone_answer_to_their_own_names_and_keep_the_sources_lines(api, sandbox):
    api.exec(sandbox, "echo '192.0.2.10 db.test' >> /etc/hosts")
    forks = [s["id"] for s in api.ok("POST", f"/v1/sandboxes/{sandbox}/fork", {"count": 1},
                                     expect=(201,))["sandboxes"]]
    snap = api.ok("POST", f"/v1/sandboxes/{sandbox}/snapshot", {}, expect=(201,))
    made = list(forks)
    try:
        made.append(api.ok("POST", "/v1/sandboxes", {"snapshot": snap["id"]}, expect=(201,))["id"])
        for sbid in made:
            assert_named(api, sbid)
            hosts = api.exec(sbid, ["cat", "/etc/hosts"])["stdout"]
            assert sandbox not in hosts, hosts  # the source's name is gone
            assert "192.0.2.10 db.test\n" in hosts, hosts  # what it wrote stays
            assert api.exec(sbid, ["getent", "hosts", "db.test"])["stdout"].split() == ["192.0.2.10", "db.test"]
        assert_named(api, sandbox)  # the source keeps its own
    finally:
        for sbid in made:
            api.delete(sbid)
        api.ok("DELETE", f"/v1/snapshots/{snap['id']}", expect=(204,))


def test_the_name_survives_suspend_and_resume(api, sandbox):
    api.ok("POST", f"/v1/sandboxes/{sandbox}/suspend", expect=(200,))
    api.ok("POST", f"/v1/sandboxes/{sandbox}/resume", expect=(200,))
    assert_named(api, sandbox)

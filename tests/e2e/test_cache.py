"""The machine's cache kept in bounds: `space system df`, `space system prune`, GET
/v1/system/df, POST /v1/system/prune and spaced --cache-max-mb (docs/cache.md).

Each test runs its own spaced on a cache folder of its own, filled with Dockerfile step roots
by builds FROM scratch (COPY only: no sandbox, no download), so a prune here never touches the
machine's cache that the other tests share. That folder starts with hard links to the default
template's files in the machine's cache (`cache` below), or each spaced would build the default
template again before it listens.
"""

import fcntl
import hashlib
import os
import subprocess

import pytest

from conftest import SPACED, Cli
from spacetest import Api, free_port, wait_until
from test_build import build, done, steps

KIB = 1024
MACHINE_CACHE = "/var/cache/space"  # spaced's default --cache-dir, which the session's spaced uses


@pytest.fixture
def cache(api, tmp_path):
    """A cache folder of the test's own, with the default template's files linked in from the
    machine's cache (spaced reads a template's files only; nothing here writes them)."""
    key = api.ok("GET", "/v1/templates/default")["key"]
    mine = tmp_path / "cache"
    os.makedirs(mine / "templates")
    subprocess.run(["cp", "-al", f"{MACHINE_CACHE}/templates/{key}", str(mine / "templates" / key)], check=True,
                   timeout=600)
    return mine


def context(name, size):
    """A build context FROM scratch whose one COPY step writes size bytes of its own, the same
    bytes every time for the same name (so a build again can find its step in the cache)."""
    data = b"".join(hashlib.sha256(f"{name}{i}".encode()).digest() for i in range(size // 64))
    return {"Dockerfile": f"FROM scratch\nCOPY {name}.bin /\n", f"{name}.bin": data.hex()}


def build_ok(api, name, size=256 * KIB):
    status, events = build(api, name, context(name, size))
    assert status == 200, events
    done(events)
    return events


def copy_cached(api, name, size=256 * KIB):
    """Whether a build of name's context again finds its COPY step in the cache."""
    status, events = build(api, name, context(name, size))
    assert status == 200, events
    return [cached for text, cached in steps(events) if text.startswith("COPY")][0]


def build_kind(api):
    status, body = api.json("GET", "/v1/system/df")
    assert status == 200, body
    return next(k for k in body["kinds"] if k["kind"] == "build")


def prune(api, keep):
    status, body = api.json("POST", "/v1/system/prune", {"keep_bytes": keep})
    assert status == 200, body
    return body


def test_a_prune_removes_the_least_recently_used_step_roots_down_to_what_it_keeps(make_daemon, cache):
    d = make_daemon(args=["--cache-dir", str(cache), "--cache-max-mb", "0"])
    api = d.api
    for name in ("a", "b", "c"):
        build_ok(api, name)
    kind = build_kind(api)
    # the empty root FROM scratch starts from, and one root a COPY step
    assert kind["entries"] == 4 and kind["prunable"] and kind["in_use"] == 0, kind
    assert kind["bytes"] >= 3 * 256 * KIB and kind["reclaimable"] == kind["bytes"], kind

    # at the edge: what is there is what is kept, and nothing goes
    body = prune(api, kind["bytes"])
    assert body["removed"] == 0 and body["kept_bytes"] == kind["bytes"], body
    # a byte under it: the least recently used root goes (a's step; FROM scratch's root was
    # used again by b and c), and only that one
    body = prune(api, kind["bytes"] - 1)
    assert body["removed"] == 1 and body["freed_bytes"] >= 256 * KIB, body
    assert build_kind(api)["entries"] == 3
    assert not copy_cached(api, "a")  # made again
    assert copy_cached(api, "b") and copy_cached(api, "c")

    # a template keeps its own files when the step roots it was made from are gone
    body = prune(api, 0)
    assert body["removed"] == 4 and body["kept_bytes"] == 0, body
    assert build_kind(api)["entries"] == 0
    status, tpl = api.json("GET", "/v1/templates/b")
    assert status == 200, tpl
    rootfs = cache / "templates" / tpl["key"] / "rootfs"
    assert (rootfs / "b.bin").stat().st_size == 256 * KIB


def test_an_entry_in_use_is_never_pruned(make_daemon, cache):
    d = make_daemon(args=["--cache-dir", str(cache), "--cache-max-mb", "0"])
    build_ok(d.api, "a")
    build_ok(d.api, "b")
    roots = sorted(p for p in (cache / "build").iterdir() if "." not in p.name)
    held = roots[0]
    with open(f"{held}.lock") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)  # as a build that reads it holds it (cache.h)
        assert build_kind(d.api)["in_use"] == 1
        body = prune(d.api, 0)
        assert body["busy"] == 1 and body["removed"] == len(roots) - 1, body
        assert held.exists() and [p for p in roots if p.exists()] == [held]
    body = prune(d.api, 0)
    assert body["removed"] == 1 and not held.exists(), body


def test_spaced_keeps_the_cache_under_its_bound(make_daemon, cache):
    """--cache-max-mb 1: after each build, the step roots least recently used go until what is
    left fits in 1 MiB."""
    d = make_daemon(args=["--cache-dir", str(cache), "--cache-max-mb", "1"])
    for name in ("a", "b", "c", "d"):
        build_ok(d.api, name, size=400 * KIB)
        wait_until(lambda: build_kind(d.api)["bytes"] <= 1 << 20, 60, "the cache back under its bound")
    assert build_kind(d.api)["entries"] >= 2
    assert copy_cached(d.api, "d", size=400 * KIB)
    assert not copy_cached(d.api, "a", size=400 * KIB)


def test_the_cache_is_the_operators(make_daemon, cache):
    port = free_port()
    d = make_daemon(listen=f"127.0.0.1:{port}", args=["--cache-dir", str(cache)])
    tenant = Api(tcp=("127.0.0.1", port), token=d.token("alice"))
    for method, path in (("GET", "/v1/system/df"), ("POST", "/v1/system/prune")):
        status, body = tenant.json(method, path)
        assert status == 403 and "operator" in body["error"]["message"], (path, body)
    status, body = d.api.json("POST", "/v1/system/prune", {"keep_bytes": -1})
    assert status == 400 and "keep_bytes" in body["error"]["message"], body


def test_the_cli_shows_and_prunes_the_cache(make_daemon, cache):
    d = make_daemon(args=["--cache-dir", str(cache), "--cache-max-mb", "0"])
    build_ok(d.api, "a")
    cli = Cli(f"unix://{d.socket}")
    r = cli("system", "df")
    assert r.returncode == 0, r.stderr
    header, *rows = r.stdout.splitlines()
    assert header.split() == ["KIND", "ENTRIES", "SIZE", "RECLAIMABLE"]
    build_row = next(row.split() for row in rows if row.split()[0] == "build")
    assert build_row[1] == "2", r.stdout
    r = cli("system", "prune", "--keep-mb", "x")
    assert r.returncode != 0 and "--keep-mb" in r.stderr
    r = cli("system", "prune")
    assert r.returncode == 0 and r.stdout.startswith("removed 2 entries"), r.stdout + r.stderr
    assert build_kind(d.api)["entries"] == 0


def test_a_bound_out_of_range_is_refused_at_start(tmp_path):
    for bad in ("-1", "x", str((1 << 30) + 1)):
        r = subprocess.run([SPACED, "--state-dir", str(tmp_path), "--cache-max-mb", bad], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 2 and "--cache-max-mb wants a whole number from 0 to 1073741824" in r.stderr, r.stderr

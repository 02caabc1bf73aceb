"""Protocol-level tests of space-agent's folder watches (H_WATCH, A_EVENT; proto/agent.h).

The agent runs on the host here (see test_agent.py), watching a per-test temporary folder.
A ping after a change is the barrier: the agent reads its inotify descriptors before the
connection in each loop iteration, so events of changes made before the ping are taken (sent,
or queued) by the time its A_PONG arrives.

Run: /usr/bin/python3 -m pytest tests/agent/test_agent_watch.py
"""

import errno
import os
import re
import shutil
import struct

import pytest

from test_agent import ROOT, AgentError, P, WINDOW, agent, host  # noqa: F401 (fixtures)

EVENTS = {P["EVENT_" + n]: n.lower() for n in ("CREATE", "WRITE", "REMOVE", "RENAME", "CHMOD", "LOST")}


def _agent_limit(name):
    text = open(os.path.join(ROOT, "agent", "watch.h")).read()
    return int(re.search(r"#define %s (\d+)u" % name, text).group(1))


MAX_WATCHES = _agent_limit("AGENT_MAX_WATCHES")
MAX_FOLDERS = _agent_limit("AGENT_WATCH_FOLDERS")
QUEUE = _agent_limit("AGENT_WATCH_QUEUE")


def watch(host, path, recursive=False):
    tag = host.request("H_WATCH", struct.pack("<I", P["WATCH_RECURSIVE"] if recursive else 0) + path.encode() + b"\0")
    host.expect("A_OK", tag)
    return tag


def events(host, tag, credit=True):
    """The events that arrived for tag up to a ping's answer: [(type, name)]."""
    ping = host.request("H_PING")
    out, others = [], []
    while True:
        t, chan, p = host.next()
        if chan == ping:
            assert t == "A_PONG"
            host.pending.extend(others)
            return out
        if chan != tag:
            others.append((t, chan, p))
            continue
        if t == "A_ERROR":
            err, = struct.unpack_from("<i", p)
            raise AgentError(err, p[4:].rstrip(b"\0").decode())
        assert t == "A_EVENT", t
        typ, = struct.unpack_from("<I", p)
        out.append((EVENTS[typ], p[4:].rstrip(b"\0").decode()))
        if credit:
            host.send("H_CREDIT", tag, struct.pack("<I", len(p)))


def test_events_of_each_kind_in_order(host, agent):
    d = os.path.join(agent.tmp, "w")
    os.mkdir(d)
    tag = watch(host, d)
    f = os.path.join(d, "a.txt")
    with open(f, "w") as fh:
        fh.write("one")
    os.chmod(f, 0o600)
    os.rename(f, os.path.join(d, "b.txt"))
    os.unlink(os.path.join(d, "b.txt"))
    got = [e for e in events(host, tag)]
    assert got == [("create", "a.txt"), ("write", "a.txt"), ("chmod", "a.txt"), ("rename", "a.txt"),
                   ("create", "b.txt"), ("remove", "b.txt")]


def test_recursive_follows_new_folders_and_plain_does_not(host, agent):
    d = os.path.join(agent.tmp, "w")
    os.makedirs(os.path.join(d, "old"))
    deep = watch(host, d, recursive=True)
    flat = watch(host, d)
    os.makedirs(os.path.join(d, "new", "inner"))
    open(os.path.join(d, "new", "inner", "f"), "w").close()
    open(os.path.join(d, "old", "g"), "w").close()
    got = set(events(host, deep))
    assert {("create", "new"), ("create", "new/inner"), ("create", "new/inner/f"), ("create", "old/g")} <= got
    assert events(host, flat) == [("create", "new")]


def test_refusals(host, agent):
    f = os.path.join(agent.tmp, "file")
    open(f, "w").close()
    for path, err in ((os.path.join(agent.tmp, "missing"), errno.ENOENT), (f, errno.ENOTDIR), ("rel", errno.EINVAL)):
        with pytest.raises(AgentError) as e:
            watch(host, path)
        assert e.value.err == err


def test_watches_limit_and_abort_gives_the_slot_back(host, agent):
    tags = [watch(host, agent.tmp) for _ in range(MAX_WATCHES)]
    with pytest.raises(AgentError) as e:
        watch(host, agent.tmp)
    assert e.value.err == errno.EAGAIN
    host.send("H_ABORT", tags[0])
    watch(host, agent.tmp)


def test_folders_limit_at_start_and_later(host, agent):
    d = os.path.join(agent.tmp, "w")
    os.mkdir(d)
    for i in range(MAX_FOLDERS - 1):  # with d itself, exactly the limit
        os.mkdir(os.path.join(d, "%d" % i))
    tag = watch(host, d, recursive=True)
    os.mkdir(os.path.join(d, "one-more"))
    with pytest.raises(AgentError) as e:
        events(host, tag)
    assert e.value.err == errno.E2BIG
    with pytest.raises(AgentError) as e:
        watch(host, d, recursive=True)
    assert e.value.err == errno.E2BIG


def _fill(d, n):
    for i in range(n):  # 200-byte names: a window holds WINDOW // 205 events
        open(os.path.join(d, "%04d" % i + "x" * 196), "w").close()


@pytest.mark.parametrize("extra", [0, 1])
def test_queue_limit_then_lost_then_events_go_on(host, agent, extra):
    d = os.path.join(agent.tmp, "w")
    os.mkdir(d)
    tag = watch(host, d)
    per = 4 + 200 + 1
    held = WINDOW // per + QUEUE  # sent against the window, then queued
    _fill(d, held + extra)
    first = events(host, tag, credit=False)
    assert len(first) == WINDOW // per
    host.send("H_CREDIT", tag, struct.pack("<I", WINDOW))
    rest = events(host, tag)
    names = [n for t, n in first + rest if t == "create"]
    assert len(names) == held and len(set(names)) == held
    assert [t for t, _ in rest].count("lost") == extra
    if extra:
        assert rest[-1] == ("lost", "")
    open(os.path.join(d, "after"), "w").close()
    assert events(host, tag) == [("create", "after")]


def test_removing_the_folder_ends_the_watch(host, agent):
    d = os.path.join(agent.tmp, "w")
    os.mkdir(d)
    tag = watch(host, d)
    shutil.rmtree(d)
    got = []
    while True:
        t, _, p = host.next(tag)
        if t == "A_END":
            break
        assert t == "A_EVENT"
        got.append((EVENTS[struct.unpack_from("<I", p)[0]], p[4:].rstrip(b"\0").decode()))
    assert got[-1] == ("remove", "")


def test_watches_end_with_the_connection(agent):
    for _ in range(MAX_WATCHES):
        watch(agent.host, agent.tmp)
    host = agent.reconnect()
    for _ in range(MAX_WATCHES):
        watch(host, agent.tmp)

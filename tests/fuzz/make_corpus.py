#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into tests/fuzz/corpus/<target>/.

Seeds are small valid inputs that reach deep into each parser; libFuzzer
mutates from there. The files are checked in; this script documents how they
were made and remakes them (it only writes files named seed-*, so regression
inputs kept beside them, named crash-* or regress-*, are left alone).

Run: python3 tests/fuzz/make_corpus.py
"""

import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
REQ = 0x80000000

# proto/agent.h
H = dict(PING=1, EXEC=2, STDIN=3, SIGNAL=4, CREDIT=5, PS=6, FREAD=7, FWRITE=8, DATA=9, END=10, STAT=11,
         LIST=12, MKDIR=13, REMOVE=14, RENAME=15, SYNC=16, DETACH=17, ABORT=18)
A = dict(HELLO=64, PONG=65, STARTED=66, STDOUT=67, STDERR=68, EXIT=69, ERROR=70, OK=71, CREDIT=72, PROC=73,
         STAT=74, DATA=75, END=76)


def frame(t, chan, payload=b""):
    return struct.pack("<IBBHI", len(payload), t, 0, 0, chan) + payload


def z(*strings):
    return b"".join(s.encode() + b"\0" for s in strings)


def h_exec(tag, argv, env=(), user="", cwd="", flags=0, uid=0, timeout_ms=0):
    fixed = struct.pack("<IIIIII", flags, uid, 0, timeout_ms, len(argv), len(env))
    return frame(H["EXEC"], tag, fixed + z(user, cwd, *argv, *env))


def a_stat(tag, name, size=3, typ=1, mode=0o644):
    return frame(A["STAT"], tag, struct.pack("<QqIIII", size, 1700000000, mode, typ, 0, 0) + z(name))


def a_stat_ext(tag, name, owner, group, target, path, nsec=123456789, typ=1):
    """An A_STAT with struct sp_stat_ext: nanoseconds, owner, group, link target, path."""
    return frame(A["STAT"], tag, struct.pack("<QqIIII", 3, 1700000000, 0o644, typ, 1000, 1000) + z(name)
                 + struct.pack("<II", nsec, 0) + z(owner, group, target, path))


def a_proc(tag, pid, cmd, exited=False, code=0):
    return frame(A["PROC"], tag, struct.pack("<IIiiQ", pid, 1 if exited else 0, code, 0, 1700000000000) + z(cmd))


def a_exit(pid, code=0, signo=0, flags=0):
    return frame(A["EXIT"], pid, struct.pack("<iiII", code, signo, flags, 0))


def a_error(tag, err, msg):
    return frame(A["ERROR"], tag, struct.pack("<i", err) + z(msg))


def credit(t, chan, n):
    return frame(t, chan, struct.pack("<I", n))


SEEDS = {
    "frame": {
        "stream": frame(H["PING"], REQ | 1) + h_exec(REQ | 2, ["echo", "hi"]) + frame(A["STDOUT"], 7, b"hello\n")
        + a_exit(7),
        "partial": frame(A["STDOUT"], 7, b"hello")[:14],
        "strings": frame(H["RENAME"], REQ | 3, z("/a", "/b")) + a_error(REQ | 3, 2, "no such file"),
    },
    "agent_frames": {
        "ping": frame(H["PING"], REQ | 1),
        "exec": h_exec(REQ | 2, ["echo", "hi"], ["A=1"], flags=1, timeout_ms=5000)
        + frame(H["STDIN"], 0x40000000, b"input\n") + frame(H["STDIN"], 0x40000000)
        + credit(H["CREDIT"], 0x40000000, 4096) + frame(H["SIGNAL"], 0x40000000, struct.pack("<I", 15))
        + frame(H["PS"], REQ | 3),
        "exec-user": h_exec(REQ | 4, ["id"], user="nobody", uid=0xFFFFFFFF, cwd="/tmp")
        + h_exec(REQ | 5, ["true"], env=["PATH=/bin"] * 3),
        "download": frame(H["FREAD"], REQ | 6, z("/work/a.txt")) + credit(H["CREDIT"], REQ | 6, 1 << 20),
        "upload": frame(H["FWRITE"], REQ | 7, struct.pack("<II", 0o600, 0) + z("/work/up.bin"))
        + frame(H["DATA"], REQ | 7, b"x" * 100) + frame(H["END"], REQ | 7),
        "append": frame(H["FWRITE"], REQ | 8, struct.pack("<II", 0, 1) + z("/work/log.txt"))
        + frame(H["DATA"], REQ | 8, b"line\n") + frame(H["ABORT"], REQ | 8),
        "files": frame(H["STAT"], REQ | 9, z("/etc/passwd")) + frame(H["LIST"], REQ | 10, z("/work"))
        + frame(H["MKDIR"], REQ | 11, struct.pack("<I", 0o755) + z("/work/a/b/c"))
        + frame(H["REMOVE"], REQ | 12, z("/work/a")) + frame(H["RENAME"], REQ | 13, z("/work/x", "/work/y"))
        + frame(H["SYNC"], REQ | 14),
        "files-user": frame(H["STAT"], REQ | 9, z("notes", "user")) + frame(H["LIST"], REQ | 10, z(".", "1000:1000"))
        + frame(H["MKDIR"], REQ | 11, struct.pack("<I", 0o755) + z("a/b", "no-such-user"))
        + frame(H["RENAME"], REQ | 13, z("x", "/tmp/y", "4294967295:0")),
        "odd": frame(99, REQ | 15) + frame(99, 3) + frame(H["ABORT"], REQ | 16) + frame(H["DETACH"], 0),
    },
    "daemon_frames": {
        # tags of the waiting requests: 1 capture exec, 2 stream exec, 3 background start,
        # 4 listing, 5 stat, 6 download, 7 upload; process 100 has a reader, 101 waiters
        "hello": frame(A["HELLO"], 0, struct.pack("<IIQ", 1, 101, 7)) + a_proc(REQ, 100, "sleep 9")
        + a_proc(REQ, 55, "true", exited=True) + frame(A["END"], REQ),
        "exec": frame(A["STARTED"], REQ | 1, struct.pack("<I", 200)) + frame(A["STDOUT"], 200, b"hi\n")
        + frame(A["STDERR"], 200, b"\xff\xfe") + a_exit(200, 3),
        "stream": frame(A["STARTED"], REQ | 2, struct.pack("<I", 201)) + frame(A["STDOUT"], 201, "é".encode()[:1])
        + frame(A["STDOUT"], 201, "é".encode()[1:] + b"\n") + frame(A["STDERR"], 201, b"\0" * 40)
        + a_exit(201, 137, 9, 1),
        "background": frame(A["STARTED"], REQ | 3, struct.pack("<I", 202)) + frame(A["STDOUT"], 202, b"bg"),
        "files": a_stat(REQ | 4, "a.txt") + a_stat(REQ | 4, "dir", typ=2) + frame(A["END"], REQ | 4)
        + a_stat(REQ | 5, "a.txt", size=10) + a_stat(REQ | 6, "big.bin", size=5) + frame(A["DATA"], REQ | 6, b"12345")
        + frame(A["END"], REQ | 6) + frame(A["OK"], REQ | 7) + credit(A["CREDIT"], REQ | 7, 4096)
        + frame(A["END"], REQ | 7),
        "files-ext": a_stat_ext(REQ | 4, "l", "user", "user", "../t", "/work/l", typ=3)
        + a_stat_ext(REQ | 4, "m", "", "", "", "/work/m", nsec=10**9) + frame(A["END"], REQ | 4)
        + a_stat_ext(REQ | 5, "a.txt", "root", "root", "", "/home/user/a.txt")
        + frame(A["OK"], REQ | 7, z("/home/user/up.bin")),
        "errors": a_error(REQ | 1, 2, "exec nope: No such file or directory") + a_error(REQ | 3, 11, "too many")
        + a_error(REQ | 5, 13, ""),
        "procs": frame(A["STDOUT"], 100, b"out") + credit(A["CREDIT"], 101, 10) + a_exit(101, 0)
        + a_exit(100, 1) + frame(A["PONG"], REQ | 9),
        "bad": frame(A["STDOUT"], 100, b"x") + b"\xff\xff\xff\xff" + b"\0" * 8,
    },
    "api_route": {
        "exec": b"\x01/v1/sandboxes/0123456789ab/exec\n/work/a.txt",
        "files": b"\x02/v1/sandboxes/0123456789ab/files\n/../../etc/shadow",
        "proc": b"\x00/v1/sandboxes/0123456789ab/processes/12/output\n/",
        "snap": b"\x03/v1/snapshots/s-0123456789\n/a\0b",
        "health": b"\x00/v1/health/\n" + b"/" + b"a" * 4096,
        "metrics": b"\x00/v1/sandboxes/0123456789ab/metrics\n/",
    },
    "api_body": {
        "create": b"\x00\x00" + json.dumps({"template": "default", "cpus": 2, "memory_mb": 256, "env": {"A": "1"},
                                             "metadata": {"u": "x"}, "timeout": 30, "lifetime": 60,
                                             "timeout_action": "kill", "keepalive_processes": True}).encode(),
        "exec-argv": b"\x01\x00" + json.dumps({"cmd": ["ls", "-l"], "env": {"K": "V"}, "cwd": "/work",
                                               "timeout": 1.5, "user": "nobody"}).encode(),
        "exec-shell": b"\x01\x00" + json.dumps({"cmd": "echo hi", "stdin": "input", "stream": True}).encode(),
        "exec-b64": b"\x01\x00" + json.dumps({"cmd": ["cat"], "stdin_b64": "aGVsbG8="}).encode(),
        "start": b"\x02\x00" + json.dumps({"cmd": ["sleep", "9"], "stdin_open": True}).encode(),
        "signal": b"\x03\x02" + json.dumps({"signal": "TERM"}).encode(),
        "mkdir": b"\x04\x00" + json.dumps({"path": "/work/a/b"}).encode(),
        "rename": b"\x05\x00" + json.dumps({"from": "/work/a", "to": "/work/b"}).encode(),
        "resume": b"\x06\x00" + json.dumps({"timeout": 10}).encode(),
        "snapshot": b"\x07\x00" + json.dumps({"name": "snap"}).encode(),
        "fork": b"\x08\x01" + json.dumps({"count": 3}).encode(),
    },
    "codec": {
        "ascii": b"hello world\n",
        "utf8": "héllo wörld ✓ 😀\n".encode(),
        "split": "😀".encode()[:3],
        "control": b"\x00\x01\x1b[31mred\x7f\t\r\n\"\\",
        "b64": b"aGVsbG8gd29ybGQ=",
        "binary": bytes(range(256)),
    },
    # the first byte: how many "NAME=VALUE" build-argument lines follow (mod 4), bit 2 a base
    # environment; then the Dockerfile
    "dockerfile": {
        "python": b"\x01VERSION=3.12\n" + b"""# syntax=docker/dockerfile:1
ARG VERSION=3.11
FROM space:python:${VERSION}
ARG VERSION
ENV APP_HOME=/srv/app PATH="/srv/app/bin:$PATH" \\
    LANG=C.UTF-8
WORKDIR $APP_HOME
COPY --chown=app:app requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt && \\
    # a comment inside
    rm -rf /root/.cache
COPY --chmod=755 ["bin/serve", "bin/"]
USER app
LABEL space.start="serve --port 8000" space.ready='curl -fs localhost:8000/health' version=${VERSION:-dev}
""",
        "image": b"\x04" + b"""ARG REG=ghcr.io
FROM ${REG}/org/app:1.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
ENV A=${UNSET:-${PATH:+set}} B=${A-x} C='lit $A' D=\\$A
RUN ["/bin/sh", "-c", "echo \\"$A\\" \\u00e9"]
RUN [[ -f /x ]] || echo no
ADD site.tar.gz /var/www/
WORKDIR ../x/./y
USER 1000:1000
""",
        "escape": b"\x00" + b"""# escape=`
FROM scratch
COPY a\\b c:\\dest\\
RUN dir c:\\ `
    && echo done
ENV X="q `" `$"
ENV LEG legacy value
""",
        "bad": b"\x02A=1\nB\n" + b"""FROM debian
EXPOSE 80
CMD ["x"]
COPY ../etc /
ADD https://example.com/x /
ENV A=${B
""",
        "default": b"\x00" + b"""RUN apt-get update
LABEL maintainer="me" space.start=./run
COPY . /work/
""",
    },
    # a connection's bytes, the first byte the size of the pieces a body is read in, less one
    "proxy_http": {
        "keep-alive": b"\x07GET /a?space_token=0123&x=1 HTTP/1.1\r\nHost: 8000-0123456789ab.localhost:18080\r\n"
                      b"X-Space-Token: 0123\r\nCookie: a=1; space_token=0123; b=2\r\n\r\n"
                      b"POST /b HTTP/1.1\r\nHost: 8000-0123456789ab.localhost\r\nContent-Length: 5\r\n\r\nhello"
                      b"GET //evil.tld/?space_token=1 HTTP/1.1\r\nHost: x\r\n\r\n",
        "chunked": b"\x02POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                   b"3;e=1\r\nabc\r\nA\r\n0123456789\r\n0\r\n\r\nGET / HTTP/1.0\r\n\r\n",
        "upgrade": b"\x00HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
    },
    # even first byte: a path (and a metadata filter); odd: "PATTERN\nPATH"
    "e2b_route": {
        "sandbox": b"\x00/sandboxes/0123abcd/timeout",
        "rest": b"\x00/sandboxes/0123abcd/a//b/",
        "build": b"\x00/v2/templates/t1/builds/b2",
        "files": b"\x00/templates/tpl/files/0a1b2c",
        "process": b"\x00/process.Process/Start",
        "metadata": b"\x00user%2520name=a%2526b%253Dc&k+1=%25zz&x",
        "pattern": b"\x01/a/{x}/{y*}\n/a/b/c/d",
        "bad-pattern": b"\x01/{a}/{b}/{c}/{d*\n/1/2/3/4",
    },
}


def main():
    for target, seeds in SEEDS.items():
        d = os.path.join(HERE, "corpus", target)
        os.makedirs(d, exist_ok=True)
        for name in os.listdir(d):
            if name.startswith("seed-"):
                os.unlink(os.path.join(d, name))
        for name, data in seeds.items():
            with open(os.path.join(d, "seed-" + name), "wb") as f:
                f.write(data)
    print("wrote", sum(len(s) for s in SEEDS.values()), "seeds")


if __name__ == "__main__":
    main()

"""The output policy of a process ("output": "block" or "drop") while readers are connected and
while none is: a connected reader, however slow, gets every byte in order under either policy
(the process waits for the slowest connected reader); only while no reader is connected does
"drop" discard output, keeping its last PROC_DROP_KEEP bytes and counting the rest for the next
reader's `dropped` event.

The slow readers here read their stream in small pieces and pause now and then, starting before
their first read: the pauses are the reader's pace, not a wait for something to happen. Output
is a run of numbered lines, so what arrives is compared exactly with what was printed.
"""

import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import IO_TIMEOUT, collect, event_bytes

PROC_DROP_KEEP = 64 * 1024
SP_WINDOW = 256 * 1024
LINE = 10  # bytes of one numbered line: nine digits and a newline

# Prints argv[1] numbered lines once it reads a line (so a reader can join first) when argv[2]
# is "wait", else at once.
NUMBERS = r"""
import sys
n = int(sys.argv[1])
if sys.argv[2] == "wait":
    sys.stdin.readline()
out = sys.stdout.buffer
i = 0
while i < n:
    k = min(n - i, 4096)
    out.write(b"".join(b"%09d\n" % j for j in range(i, i + k)))
    i += k
out.flush()
"""


def numbers(lines):
    return b"".join(b"%09d\n" % j for j in range(lines))


def proc_path(sbid, pid, tail=""):
    return f"/v1/sandboxes/{sbid}/processes/{pid}{tail}"


def start(api, sbid, lines, output, wait=True):
    body = {"cmd": ["python3", "-c", NUMBERS, str(lines), "wait" if wait else "now"], "output": output,
            "stdin_open": True}
    return api.ok("POST", f"/v1/sandboxes/{sbid}/processes", body, expect=(201,))["pid"]


def open_reader(api, sbid, pid):
    s = api.stream("GET", proc_path(sbid, pid, "/output"))
    assert s.status == 200, s.body
    return s


def read_slowly(stream, chunk, pause_every, pause, stop_after=None):
    """Reads stream's NDJSON in reads of at most `chunk` bytes, pausing `pause` seconds before the
    first read and after every `pause_every` bytes. Stops at the end of the stream, or once
    `stop_after` output bytes came. Returns (stdout bytes, the events other than output)."""
    out, others, partial, since = bytearray(), [], b"", pause_every
    while stop_after is None or len(out) < stop_after:
        if since >= pause_every:
            time.sleep(pause)
            since = 0
        data = stream.resp.read1(chunk)
        if not data:
            assert not partial.strip(), f"the stream ended inside a line: {partial[:200]!r}"
            break
        since += len(data)
        *lines, partial = (partial + data).split(b"\n")
        for line in lines:
            if not line.strip():
                continue
            ev = json.loads(line)
            if ev["type"] == "stdout":
                out += event_bytes(ev)
            else:
                others.append(ev)
    return bytes(out), others


def assert_whole(out, events, lines):
    assert [e["type"] for e in events if e["type"] not in ("start", "stdout", "keepalive")] == ["exit"], \
        [e for e in events if e["type"] not in ("stdout", "keepalive")][:5]
    assert events[-1]["exit_code"] == 0, events[-1]
    want = numbers(lines)
    if out != want:
        at = next((i for i, (a, b) in enumerate(zip(out, want)) if a != b), min(len(out), len(want)))
        pytest.fail(f"{len(out)} bytes arrived of {len(want)}; they differ from byte {at} on "
                    f"(got {out[at:at + 30]!r}, want {want[at:at + 30]!r})")


# Lines, and how the reader reads them: (chunk, pause after every so many bytes, pause).
SLOW_READS = {
    "300kB": (30_000, 4096, 32 * 1024, 0.02),
    "4MiB": (4 * 1024 * 1024 // LINE, 16 * 1024, 256 * 1024, 0.02),
    "64MiB": (64 * 1024 * 1024 // LINE, 64 * 1024, 4 * 1024 * 1024, 0.05),
}


@pytest.mark.parametrize("output,size", [("drop", "300kB"), ("drop", "4MiB"), ("drop", "64MiB"), ("block", "4MiB")])
def test_a_slow_reader_gets_every_byte_in_order(api, sandbox, output, size):
    """An exec stream read slowly: the process waits for its reader, under either policy."""
    lines, chunk, every, pause = SLOW_READS[size]
    with api.exec_stream(sandbox, ["python3", "-c", NUMBERS, str(lines), "now"], output=output) as s:
        assert s.status == 200, s.body
        out, events = read_slowly(s, chunk, every, pause)
    assert_whole(out, events, lines)


def test_a_slow_reader_of_a_background_process_gets_every_byte(api, sandbox):
    lines = 2 * 1024 * 1024 // LINE
    pid = start(api, sandbox, lines, "drop")
    with open_reader(api, sandbox, pid) as s:
        api.ok("POST", proc_path(sandbox, pid, "/stdin"), raw=b"go\n", expect=(204,))
        out, events = read_slowly(s, 8192, 128 * 1024, 0.02)
    assert_whole(out, events, lines)


def test_a_drop_process_waits_for_a_connected_reader_that_takes_nothing(api, sandbox):
    """A reader that is connected but reads nothing holds the process back as under "block";
    once it reads, it gets all of it."""
    lines = 16 * SP_WINDOW // LINE  # far past every buffer on the way
    pid = start(api, sandbox, lines, "drop")
    with open_reader(api, sandbox, pid) as s:
        api.ok("POST", proc_path(sandbox, pid, "/stdin"), raw=b"go\n", expect=(204,))
        held = api.ok("GET", proc_path(sandbox, pid, "/wait?timeout=1"))
        assert (held["state"], held["output"], held["readers"]) == ("running", "drop", 1), held
        out, _, events = collect(s)
    assert_whole(out, events, lines)


def test_several_readers_go_at_the_pace_of_the_slowest(api, sandbox):
    """A fast reader and a slow one of one "drop" process both get every byte; neither misses
    anything for the other."""
    lines = 3 * 1024 * 1024 // LINE
    pid = start(api, sandbox, lines, "drop")
    with open_reader(api, sandbox, pid) as fast, open_reader(api, sandbox, pid) as slow:
        assert api.ok("GET", proc_path(sandbox, pid))["readers"] == 2
        api.ok("POST", proc_path(sandbox, pid, "/stdin"), raw=b"go\n", expect=(204,))
        with ThreadPoolExecutor(1) as pool:
            fast_read = pool.submit(collect, fast)
            slow_out, slow_events = read_slowly(slow, 8192, 128 * 1024, 0.02)
            fast_out, _, fast_events = fast_read.result(IO_TIMEOUT)
    assert_whole(slow_out, slow_events, lines)
    assert_whole(fast_out, fast_events, lines)


def test_a_reader_that_leaves_stops_holding_a_drop_process_back(api, sandbox):
    """A reader reads part, then disconnects: the process, read by nobody, runs to its end; the
    next reader gets a `dropped` count and the most recent output, which ends where the
    process's output ended."""
    lines = 32 * SP_WINDOW // LINE
    pid = start(api, sandbox, lines, "drop")
    s = open_reader(api, sandbox, pid)
    try:
        api.ok("POST", proc_path(sandbox, pid, "/stdin"), raw=b"go\n", expect=(204,))
        part, _ = read_slowly(s, 8192, 64 * 1024, 0.02, stop_after=SP_WINDOW)
        assert part == numbers(lines)[:len(part)], "the first reader's part is not the start of the output"
    finally:
        s.close()
    done = api.ok("GET", proc_path(sandbox, pid, f"/wait?timeout={IO_TIMEOUT}"))
    assert (done["state"], done["exit_code"]) == ("exited", 0), done
    with open_reader(api, sandbox, pid) as again:
        out, _, events = collect(again)
    assert events[0]["type"] == "dropped" and events[0]["bytes"] > 0, events[:2]
    assert 0 < len(out) <= PROC_DROP_KEEP and numbers(lines).endswith(out), len(out)
    assert [e["type"] for e in events if e["type"] not in ("stdout", "keepalive")] == ["dropped", "exit"]

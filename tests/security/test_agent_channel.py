"""A hostile process impersonating the agent on its own socket.

The agent's channel is a host Unix socket bind-mounted at /.space/sock inside
the sandbox; any process there can connect to it as root. spaced takes a new
connection in place of the current one (the agent only reconnects after its
old connection failed), so an impostor can push the real agent off and talk
to spaced itself. Everything spaced reads from that socket is therefore
untrusted input: it must survive any bytes, and the real agent must get its
channel back (it retries every 200 ms) or the sandbox fail safely.
"""

import http.client
import os
import textwrap

from conftest import wait_until, wait_usable
from conftest import gvisor_only, microvm_only, AGENT_SOCKET

# Python prelude inside the sandbox: frames of proto/agent.h.
FRAMES = textwrap.dedent("""
    import os, socket, struct, time
    SOCK = "/.space/sock/agent.sock"
    REQ = 0x80000000
    def frame(t, chan, payload=b"", rsvd=0):
        return struct.pack("<IBBHI", len(payload), t, 0, rsvd, chan) + payload
    def hello(version=1, max_pid=0, boot_id=1):
        return frame(64, 0, struct.pack("<IIQ", version, max_pid, boot_id))
    def connect():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(SOCK)
        return s
    def send(s, data):
        try:
            s.sendall(data)
            return True
        except OSError:
            return False
""")


def run_hostile(attack, body, timeout=120):
    res = attack.py(FRAMES + textwrap.dedent(body), timeout=timeout)
    assert res["exit_code"] == 0, res
    return res["stdout"].strip()


def fd_count(spaced):
    return len(os.listdir(f"/proc/{spaced.proc.pid}/fd"))


@gvisor_only(AGENT_SOCKET)
def test_garbage_on_the_agent_socket(attack, spaced):
    """Connects to the agent's socket and sends 1 MiB of random bytes, ten times.

    Expected: spaced drops each connection as malformed and lives on; the real
    agent reconnects and the sandbox serves again.
    """
    out = run_hostile(attack, """
        sent = 0
        for i in range(10):
            s = connect()
            if send(s, os.urandom(1 << 20)):
                sent += 1
            s.close()
        print("sent", sent, "of 10 MiB before a drop")
    """)
    wait_usable(attack.api, attack.id)
    attack.note(out + "; the agent reconnected and the sandbox serves")


@gvisor_only(AGENT_SOCKET)
def test_oversized_and_partial_frames(attack, spaced):
    """Headers with len 0xffffffff, with reserved bits set, a 64 KiB frame that never completes
    (held open), and a trickle of one byte every 10 ms.

    Expected: spaced refuses what breaks the header rules, buffers at most one
    frame for a partial one, and never blocks on it; the real agent gets its
    channel back.
    """
    fds_before = fd_count(spaced)
    out = run_hostile(attack, """
        results = []
        for data in (struct.pack("<IBBHI", 0xffffffff, 67, 0, 0, 5),
                     frame(67, 5, b"x", rsvd=0x1234),
                     struct.pack("<IBBHI", 65536, 67, 0, 0, 5) + b"y" * 1000):
            s = connect()
            results.append(send(s, data))
            time.sleep(0.5)
            s.close()
        s = connect()
        for b in hello() + frame(67, 9, b"z" * 300):
            if not send(s, bytes([b])):
                break
            time.sleep(0.01)
        s.close()
        print("sent", results)
    """)
    wait_usable(attack.api, attack.id)
    wait_until(lambda: fd_count(spaced) <= fds_before + 2, 60, "spaced's descriptors to come back")
    attack.note(out + "; spaced dropped each, the agent came back, descriptors back to "
                f"{fd_count(spaced)} (was {fds_before})")


@gvisor_only(AGENT_SOCKET)
def test_hello_with_a_wrong_version(attack, spaced):
    """A_HELLO with protocol version 99, then frames that would be valid after a hello, kept open.

    Expected: spaced does not take the impostor as the agent (no hello on that
    connection, its frames ignored); the real agent reconnects and wins.
    """
    out = run_hostile(attack, """
        s = connect()
        ok = send(s, hello(version=99) + frame(69, 2, struct.pack("<iiII", 0, 0, 0, 0)) + frame(65, REQ | 1))
        time.sleep(2)
        print("sent", ok)
    """)
    wait_usable(attack.api, attack.id)
    attack.note(out + "; ignored; the real agent reconnected")


@gvisor_only(AGENT_SOCKET)
def test_forged_replies(attack, spaced):
    """With a valid A_HELLO: A_EXIT for 2,000 made-up pids, A_PROC with a 64 KiB command line,
    A_STAT with extreme times, A_ERROR with odd errnos, answers to tags nobody asked, A_CREDIT
    and output for unknown pids; then lets the real agent back.

    Expected: spaced survives every frame, keeps at most 128 exited process
    records, and the sandbox serves again (the listing is its own business).
    """
    out = run_hostile(attack, """
        s = connect()
        data = hello(max_pid=1 << 30)
        for pid in range(1000, 3000):
            data += frame(69, pid, struct.pack("<iiII", pid, 9, 1, 0))
        data += frame(73, REQ, struct.pack("<IIiiQ", 7, 1, 0, 0, 1 << 63) + b"c" * 65000 + b"\\0")
        for mtime in (-(1 << 63), (1 << 63) - 1, 0):
            data += frame(74, REQ | 5, struct.pack("<QqIIII", 1 << 63, mtime, 0o7777, 99, 0, 0) + b"n\\0")
        for err in (-5, 0, 1 << 31, 2, 11):
            data += frame(70, REQ | 3, struct.pack("<I", err & 0xffffffff) + b"msg\\0")
        data += frame(70, REQ | 4, struct.pack("<I", 5))  # no message string
        data += frame(66, REQ | 7, struct.pack("<I", 0xffffffff)) + frame(76, REQ | 8) + frame(71, REQ | 9)
        data += frame(72, 77, struct.pack("<I", 0xffffffff)) + frame(68, 0, b"to pid zero")
        data += frame(75, REQ | 10, b"data nobody asked for") + frame(99, 1) + frame(0, REQ)
        print("sent", send(s, data), len(data), "bytes")
        time.sleep(1)
        s.close()
    """)
    wait_usable(attack.api, attack.id)
    procs = attack.api.ok("GET", f"/v1/sandboxes/{attack.id}/processes")["processes"]
    exited = sum(1 for p in procs if p["state"] == "exited")
    assert exited <= 128 + 8, exited
    attack.note(out + f"; spaced alive, {len(procs)} process records kept ({exited} exited); sandbox serves")


@gvisor_only(AGENT_SOCKET)
def test_connection_storm_on_the_agent_socket(attack, spaced):
    """64 connections held open at once, then 500 quick connect-and-close in a row.

    Expected: spaced keeps at most one connection per sandbox (each new one
    replaces the last), leaks no descriptor, and the real agent reconnects.
    """
    fds_before = fd_count(spaced)
    out = run_hostile(attack, """
        held = []
        for i in range(64):
            try:
                held.append(connect())
            except OSError as e:
                print("connect", i, e.strerror); break
        n = len(held)
        time.sleep(1)
        for s in held:
            s.close()
        quick = 0
        for i in range(500):
            try:
                connect().close(); quick += 1
            except OSError:
                pass
        print("held", n, "then", quick, "quick connections")
    """, timeout=300)
    wait_usable(attack.api, attack.id)
    wait_until(lambda: fd_count(spaced) <= fds_before + 2, 60, "spaced's descriptors to come back")
    attack.note(out + f"; descriptors back to {fd_count(spaced)} (was {fds_before}); the agent reconnected")


@gvisor_only(AGENT_SOCKET)
def test_suspend_with_an_impostor_holding_the_socket(attack, spaced):
    """A process keeps opening connections to the agent's socket (holding 50) while the sandbox is
    suspended and resumed: gVisor's checkpoint is known to fail while a host socket is connected.

    Expected: the suspend works or fails safe (the sandbox `failed` or back to
    `running`, never stuck), and after a resume the sandbox and its files are
    as they were.
    """
    attack.api.put_file(attack.id, "/work/before.txt", b"before\n")
    loop = FRAMES + textwrap.dedent("""
        socks = []
        while True:
            try:
                socks.append(connect())
            except OSError:
                pass
            socks = socks[-50:]
            time.sleep(0.05)
    """)
    attack.api.ok("POST", f"/v1/sandboxes/{attack.id}/processes", {"cmd": ["python3", "-c", loop]}, expect=(201,))
    wait_usable(attack.api, attack.id)
    status, body = attack.api.json("POST", f"/v1/sandboxes/{attack.id}/suspend", timeout=300)
    state, reason = attack.state()
    why = body.get("error", {}).get("message", "") if isinstance(body, dict) else ""
    note = f"suspend answered {status}" + (f" ({why[:100]})" if why else "") + f", state {state}"
    if reason:
        note += f" ({reason})"
    if state == "suspended":
        # the impostor was restored with the rest and goes on replacing the agent's connection:
        # a request may meet it as wait_usable's own do (a 503, or a download cut short when
        # the connection it came on was replaced), so ask until the agent answers it whole
        got = {}
        def read_back():
            try:
                got["status"], got["data"] = attack.api.get_file(attack.id, "/work/before.txt")
            except (OSError, http.client.HTTPException):
                return False
            return got["status"] != 503
        wait_until(read_back, 90, "the resumed sandbox's agent to answer a read", interval=0.2)
        assert got["status"] == 200 and got["data"] == b"before\n", got
        note += "; resumed with its files"
    else:
        # refused or failed: never stuck in between, and the files are where they were
        assert state in ("running", "failed"), state
        layer = spaced.layer(attack.id, "work", "before.txt")
        assert open(layer, "rb").read() == b"before\n"
        note += "; its files intact"
    attack.note(note)


# Root inside a microVM takes the agent's virtio-serial port with its own kernel: it unbinds
# the driver from the device and binds it again (the agent's descriptor dies with the old port),
# opens the new port before the agent's next try, and speaks on it. What it saw goes to the
# console, which QEMU writes to the host (vm/console.log): the sandbox's agent is no longer
# there to carry it.
PORT_THIEF = FRAMES + textwrap.dedent("""
    import glob, json, select
    D = "/sys/bus/virtio/drivers/virtio_console"
    def port():
        for p in glob.glob("/sys/class/virtio-ports/*"):
            try:
                if open(p + "/name").read().strip() == "space.agent":
                    return p
            except OSError:
                pass
    dev = os.path.basename(os.path.realpath(port() + "/device"))
    with open(D + "/unbind", "w") as f:
        f.write(dev)
    with open(D + "/bind", "w") as f:
        f.write(dev)
    fd, seen, deadline = None, {"opens": 0, "garbage": 0}, time.time() + 30
    while fd is None and time.time() < deadline:
        p = port()
        try:
            fd = os.open("/dev/" + os.path.basename(p), os.O_RDWR) if p else None
        except OSError as e:
            seen["open_error"] = e.strerror
        if fd is None:
            time.sleep(0.001)
    seen["port"] = fd is not None
    if fd is not None:
        for i in range(16):  # 1 MiB of noise
            try:
                seen["garbage"] += os.write(fd, os.urandom(65536))
            except OSError as e:
                seen["write_error"] = e.strerror
                break
        buf, end = b"", time.time() + 40
        while time.time() < end:  # then answer each H_OPEN as the agent would, and lie
            r, _, _ = select.select([fd], [], [], 0.5)
            if not r:
                continue
            try:
                buf += os.read(fd, 65536)
            except OSError:
                continue
            while True:
                i = buf.find(struct.pack("<IBBHI", 8, 19, 0, 0, 0))
                if i < 0 or len(buf) < i + 20:
                    buf = buf[-19:]
                    break
                nonce, buf = buf[i + 12:i + 20], buf[i + 20:]
                seen["opens"] += 1
                lies = frame(78, 0, nonce) + hello() + b"".join(frame(69, 300000 + k, bytes(16)) for k in range(500))
                try:
                    os.write(fd, lies)
                except OSError:
                    pass
    with open("/dev/console", "w") as c:
        c.write("PORT_THIEF " + json.dumps(seen) + "\\n")
""")


@microvm_only("root inside a gVisor sandbox has no kernel of its own to rebind a driver in; its impostor "
              "connects to the agent's socket (the attempts above)")
def test_guest_root_takes_the_agents_port_with_its_own_kernel(attack, spaced):
    """Root in a microVM unbinds virtio_console from the port's device and binds it again, opens
    the agent's port before the agent does, writes 1 MiB of random bytes to spaced, then answers
    every H_OPEN with the right A_OPEN, a hello and 500 made-up exits (for 40 s).

    Expected: spaced drops each connection that breaks the protocol and lives on; a thief
    that speaks the protocol is the sandbox's agent as far as spaced can tell (it is root of
    that sandbox), and gets no more of spaced than one: at most 128 exited process records
    (SANDBOX_MAX_EXITED). The sandbox is deleted like any other and its QEMU goes with it.
    """
    import json
    import os
    from conftest import wait_until
    attack.api.ok("POST", f"/v1/sandboxes/{attack.id}/processes", {"cmd": ["python3", "-c", PORT_THIEF]},
                  expect=(201,))
    console = os.path.join(attack.spaced.sandbox_dir(attack.id), "vm", "console.log")
    def thief_said():
        with open(console, errors="replace") as f:
            lines = [ln for ln in f if ln.startswith("PORT_THIEF ")]
        return json.loads(lines[-1][len("PORT_THIEF "):]) if lines else None
    seen = wait_until(thief_said, 120, "the thief to say what it saw on the console")
    state, reason = attack.state()
    forged = []
    if seen["port"]:
        assert seen["garbage"] > 0, seen
        if state == "running":
            forged = [p for p in attack.api.ok("GET", f"/v1/sandboxes/{attack.id}/processes")["processes"]
                      if p["pid"] >= 300000]
        assert len(forged) <= 128, len(forged)
    qemu = int(open(os.path.join(attack.spaced.sandbox_dir(attack.id), "vm", "qemu.pid")).read())
    attack.note(f"thief {seen}; sandbox {state}" + (f" ({reason})" if reason else "")
                + f"; {len(forged)} made-up exits kept")
    attack.api.delete(attack.id)
    wait_until(lambda: not os.path.exists(f"/proc/{qemu}"), 60, "the attacked sandbox's QEMU to go")
    attack.note("deleted, its QEMU gone")

"""What a sandbox's runtime holds of the host: the processes that run a sandbox (runsc's, or a
microVM's QEMU and its log keeper) hold only the descriptors spaced gave them and those they
opened themselves, never one of spaced's own open files (its database, its sockets, another
sandbox's channel or disk), nor one of another sandbox's runtime.
"""

import ctypes
import os

import spacetest

SYS_KCMP = 312  # x86_64
KCMP_FILE = 0
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def same_file(pid1, fd1, pid2, fd2):
    """Whether two descriptors are one open file (kcmp(2)): what a leaked descriptor is."""
    return libc.syscall(SYS_KCMP, ctypes.c_long(pid1), ctypes.c_long(pid2), ctypes.c_long(KCMP_FILE),
                        ctypes.c_long(fd1), ctypes.c_long(fd2)) == 0


def descriptors(pid):
    """{fd: what it names} of a live process."""
    out = {}
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return out
    for fd in names:
        try:
            out[int(fd)] = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            pass
    return out


def runtime_pids(spaced, sbid):
    """The host processes that run sandbox sbid: every one whose command line names it or its
    folder (runsc's sandbox and gofer, QEMU's -name, the log keeper's folder)."""
    marks = (sbid.encode(), spaced.sandbox_dir(sbid).encode())
    return [pid for pid, args in spacetest.host_processes()
            if pid != spaced.proc.pid and any(m in a for a in args for m in marks)]


def shared(pids_a, pids_b):
    """Every (pid, fd, name) of pids_a that is one open file with a descriptor of pids_b."""
    found = []
    theirs = {pb: descriptors(pb) for pb in pids_b}
    for pa in pids_a:
        for fa, name in descriptors(pa).items():
            for pb, fds in theirs.items():
                if any(same_file(pa, fa, pb, fb) for fb in fds):
                    found.append((pa, fa, name))
                    break
    return found


def test_a_sandbox_runtime_holds_nothing_of_spaced_or_another_sandbox(attack, spaced, neighbour):
    """The processes that run the attacking sandbox on the host (runsc's sandbox, gofer and
    helpers under gVisor; QEMU and its log keeper for a microVM), after an exec, a file written
    and a pause and resume, are compared with spaced and with the neighbour sandbox's runtime,
    descriptor by descriptor (kcmp(2): the same open file).

    Expected: none of their descriptors is an open file of spaced (its database, listeners,
    channels, event descriptors) or of the neighbour's runtime: spaced gives a runtime only what
    it opened for it, close-on-exec everywhere else.
    """
    attack.run(["sh", "-c", "echo data > /work/f && cat /work/f"])
    attack.api.ok("POST", f"/v1/sandboxes/{attack.id}/pause")
    attack.api.ok("POST", f"/v1/sandboxes/{attack.id}/resume")
    assert attack.run(["cat", "/work/f"])["stdout"] == "data\n"
    mine = runtime_pids(spaced, attack.id)
    theirs = runtime_pids(spaced, neighbour.id)
    assert mine and theirs, (mine, theirs)
    count = sum(len(descriptors(p)) for p in mine)
    leaked = shared(mine, [spaced.proc.pid])
    crossed = shared(mine, theirs)
    attack.note(f"{len(mine)} processes run the sandbox, holding {count} descriptors; shared with spaced: "
                f"{leaked or 'none'}; with the neighbour's runtime: {crossed or 'none'}")
    assert not leaked, leaked
    assert not crossed, crossed

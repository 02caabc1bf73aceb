"""The transit range (spaced --net-transit) of a spaced whose sandboxes already have networks.

Each sandbox keeps the slot it was given in the range of its day; a spaced restarted with
another range would hand out the same addresses again (two sandboxes on one /30, one's
traffic taken for the other's), so it refuses to start, and names the range to use.
"""

import subprocess

from conftest import NetDaemon


def test_a_changed_transit_range_is_refused_while_sandboxes_hold_the_old(topo):
    d = NetDaemon(topo)
    try:
        d.start()
        sbid = d.api.create(network={"egress": "none"})
        d.stop()
        old = d.transit
        narrower = old.replace("/24", "/25")  # the same addresses, numbered anew from slot 0
        d.args = ["--net-transit", narrower]
        p = subprocess.Popen(d.argv(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             stdin=subprocess.DEVNULL)
        try:
            out, _ = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        assert p.returncode == 2, out
        assert sbid in out and f"--net-transit {old}" in out, out
        # with the range of its sandboxes it starts, and they are as they were
        d.args = []
        d.start()
        assert d.api.exec(sbid, ["true"])["exit_code"] == 0
        d.api.delete(sbid)
        # with no sandbox in the old range, the new one is taken
        d.stop()
        d.args = ["--net-transit", narrower]
        d.start()
        other = d.api.create(network={"egress": "none"})
        assert d.api.ok("GET", f"/v1/sandboxes/{other}")["network"]["host_address"].startswith(old.rsplit(".", 1)[0])
    finally:
        d.cleanup()

"""Resource limits as a program inside the sandbox sees them."""
from conftest import gvisor_only  # noqa: E402


def mem_total_mb(api, sbid):
    res = api.exec(sbid, ["free", "-m"])
    assert res["exit_code"] == 0, res
    row = [l.split() for l in res["stdout"].splitlines() if l.startswith("Mem:")]
    assert row, res["stdout"]
    return int(row[0][1])


@gvisor_only("MemTotal is the sandbox's memory under gVisor; a guest kernel keeps part of its RAM for itself")
def test_cpus_and_memory_are_visible_inside(api):
    sbid = api.create(cpus=2, memory_mb=256)
    try:
        sb = api.ok("GET", f"/v1/sandboxes/{sbid}")
        assert (sb["cpus"], sb["memory_mb"]) == (2, 256)
        assert api.exec(sbid, ["nproc"])["stdout"] == "2\n"
        assert mem_total_mb(api, sbid) == 256
    finally:
        api.delete(sbid)


@gvisor_only("MemTotal is the sandbox's memory under gVisor; a guest kernel keeps part of its RAM for itself")
def test_defaults_are_one_cpu_and_512_mib(api, sandbox):
    sb = api.ok("GET", f"/v1/sandboxes/{sandbox}")
    assert (sb["cpus"], sb["memory_mb"]) == (1, 512)
    assert mem_total_mb(api, sandbox) == 512
    assert api.exec(sandbox, ["nproc"])["stdout"] == "1\n"


@gvisor_only("MemTotal is the sandbox's memory under gVisor; a guest kernel keeps part of its RAM for itself")
def test_one_cpu_shows_as_one(api):
    """On a host with 2 CPUs, cpus=2 shows 2 whatever spaced does; cpus=1 is the telling case."""
    sbid = api.create(cpus=1, memory_mb=128)
    try:
        assert mem_total_mb(api, sbid) == 128
        assert api.exec(sbid, ["nproc"])["stdout"] == "1\n"
    finally:
        api.delete(sbid)

"""Templates from container images: `spaced --template NAME=oci-archive:FILE` (or
docker-archive:, oci:, docker://) imports the image with skopeo and umoci, and
`space create --template NAME` starts from it, on every kind of sandbox.

The image is made here, from Debian's static busybox, in two layers (the second deletes a file
of the first: a whiteout), with umoci; the only registry is Debian's docker-registry, started
by the test on a loopback port.
"""

import hashlib
import json
import os
import shutil
import socket
import subprocess

import pytest

from conftest import MICROVM, Cli
from images import busybox_image, run
from spacetest import wait_until




@pytest.fixture(scope="module")
def images(tmp_path_factory):
    return busybox_image(str(tmp_path_factory.mktemp("image")))


def test_an_image_becomes_a_template_sandboxes_start_from(make_daemon, images):
    d = make_daemon(args=["--template", f"bb=oci-archive:{images['oci']}",
                          "--template", f"bbd=docker-archive:{images['docker']}"])
    cli = Cli(f"unix://{d.socket}")
    t = cli("template", "ls", "--json")
    assert t.returncode == 0, t.stderr
    templates = {x["name"]: x for x in json.loads(t.stdout)}
    assert set(templates) == {"default", "bb", "bbd"}, templates
    bb = templates["bb"]
    assert bb["source"] == f"oci-archive:{images['oci']}"
    assert bb["config"]["workdir"] == "/srv" and bb["config"]["user"] == "1000:1000", bb
    assert bb["config"]["env"]["GREETING"] == "hello from the image" and bb["config"]["cmd"] == ["sh"], bb
    # one image, one copy: the docker archive of the same layers unpacks to the same files
    assert bb["key"].startswith("oci-") and templates["bbd"]["key"].startswith("oci-")
    # its size, and its two layers as the image names them, in order
    assert bb["bytes"] > os.path.getsize(shutil.which("busybox")), bb
    assert len(bb["layers"]) == 2 and all(x["digest"].startswith("sha256:") and x["bytes"] > 0 for x in bb["layers"])
    assert bb["layers"][0]["bytes"] > bb["layers"][1]["bytes"], bb["layers"]  # busybox is in the first
    assert templates["default"]["layers"][0]["made_by"] == "mmdebstrap", templates["default"]

    for name in ("bbd", "bb"):  # the last, bb's, stays for what follows
        sbid = d.api.create(template=name, env={"MINE": "the create's"})
        r = d.api.exec(sbid, ["cat", "/etc/hello.txt", "/etc/second.txt"])
        assert r["exit_code"] == 0 and r["stdout"] == "from the first layer\nfrom the second layer\n", r
        r = d.api.exec(sbid, ["ls", "/etc/gone.txt"])  # the whiteout was applied
        assert r["exit_code"] != 0, r
        r = d.api.exec(sbid, ["env"])
        assert "GREETING=hello from the image\n" in r["stdout"] and "MINE=the create's\n" in r["stdout"], r
        # a name the create gives wins over the image's
        over = d.api.create(template=name, env={"GREETING": "mine"})
        assert "GREETING=mine\n" in d.api.exec(over, ["env"])["stdout"]
        # what a sandbox writes stays its own: the template is shared and read-only
        r = d.api.exec(sbid, ["sh", "-c", "echo changed > /etc/hello.txt"], user="root")
        assert r["exit_code"] == 0, r
        assert d.api.exec(over, ["cat", "/etc/hello.txt"], user="root")["stdout"] == "from the first layer\n"
        assert json.loads(cli("inspect", "--json", sbid).stdout)["template"] == name
        d.api.delete(over)
    # the image's working folder and user are a process's unless it names its own
    r = d.api.exec(sbid, ["sh", "-c", "id -u; id -g; pwd"])
    assert r["stdout"] == "1000\n1000\n/srv\n", r
    r = d.api.exec(sbid, ["sh", "-c", "id -u; pwd"], user="root", cwd="/etc")
    assert r["stdout"] == "0\n/etc\n", r
    # ... and still after spaced was killed and started again
    d.kill()
    d.start()
    r = d.api.exec(sbid, ["sh", "-c", "id -u; pwd"])
    assert r["stdout"] == "1000\n/srv\n", r
    # the default template has no such defaults
    plain = d.api.create()
    assert d.api.exec(plain, ["sh", "-c", "id -u; pwd"])["stdout"] == "0\n/work\n"


def test_an_image_that_cannot_be_read_stops_spaced_with_why(make_daemon, tmp_path, images):
    bad = tmp_path / "not-an-image.tar"
    bad.write_bytes(b"this is not a tar archive at all" * 64)
    with pytest.raises(pytest.fail.Exception) as got:
        make_daemon(args=["--template", f"bad=oci-archive:{bad}"])
    # an OCI archive is unpacked (as a build context is), not copied by skopeo
    assert "template bad: space-build failed" in str(got.value), got.value
    assert "the image archive is not a tar archive space can unpack" in str(got.value), got.value


def test_a_template_is_removed_only_while_nothing_starts_from_it(make_daemon, images):
    d = make_daemon(args=["--template", f"bb=oci-archive:{images['oci']}",
                          "--template", f"same=oci-archive:{images['oci']}"])
    cli = Cli(f"unix://{d.socket}")
    bb = json.loads(cli("template", "inspect", "bb").stdout)
    files = os.path.join("/var/cache/space", "templates", bb["key"])  # the machine's cache, spaced's default
    assert bb["sandboxes"] == 0 and os.path.isdir(files), bb
    # a microVM starts from the template's disk image, made once in the cache (its name: the
    # recipe of daemon/driver/vm_image.c over where the template's files are)
    real = os.path.realpath(os.path.join(files, "rootfs"))
    image = os.path.join("/var/cache/space", "images",
                         hashlib.sha256(f"recipe=1 erofs {real}".encode()).hexdigest() + ".erofs")

    sbid = d.api.create(template="bb")
    assert os.path.exists(image) == MICROVM, image
    assert json.loads(cli("template", "inspect", "bb").stdout)["sandboxes"] == 1
    r = cli("template", "rm", "bb")
    assert r.returncode != 0 and "in use: 1 sandboxes and 0 snapshots" in r.stderr, r
    snap = d.api.ok("POST", f"/v1/sandboxes/{sbid}/snapshot", {}, expect=(201,))["id"]
    d.api.delete(sbid)
    status, body = d.api.json("DELETE", "/v1/templates/bb")
    assert status == 409 and "0 sandboxes and 1 snapshots" in body["error"]["message"], body
    d.api.ok("DELETE", f"/v1/snapshots/{snap}", expect=(204,))

    assert d.api.json("DELETE", "/v1/templates/default")[0] == 409
    assert d.api.json("DELETE", "/v1/templates/nope")[0] == 404
    assert cli("template", "rm", "-f", "nope").returncode == 0

    # removed: gone from the list, refused to a create; its files stay while `same` has them
    r = cli("template", "rm", "bb")
    assert r.returncode == 0 and r.stdout == "bb\n", r
    names = {t["name"] for t in json.loads(cli("template", "ls", "--json").stdout)}
    assert names == {"default", "same"}, names
    status, body = d.api.json("POST", "/v1/sandboxes", {"template": "bb"})
    assert status == 404 and "template bb does not exist" in body["error"]["message"], body
    assert os.path.isdir(files)
    # the last name of those files: they leave the cache (no other state dir uses this image)
    assert cli("template", "rm", "same").returncode == 0
    assert not os.path.exists(files)
    assert not os.path.exists(image)  # ... and so does their microVM image
    assert d.api.exec(d.api.create(), ["true"])["exit_code"] == 0  # the default one is untouched


@pytest.fixture
def registry(tmp_path):
    """Debian's docker-registry on a loopback port of this test's own, storing in tmp_path."""
    if not shutil.which("docker-registry"):
        pytest.skip("needs docker-registry (make deps installs it)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = tmp_path / "registry.yml"
    conf.write_text(f"version: 0.1\nlog: {{level: error}}\n"
                    f"storage: {{filesystem: {{rootdirectory: {tmp_path}/store}}}}\n"
                    f"http: {{addr: 127.0.0.1:{port}}}\n")
    p = subprocess.Popen(["docker-registry", "serve", str(conf)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)

    def up():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            return p.poll() is not None  # ended: reported below
    wait_until(up, 60, "the registry to listen")
    assert p.poll() is None, "docker-registry ended at start"
    yield f"127.0.0.1:{port}"
    p.terminate()
    p.wait(timeout=30)


def test_an_image_pulled_from_a_registry_on_loopback(make_daemon, images, registry):
    ref = f"docker://{registry}/space-test/busybox:v1"
    run("skopeo", "--insecure-policy", "copy", "--quiet", "--dest-tls-verify=false", f"oci:{images['layout']}:v1",
        ref)
    d = make_daemon(args=["--template", f"pulled={ref}"])
    t = d.api.ok("GET", "/v1/templates/pulled")
    assert t["source"] == ref and t["config"]["workdir"] == "/srv", t
    sbid = d.api.create(template="pulled")
    r = d.api.exec(sbid, ["cat", "/etc/second.txt"])
    assert r["exit_code"] == 0 and r["stdout"] == "from the second layer\n", r


def test_an_image_imported_through_the_api(make_daemon, images, registry):
    """space template import: an archive sent to spaced, or an image it pulls."""
    d = make_daemon()
    cli = Cli(f"unix://{d.socket}")
    for name, image in (("up", f"oci-archive:{images['oci']}"), ("upd", f"docker-archive:{images['docker']}")):
        r = cli("template", "import", name, image, timeout=300)
        assert r.returncode == 0 and r.stdout.startswith(f"template {name} imported (oci-"), r
        t = d.api.ok("GET", f"/v1/templates/{name}")
        assert t["source"] == image.split(":")[0] + ":(uploaded)", t
        assert t["config"]["workdir"] == "/srv" and t["config"]["user"] == "1000:1000", t
    ref = f"docker://{registry}/space-test/busybox:v1"
    run("skopeo", "--insecure-policy", "copy", "--quiet", "--dest-tls-verify=false", f"oci:{images['layout']}:v1",
        ref)
    r = cli("template", "import", "pulled", ref, timeout=300)
    assert r.returncode == 0, r
    assert d.api.ok("GET", "/v1/templates/pulled")["source"] == ref
    sbid = d.api.create(template="up")
    r = d.api.exec(sbid, ["sh", "-c", "cat /etc/second.txt; id -u; pwd"])
    assert r["stdout"] == "from the second layer\n1000\n/srv\n", r

    garbage = images["oci"] + ".bad"
    with open(garbage, "wb") as f:
        f.write(b"this is not an image" * 100)
    r = cli("template", "import", "bad", f"oci-archive:{garbage}", timeout=300)
    assert r.returncode == 1 and "the image archive is not a tar archive" in r.stderr, r
    assert d.api.json("GET", "/v1/templates/bad")[0] == 404
    assert cli("template", "import", "x", "/some/file").returncode == 2
    assert d.api.json("POST", "/v1/templates?name=x&source=dir:/etc")[0] == 400

"""Making templates through the SDK: Sandbox.build_template() and Sandbox.import_template().

A build sends a folder of the test's own as its context and is checked from inside a sandbox of
the template it made, as a user would see it. The image imported is made here with umoci from
Debian's static busybox (as tests/e2e/test_images.py makes its own); the only address any
import names is on loopback.
"""

import os
import secrets

import pytest

import space
from space import Sandbox

from images import busybox_image  # tests/support, on the path through conftest
from spacetest import free_port

DOCKERFILE = """\
FROM space:default
ARG WHO=nobody
ENV GREETING="hello from the build" BUILT_BY=$WHO
COPY hello.txt /opt/hello.txt
RUN echo built > /x && echo step-output
"""


def uniq(prefix):
    return prefix + "-" + secrets.token_hex(4)


def write(root, files):
    for path, text in files.items():
        p = os.path.join(root, path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)


@pytest.fixture
def made(spaced):
    """Names of templates a test made (removed after it) and sandboxes it started (killed first)."""
    out = {"templates": [], "sandboxes": []}
    yield out
    for sb in out["sandboxes"]:
        sb.kill()
    for name in out["templates"]:
        Sandbox.delete_template(name)


def test_a_build_from_a_folder_is_what_its_sandboxes_see(tmp_path, made):
    name = uniq("sdk-built")
    hello = "hello " + secrets.token_hex(4) + "\n"  # new to the step cache: every step after COPY runs
    write(tmp_path / "ctx", {"docker/Dockerfile.sdk": DOCKERFILE, "hello.txt": hello})
    events = []
    made["templates"].append(name)
    t = Sandbox.build_template(name, context=str(tmp_path / "ctx"), dockerfile="docker/Dockerfile.sdk",
                               build_args={"WHO": "the sdk"}, on_log=events.append)

    assert isinstance(t, space.Template) and t.name == name and t.key.startswith("build-"), t.raw
    assert t.config["env"]["GREETING"] == "hello from the build" and t.config["env"]["BUILT_BY"] == "the sdk", t.raw
    assert Sandbox.get_template(name).key == t.key
    steps = [e for e in events if e["type"] == "step"]
    assert [e["text"] for e in steps] == DOCKERFILE.splitlines(), steps
    assert [e["step"] for e in steps] == [1, 2, 3, 4, 5] and all(e["steps"] == 5 for e in steps), steps
    assert "step-output\n" in "".join(e.get("data", "") for e in events if e["type"] == "output"), events
    assert events[-1]["type"] == "done" and events[-1]["template"]["key"] == t.key
    assert "keepalive" not in {e["type"] for e in events}

    sb = Sandbox.create(template=name)
    made["sandboxes"].append(sb)
    assert sb.get_info().template == name
    assert sb.files.read("/opt/hello.txt") == hello
    assert sb.files.read("/x") == "built\n"
    r = sb.commands.run('echo "$GREETING|$BUILT_BY"')
    assert r.stdout == "hello from the build|the sdk\n", r.stdout


def test_packages_and_a_tag(tmp_path, made):
    # bash is the default template's own: the set adds nothing, and its build is in the cache
    name = uniq("sdk-packaged") + ":v1"
    write(tmp_path / "ctx", {"Dockerfile": "RUN bash -c 'echo $((6 * 7))' > /answer\n"})
    events = []
    made["templates"].append(name)
    t = Sandbox.build_template(name, context=str(tmp_path / "ctx"), packages=["bash"], on_log=events.append)
    assert t.name == name, t.raw
    assert "--packages bash: making template packages-" in "".join(e.get("data", "") for e in events), events
    sb = Sandbox.create(template=name)
    made["sandboxes"].append(sb)
    assert sb.files.read("/answer") == "42\n"


def test_a_link_in_the_context_is_sent_as_a_link_not_as_what_it_points_to(tmp_path, made):
    secret = "host file " + secrets.token_hex(4) + "\n"
    (tmp_path / "outside.txt").write_text(secret)
    ctx = tmp_path / "ctx"
    write(ctx, {"Dockerfile": "FROM space:default\nCOPY . /ctx/\n", "inside.txt": "inside\n"})
    os.symlink("inside.txt", ctx / "near")           # a link inside the context
    os.symlink(str(tmp_path / "outside.txt"), ctx / "far")  # one out of it
    name = uniq("sdk-links")
    made["templates"].append(name)
    Sandbox.build_template(name, context=str(ctx))
    sb = Sandbox.create(template=name)
    made["sandboxes"].append(sb)
    r = sb.commands.run("readlink /ctx/near /ctx/far; cat /ctx/inside.txt")
    assert r.stdout == "inside.txt\n%s\ninside\n" % (tmp_path / "outside.txt"), r.stdout
    assert sb.commands.run("cat /ctx/far 2>/dev/null; true").stdout != secret


def test_a_failing_run_raises_build_error_with_its_step_and_exit_code(tmp_path, made):
    name = uniq("sdk-failing")
    write(tmp_path, {"Dockerfile": "FROM space:default\nRUN echo one > /v\nRUN echo out-%s; exit 3\n" % name})
    events = []
    with pytest.raises(space.BuildError) as got:
        Sandbox.build_template(name, context=str(tmp_path), on_log=events.append)
    e = got.value
    assert isinstance(e, space.SpaceError)
    assert e.step == 3 and e.exit_code == 3 and e.code == "build_failed", (e.step, e.exit_code, e.code)
    assert str(e).startswith("step 3: ") and "exit code 3" in str(e), str(e)
    assert events[-1]["type"] == "error" and events[-1] is e.event
    assert ("out-%s\n" % name) in "".join(ev.get("data", "") for ev in events if ev["type"] == "output"), events
    with pytest.raises(space.TemplateNotFound):  # nothing was recorded
        Sandbox.get_template(name)


def test_a_dockerfile_spaced_refuses_raises_build_error_naming_its_line(tmp_path, made):
    write(tmp_path, {"Dockerfile": "FROM space:default\nEXPOSE 80\n"})
    with pytest.raises(space.BuildError) as got:
        Sandbox.build_template(uniq("sdk-bad"), context=str(tmp_path))
    assert "line 2: EXPOSE is not supported" in str(got.value) and got.value.exit_code is None, got.value.event


def test_an_on_log_that_raises_cancels_the_build(tmp_path, made, wait_until):
    name = uniq("sdk-cancelled")
    write(tmp_path, {"Dockerfile": "FROM space:default\nRUN echo started; sleep 100000\n"})

    class Enough(Exception):
        pass

    def on_log(ev):
        if ev["type"] == "output" and "started" in ev.get("data", ""):
            raise Enough()
    with pytest.raises(Enough):
        Sandbox.build_template(name, context=str(tmp_path), on_log=on_log)
    # the step's sandbox goes, and nothing is recorded
    wait_until(lambda: not Sandbox.list(metadata={"space.build": name}), 120, "the build's sandbox to go")
    with pytest.raises(space.TemplateNotFound):
        Sandbox.get_template(name)


def test_bad_build_arguments_are_refused(tmp_path, made):
    write(tmp_path / "ctx", {"Dockerfile": "FROM space:default\n"})
    (tmp_path / "Dockerfile.outside").write_text("FROM space:default\n")
    nowhere = "unix://" + str(tmp_path / "no-daemon.sock")  # refused before any request reaches one
    for kw in ({"context": str(tmp_path / "ctx" / "Dockerfile")},
               {"context": str(tmp_path / "missing")},
               {"context": str(tmp_path / "ctx"), "dockerfile": str(tmp_path / "Dockerfile.outside")},
               {"context": str(tmp_path / "ctx"), "dockerfile": "../Dockerfile.outside"},
               {"context": str(tmp_path / "ctx"), "build_args": {"A=B": "c"}},
               {"context": str(tmp_path / "ctx"), "build_args": {"": "c"}}):
        with pytest.raises(space.InvalidArgumentError):
            Sandbox.build_template("sdk-x", host=nowhere, **kw)
    # what the daemon refuses maps as any answer of it does
    with pytest.raises(space.InvalidArgumentError):
        Sandbox.build_template("../x", context=str(tmp_path / "ctx"))
    with pytest.raises(space.ConflictError):
        Sandbox.build_template("default", context=str(tmp_path / "ctx"))


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """An OCI archive and a docker archive of Debian's static busybox (tests/support/images.py)."""
    made = busybox_image(str(tmp_path_factory.mktemp("image")))
    return {"oci-archive": made["oci"], "docker-archive": made["docker"]}


@pytest.mark.parametrize("kind", ["oci-archive", "docker-archive"])
def test_an_imported_archive_is_a_template_sandboxes_start_from(image, made, kind):
    name = uniq("sdk-imported")
    made["templates"].append(name)
    t = Sandbox.import_template(name, f"{kind}:{image[kind]}")
    assert isinstance(t, space.Template) and t.name == name and t.key.startswith("oci-"), t.raw
    assert t.source == f"{kind}:(uploaded)" and t.config["workdir"] == "/srv", t.raw
    assert [x.key for x in Sandbox.list_templates() if x.name == name] == [t.key]

    sb = Sandbox.create(template=name)
    made["sandboxes"].append(sb)
    r = sb.commands.run("cat /etc/hello.txt /etc/second.txt; pwd; echo $GREETING")
    assert r.stdout == "from the first layer\nfrom the second layer\n/srv\nhello from the image\n", r.stdout


def test_a_bad_source_is_refused_before_any_request(tmp_path, spaced):
    nowhere = "unix://" + str(tmp_path / "no-daemon.sock")
    for source in ("/some/image.tar", "oci:/some/layout", "dir:/etc", "oci-archive:", "docker-archive:",
                   "docker://", "docker:busybox", "", None):
        with pytest.raises(space.InvalidArgumentError):
            Sandbox.import_template("sdk-x", source, host=nowhere)
    with pytest.raises(FileNotFoundError):
        Sandbox.import_template("sdk-x", "oci-archive:" + str(tmp_path / "missing.tar"))


def test_an_image_spaced_cannot_read_is_refused_with_why(tmp_path, spaced):
    garbage = tmp_path / "garbage.tar"
    garbage.write_bytes(b"this is not an image" * 100)
    name = uniq("sdk-garbage")
    with pytest.raises(space.InvalidArgumentError) as got:
        Sandbox.import_template(name, f"oci-archive:{garbage}")
    assert "the image archive is not a tar archive" in str(got.value), got.value
    # an image spaced pulls: a loopback port where nothing listens
    port = free_port()
    with pytest.raises(space.InvalidArgumentError) as got:
        Sandbox.import_template(name, f"docker://127.0.0.1:{port}/space-test/none:v1")
    assert f"127.0.0.1:{port}" in str(got.value), got.value
    with pytest.raises(space.TemplateNotFound):
        Sandbox.get_template(name)

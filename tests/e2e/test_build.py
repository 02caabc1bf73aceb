"""Templates built from a Dockerfile: `space template build` and POST /v1/templates.

A build's RUN steps run in sandboxes of the spaced under test; COPY, ADD and WORKDIR are done by
the builder on the host, inside the root being built. What a build made is checked from inside
a sandbox of the template, as a user would see it.
"""

import io
import json
import os
import secrets
import tarfile

import pytest

from conftest import Cli
from spacetest import Api, free_port, q, wait_until
from images import run
from test_images import images, registry  # noqa: F401 (fixtures: an image, a registry on loopback)


def context_tar(files):
    """A build context as tar bytes: files maps a path to its text, or to (text, mode)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for path, spec in files.items():
            text, mode = spec if isinstance(spec, tuple) else (spec, 0o644)
            data = text.encode()
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = mode
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def build(api, name, files, args=(), dockerfile=None):
    """POSTs a build; (HTTP status, the events or the error body)."""
    query = f"name={q(name)}" + "".join(f"&build_arg={q(a)}" for a in args)
    if dockerfile:
        query += f"&dockerfile={q(dockerfile)}"
    with api.stream("POST", f"/v1/templates?{query}", raw=context_tar(files),
                    headers={"Content-Type": "application/x-tar"}, timeout=600) as s:
        if s.body is not None:
            return s.status, s.json_body()
        return s.status, list(s)


def steps(events):
    return [(e["text"], e["cached"]) for e in events if e["type"] == "step"]


def output(events):
    return "".join(e["data"] for e in events if e["type"] == "output")


def done(events):
    assert events[-1]["type"] == "done", events[-1]
    return events[-1]["template"]


def write_context(root, files):
    for path, spec in files.items():
        text, mode = spec if isinstance(spec, tuple) else (spec, 0o644)
        p = os.path.join(root, path)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, mode)


FULL = """\
ARG BASE=default
FROM space:${BASE}
ARG GREETING=hi
ENV APP_HOME=/srv/app MODE="${GREETING} there"
WORKDIR $APP_HOME
COPY --chown=1000:1000 --chmod=640 conf.txt ./conf/
COPY bin/ /usr/local/bin/
ADD data.txt /opt/data/
RUN ["/bin/sh", "-c", "echo exec-form > /srv/app/exec.txt"]
RUN useradd -m -u 1234 worker && echo "$MODE" > shell.txt && echo built-step-output
USER worker
RUN id -u > /tmp/whoami-at-build
LABEL org.example.team="agents"
"""


def test_a_build_with_each_instruction_is_what_its_sandboxes_see(spaced, api, tmp_path):
    ctx = tmp_path / "ctx"
    data = "data " + secrets.token_hex(4)  # the steps from ADD on run: the machine's cache has not seen it
    write_context(str(ctx), {"Dockerfile": FULL, "conf.txt": "secret=1\n", "bin/tool": ("#!/bin/sh\necho tool ran\n", 0o755),
                             "data.txt": data + "\n"})
    cli = Cli(f"unix://{spaced.socket}")
    r = cli("template", "build", "-t", "full", "--build-arg", "GREETING=hey", str(ctx), timeout=600)
    assert r.returncode == 0, r.stderr
    lines = [line.removesuffix(" (cached)") for line in r.stdout.splitlines()]
    assert lines[0] == "[1/13] ARG BASE=default", lines
    assert "[5/13] WORKDIR $APP_HOME" in lines and "[8/13] ADD data.txt /opt/data/" in r.stdout.splitlines(), lines
    assert "built-step-output" in lines, lines
    assert lines[-1].startswith("template full built (build-"), lines

    t = json.loads(cli("template", "inspect", "full").stdout)
    assert t["source"] == "dockerfile:space:default", t
    cfg = t["config"]
    assert cfg["env"]["MODE"] == "hey there" and cfg["env"]["APP_HOME"] == "/srv/app", cfg
    assert cfg["workdir"] == "/srv/app" and cfg["user"] == "1234:1234", cfg
    assert cfg["labels"] == {"org.example.team": "agents"}, cfg
    # its size, and its layers: the base, then each step that changed files, with their keys
    assert t["bytes"] > api.ok("GET", "/v1/templates/default")["bytes"] // 2, t
    assert t["layers"][0] == {"from": "default", "key": api.ok("GET", "/v1/templates/default")["key"]}, t
    assert [(x["step"], x["instruction"]) for x in t["layers"][1:]] == [
        (5, "WORKDIR $APP_HOME"), (6, "COPY --chown=1000:1000 --chmod=640 conf.txt ./conf/"),
        (7, "COPY bin/ /usr/local/bin/"), (8, "ADD data.txt /opt/data/"),
        (9, 'RUN ["/bin/sh", "-c", "echo exec-form > /srv/app/exec.txt"]'),
        (10, 'RUN useradd -m -u 1234 worker && echo "$MODE" > shell.txt && echo built-step-output'),
        (12, "RUN id -u > /tmp/whoami-at-build")], t["layers"]
    assert t["key"] == "build-" + t["layers"][-1]["key"], t

    # one build serves every kind of sandbox
    kinds = api.ok("GET", "/v1/version")["isolation"]["available"]
    for kind in sorted(kinds, key=lambda k: k != "gvisor"):
        check_full(api, kind, data)


def check_full(api, kind, data):
    sbid = api.create(template="full", isolation=kind)
    try:
        res = api.exec(sbid, "id -u; pwd; echo \"$MODE\"; cat exec.txt shell.txt /tmp/whoami-at-build /opt/data/data.txt;"
                             " tool; stat -c '%u:%g %a' conf/conf.txt; cat /etc/hostname")
        assert res["exit_code"] == 0, res
        assert res["stdout"].splitlines() == ["1234", "/srv/app", "hey there", "exec-form", "hey there", "1234", data,
                                              "tool ran", "1000:1000 640", sbid], (kind, res)
        # root's, unless a request names another user
        assert api.exec(sbid, "id -u", user="root")["stdout"] == "0\n"
    finally:
        api.delete(sbid)


def test_an_unchanged_step_comes_from_the_cache_and_a_change_rebuilds_from_there(api):
    name = "cached-" + secrets.token_hex(3)
    files = {"Dockerfile": "FROM space:default\nCOPY a.txt /a.txt\nRUN cat /a.txt > /b.txt\nCOPY c.txt /c.txt\n"
                           "RUN od -An -tx1 -N16 /dev/urandom > /stamp\n",
             "a.txt": "a-" + secrets.token_hex(4) + "\n", "c.txt": "c1\n"}
    status, first = build(api, name, files)
    assert status == 200 and done(first), first
    assert [c for _, c in steps(first)] == [False] * 5
    status, again = build(api, name, files)
    assert steps(again) == [(t, t != "FROM space:default") for t, _ in steps(first)], again
    assert output(again) == ""
    assert done(again)["key"] == done(first)["key"]

    files["c.txt"] = "c2\n"
    status, changed = build(api, name, files)
    assert [c for _, c in steps(changed)] == [False, True, True, False, False], changed
    assert done(changed)["key"] != done(first)["key"]
    sbid = api.create(template=name)
    try:
        assert api.exec(sbid, "cat /b.txt /c.txt")["stdout"] == files["a.txt"] + "c2\n"
    finally:
        api.delete(sbid)


def test_a_failed_step_shows_why_and_leaves_the_template_as_it_was(api):
    name = "failing-" + secrets.token_hex(3)
    status, ok = build(api, name, {"Dockerfile": "FROM space:default\nRUN echo one > /v\n"})
    key = done(ok)["key"]
    status, events = build(api, name, {"Dockerfile": "FROM space:default\nRUN echo two > /v\n"
                                                     "RUN echo out; echo err >&2; exit 3\n"})
    assert status == 200
    err = events[-1]
    assert err["type"] == "error" and err["step"] == 3 and err["exit_code"] == 3, err
    assert "exit code 3" in err["error"]["message"], err
    assert output(events) == "out\nerr\n" or sorted(output(events).split()) == ["err", "out"], events
    assert api.ok("GET", f"/v1/templates/{name}")["key"] == key
    # nothing of the build runs on
    left = [s for s in api.ok("GET", "/v1/sandboxes")["sandboxes"] if s.get("metadata", {}).get("space.build")]
    assert left == [], left

    fresh = "never-" + secrets.token_hex(3)
    status, events = build(api, fresh, {"Dockerfile": "FROM space:default\nRUN exit 1\n"})
    assert events[-1]["type"] == "error"
    assert api.json("GET", f"/v1/templates/{fresh}")[0] == 404


def test_users_of_a_build_are_whom_its_sandboxes_run_as(api):
    """USER and --chown are looked up in the image's /etc/passwd and /etc/group by the rules
    the agent runs commands by (lib/user.h): an entry with blanks before its name is a user,
    a line of too few fields is none, a group is found by its name."""
    name = "users-" + secrets.token_hex(3)
    status, events = build(api, name, {"Dockerfile": "FROM space:default\n"
                                       "RUN echo '  spaceman:x:4321:4300::/tmp:/bin/sh' >> /etc/passwd"
                                       " && echo 'crew:x:4500:' >> /etc/group\n"
                                       "USER spaceman:crew\n"})
    assert status == 200, events
    assert done(events)["config"]["user"] == "4321:4500", events[-1]
    sbid = api.create(template=name)
    try:
        assert api.exec(sbid, "id -u; id -g")["stdout"] == "4321\n4500\n"
    finally:
        api.delete(sbid)

    short = "short-" + secrets.token_hex(3)
    status, events = build(api, short, {"Dockerfile": "FROM space:default\n"
                                        "RUN echo 'stub:x:4400' >> /etc/passwd\nUSER stub\n"})
    assert events[-1]["type"] == "error", events[-1]
    assert "no user stub in /etc/passwd" in events[-1]["error"]["message"], events[-1]
    assert api.json("GET", f"/v1/templates/{short}")[0] == 404


@pytest.mark.parametrize("files, message", [
    ({"Dockerfile": "FROM space:default\nEXPOSE 80\n"}, "line 2: EXPOSE is not supported"),
    ({"Dockerfile": "FROM space:no-such-template\n"}, "no template no-such-template"),
    ({"other": "x"}, "no Dockerfile Dockerfile in the build context"),
    ({"Dockerfile": "FROM space:default\nCOPY missing.txt /\n"}, "missing.txt: not in the build context"),
    ({"Dockerfile": "FROM space:default\nCOPY *.nope /\n"}, "*.nope: nothing in the build context matches"),
    ({"Dockerfile": "FROM space:default\nCOPY * /x\n", "a": "a"}, "destination ending in '/'"),
])
def test_a_bad_dockerfile_or_context_is_refused_with_why(api, files, message):
    name = "bad-" + secrets.token_hex(3)
    status, events = build(api, name, files)
    assert status == 200 and events[-1]["type"] == "error", events
    assert message in events[-1]["error"]["message"], events[-1]
    assert api.json("GET", f"/v1/templates/{name}")[0] == 404


def test_a_bad_request_is_refused_before_anything_runs(api):
    assert api.json("POST", "/v1/templates?name=default", raw=b"")[0] == 409
    assert api.json("POST", "/v1/templates?name=..%2Fx", raw=b"")[0] == 400
    assert api.json("POST", "/v1/templates", raw=b"")[0] == 400
    assert api.json("POST", "/v1/templates?name=x&build_arg=novalue", raw=b"")[0] == 400
    with api.stream("POST", "/v1/templates?name=notar", raw=b"this is not a tar archive" * 40) as s:
        events = list(s)
    assert events[-1]["type"] == "error" and "not a tar archive" in events[-1]["error"]["message"], events


def test_a_build_writes_nowhere_outside_the_root_it_builds(api):
    """Links a step left never lead a COPY out of the root it builds."""
    mark = secrets.token_hex(6)
    name = "contained-" + mark
    df = (f"FROM space:default\nRUN ln -s / /hostlink && mkdir -p /app && ln -s /tmp /app/tmplink\n"
          f"COPY payload /hostlink/tmp/payload-{mark}\nCOPY payload /app/tmplink/via-dir-{mark}\n"
          f"COPY payload /hostlink/../../tmp/up-{mark}\n")
    status, events = build(api, name, {"Dockerfile": df, "payload": "payload\n"})
    for host_path in (f"/tmp/payload-{mark}", f"/tmp/via-dir-{mark}", f"/tmp/up-{mark}"):
        assert not os.path.exists(host_path), host_path
    done(events)
    sbid = api.create(template=name)
    try:
        r = api.exec(sbid, f"cat /tmp/payload-{mark} /tmp/via-dir-{mark} /tmp/up-{mark}")
        assert r["stdout"] == "payload\n" * 3, r
    finally:
        api.delete(sbid)


@pytest.mark.parametrize("entry", ["../up", "/tmp/abs", "ctxlink/through"])
def test_a_context_with_names_that_leave_it_is_refused(api, entry):
    mark = secrets.token_hex(6)
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        def add(path, data=b"x\n", kind=tarfile.REGTYPE, target=""):
            info = tarfile.TarInfo(path)
            info.type = kind
            info.linkname = target
            info.size = len(data) if kind == tarfile.REGTYPE else 0
            tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
        add("Dockerfile", b"FROM space:default\nCOPY . /ctx/\n")
        add("ctxlink", kind=tarfile.SYMTYPE, target="/tmp")
        add(f"{entry}-{mark}")
    with api.stream("POST", f"/v1/templates?name=escape-{mark}", raw=out.getvalue(), timeout=600) as s:
        events = list(s)
    assert not [n for n in os.listdir("/tmp") if mark in n]
    assert not os.path.exists(f"/up-{mark}") and not os.path.exists(f"/work/up-{mark}")
    assert events[-1]["type"] == "error" and "build context" in events[-1]["error"]["message"], events[-1]


def test_a_client_that_leaves_cancels_its_build_and_a_second_build_waits_for_the_first(api):
    mark = secrets.token_hex(3)  # a step no cache holds
    name = "waited-" + mark
    first = api.stream("POST", f"/v1/templates?name={name}",
                       raw=context_tar({"Dockerfile": f"FROM space:default\nRUN sleep 600 && echo {mark}\n"}), timeout=600)
    try:
        seen = []
        while not seen or not seen[-1].get("text", "").startswith("RUN sleep 600"):
            seen.append(first.next_event())
        second = api.stream("POST", f"/v1/templates?name={name}",
                            raw=context_tar({"Dockerfile": "FROM space:default\nENV X=1\n"}), timeout=600)
        assert second.next_event()["type"] == "waiting"
    finally:
        first.close()
    with second:
        events = list(second)
    assert done(events)["config"]["env"] == {"X": "1"}, events

    def build_sandboxes():
        return [s for s in api.ok("GET", "/v1/sandboxes")["sandboxes"] if s.get("metadata", {}).get("space.build")]
    wait_until(lambda: build_sandboxes() == [], 60, "the cancelled build's sandbox to go")


def test_builds_are_the_operators(make_daemon):
    port = free_port()
    d = make_daemon(listen=f"127.0.0.1:{port}")
    tenant = Api(tcp=("127.0.0.1", port), token=d.token("alice"))
    admin = Api(tcp=("127.0.0.1", port), token=d.token())
    assert tenant.json("POST", "/v1/templates?name=x", raw=b"")[0] == 403
    assert tenant.json("POST", "/v1/templates?name=x&source=oci-archive", raw=b"")[0] == 403
    assert tenant.json("DELETE", "/v1/templates/x/build")[0] == 403
    assert admin.json("PUT", "/v1/templates/x", {"key": "build-x", "source": "s", "config": {}})[0] == 403
    # a build's steps are the builder's alone, on the Unix socket
    assert admin.json("POST", "/v1/sandboxes", {"template": "build/" + "0" * 32})[0] == 404


def test_a_spaced_killed_during_a_build_leaves_no_template_and_no_orphan(make_daemon):
    d = make_daemon()
    mark = secrets.token_hex(3)
    s = d.api.stream("POST", f"/v1/templates?name=killed-{mark}",
                     raw=context_tar({"Dockerfile": f"FROM space:default\nRUN sleep 600 && echo {mark}\n"}), timeout=600)
    try:
        while not s.next_event().get("text", "").startswith("RUN sleep 600"):
            pass
        wait_until(lambda: [x for x in d.api.ok("GET", "/v1/sandboxes")["sandboxes"] if x["metadata"].get("space.build")],
                   120, "the step's sandbox")
        d.kill()
    finally:
        s.close()
    d.start()
    assert d.api.json("GET", f"/v1/templates/killed-{mark}")[0] == 404
    wait_until(lambda: d.api.ok("GET", "/v1/sandboxes")["sandboxes"] == [], 120, "the build's sandbox to go")
    assert not os.path.exists(os.path.join(d.state_dir, "builds"))


def test_a_sandbox_of_a_built_template_suspends_snapshots_and_forks(api):
    name = "lifecycle-" + secrets.token_hex(3)
    status, events = build(api, name, {"Dockerfile": "FROM space:default\nCOPY app.txt /srv/app.txt\n",
                                       "app.txt": "from the build\n"})
    done(events)
    sbid = api.create(template=name)
    made = [sbid]
    try:
        api.exec(sbid, "echo mine > /srv/mine.txt")
        api.ok("POST", f"/v1/sandboxes/{sbid}/suspend")
        assert api.exec(sbid, "cat /srv/app.txt /srv/mine.txt")["stdout"] == "from the build\nmine\n"
        snap = api.ok("POST", f"/v1/sandboxes/{sbid}/snapshot", {}, expect=(201,))
        forks = [f["id"] for f in api.ok("POST", f"/v1/sandboxes/{sbid}/fork", {"count": 1}, expect=(201,))["sandboxes"]]
        made += forks
        made.append(api.create(snapshot=snap["id"]))
        forks.append(made[-1])
        for other in forks:
            assert api.exec(other, "cat /srv/app.txt /srv/mine.txt")["stdout"] == "from the build\nmine\n"
        # in use: the template stays
        assert api.json("DELETE", f"/v1/templates/{name}")[0] == 409
        api.request("DELETE", f"/v1/snapshots/{snap['id']}")
    finally:
        for x in made:
            api.delete(x)


def test_a_build_cancelled_by_name_ends_its_stream_and_records_nothing(api, cli):
    name = "cancelled-" + secrets.token_hex(3)
    assert api.json("DELETE", f"/v1/templates/{name}/build")[0] == 404
    context = context_tar({"Dockerfile": f"FROM space:default\nRUN sleep 600 && echo {name}\n"})
    for _ in range(2):  # the second time, the step runs again: a cancelled step is not cached
        s = api.stream("POST", f"/v1/templates?name={name}", raw=context, timeout=600)
        try:
            while (step := s.next_event()).get("step") != 2:
                pass
            assert not step["cached"], step
            r = cli("template", "cancel", name)
            assert r.returncode == 0 and r.stdout == f"{name}\n", r.stderr
            events = list(s)
        finally:
            s.close()
        assert events[-1]["type"] == "error" and "cancelled" in events[-1]["error"]["message"], events[-1]
        assert api.json("GET", f"/v1/templates/{name}")[0] == 404

    def build_sandboxes():
        return [x for x in api.ok("GET", "/v1/sandboxes")["sandboxes"] if x["metadata"].get("space.build") == name]
    wait_until(lambda: build_sandboxes() == [], 60, "the cancelled build's sandbox to go")
    # the build ends once its builder, which removed that sandbox, has exited: from then on
    # there is nothing of that name to cancel
    wait_until(lambda: cli("template", "cancel", name).returncode != 0, 60, "the cancelled build to end")
    r = cli("template", "cancel", name)
    assert r.returncode != 0 and "no build of template" in r.stderr, r.stderr
    assert api.json("GET", f"/v1/templates/{name}")[0] == 404


def test_tags_name_versions_of_a_template_and_latest_is_the_name(api, cli):
    base = "tagged-" + secrets.token_hex(3)
    for tag, text in (("v1", "one"), ("v2", "two"), ("latest", "newest")):
        status, events = build(api, f"{base}:{tag}", {"Dockerfile": "FROM space:default\nCOPY v.txt /v.txt\n",
                                                      "v.txt": text + "\n"})
        done(events)
    names = {t["name"] for t in api.ok("GET", "/v1/templates")["templates"]}
    assert {base, f"{base}:v1", f"{base}:v2"} <= names and f"{base}:latest" not in names, names
    assert api.ok("GET", f"/v1/templates/{base}:latest")["name"] == base
    status, events = build(api, f"{base}-child", {"Dockerfile": f"FROM space:{base}:v1\nRUN cat /v.txt > /child.txt\n"})
    done(events)
    for tpl, want in ((f"{base}:v1", "one"), (f"{base}:v2", "two"), (base, "newest"), (f"{base}:latest", "newest"),
                      (f"{base}-child", "one")):
        sbid = api.create(template=tpl)
        try:
            assert api.exec(sbid, "cat /v.txt")["stdout"] == want + "\n", tpl
            assert api.ok("GET", f"/v1/sandboxes/{sbid}")["template"] == tpl.removesuffix(":latest")
        finally:
            api.delete(sbid)
    for bad in (f"{base}:", f"{base}:-x", f"{base}:a:b", f"{base}:a/b", "x" * 61 + ":v1"):
        status, body = build(api, bad, {"Dockerfile": "FROM space:default\n"})
        assert status == 400 and "NAME[:TAG]" in body["error"]["message"], (bad, body)
    # one tag goes, the others stay
    r = cli("template", "rm", f"{base}:v1", f"{base}-child")
    assert r.returncode == 0, r.stderr
    assert api.json("GET", f"/v1/templates/{base}:v1")[0] == 404
    assert api.ok("GET", f"/v1/templates/{base}:v2")["name"] == f"{base}:v2"


def test_a_build_from_an_image_reference_imports_it_once(api, images, registry):
    ref = f"{registry}/space-test/busybox:v1"
    run("skopeo", "--insecure-policy", "copy", "--quiet", "--dest-tls-verify=false", f"oci:{images['layout']}:v1",
        f"docker://{ref}")
    dockerfile = f"FROM {ref}\nRUN echo built > /tmp/built\n"
    name = "from-image-" + secrets.token_hex(3)
    status, events = build(api, name, {"Dockerfile": dockerfile})
    done(events)
    assert f"FROM {ref}: importing the image: making template image-" in output(events), events
    base = output(events).split("making template ")[1].split()[0]
    assert api.ok("GET", f"/v1/templates/{base}")["source"] == f"docker://{ref}"
    sbid = api.create(template=name)
    try:
        res = api.exec(sbid, "cat /etc/second.txt /tmp/built; echo $GREETING")
        assert res["stdout"] == "from the second layer\nbuilt\nhello from the image\n", res
    finally:
        api.delete(sbid)
    # the next build takes the image it has, as Docker does without --pull
    status, events = build(api, name + "-again", {"Dockerfile": dockerfile})
    done(events)
    assert "making template" not in output(events) and steps(events)[1][1], events


def test_packages_are_added_to_the_default_template_before_the_steps(api, cli, tmp_path):
    # python3 and bash are the default template's already: the set is the default's, and its
    # build is in the machine's cache (a set of new packages is built by mmdebstrap from the
    # host's apt sources, which no test reaches)
    name = "packaged-" + secrets.token_hex(3)
    write_context(str(tmp_path), {"Dockerfile": "RUN python3 -c 'print(6 * 7)' > /answer\n"})
    r = cli("template", "build", "-t", name, "--packages", "python3,bash,python3", str(tmp_path), timeout=600)
    assert r.returncode == 0, r.stderr
    assert "--packages python3,bash,python3: making template packages-" in r.stdout, r.stdout
    base = r.stdout.split("making template ")[1].split()[0]
    assert api.ok("GET", f"/v1/templates/{base}")["key"] == api.ok("GET", "/v1/templates/default")["key"]
    sbid = api.create(template=name)
    try:
        assert api.exec(sbid, "cat /answer")["stdout"] == "42\n"
    finally:
        api.delete(sbid)
    # refused: a package name Debian would not take, and packages on another base
    r = cli("template", "build", "-t", name, "--packages", "Python3", str(tmp_path))
    assert r.returncode != 0 and "not a Debian package name" in r.stderr, r.stderr
    write_context(str(tmp_path), {"Dockerfile": "FROM scratch\n"})
    r = cli("template", "build", "-t", name, "--packages", "bash", str(tmp_path))
    assert r.returncode != 0 and "--packages adds to the default template" in r.stderr, r.stderr

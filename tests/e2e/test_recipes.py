"""Templates built on first use from their recipes (daemon/core/recipe.h, docs/templates.md).

A create that names a template spaced does not have, but has a recipe for in its recipes
folder (--recipes; by default build/recipes, where `make` puts code-interpreter-v1's), waits
while the template is built, once for all the creates that come meanwhile. These tests use tiny
recipes of their own in a folder given with --recipes; tests/e2b/code_interpreter.test.mjs
creates code-interpreter-v1 in a spaced that does not have it.
"""

import json
import os
import secrets
import tempfile
import threading

from conftest import Api, free_port, wait_until
from spacetest import CREATE_TIMEOUT, ISOLATION, UnixHTTPConnection


def recipe(root, name, files):
    os.makedirs(os.path.join(root, name))
    for path, text in files.items():
        with open(os.path.join(root, name, path), "w") as f:
            f.write(text)


def send_create(d, template):
    """Sends a create of template to d; the connection, whose answer is read later."""
    conn = UnixHTTPConnection(d.socket, timeout=CREATE_TIMEOUT)
    conn.request("POST", "/v1/sandboxes", body=json.dumps({"template": template}),
                 headers={"Content-Type": "application/json"})
    return conn


def answer(conn):
    resp = conn.getresponse()
    body = json.loads(resp.read() or b"null")
    conn.close()
    return resp.status, body


def builds_of(d, name):
    """How many builds of name from its recipe spaced started (its log says so, with the folder)."""
    return d.log_tail(100000).count(f"building template {name} from its recipe /")


def test_creates_that_come_during_the_build_share_it(make_daemon):
    root = tempfile.mkdtemp(prefix="space-recipes-")
    mark = secrets.token_hex(4)
    name = f"recipe-{mark}"
    # the build's RUN step waits for the test's word, so that a second create comes while it runs
    recipe(root, name, {
        "Dockerfile": "FROM space:default\nCOPY hello.txt /etc/recipe-hello\n"
                      f"RUN while [ ! -e /tmp/go ]; do sleep 0.1; done; echo {mark} > /etc/recipe-run\n",
        "hello.txt": f"hello {mark}\n",
    })
    port = free_port()
    d = make_daemon(listen=f"127.0.0.1:{port}", args=["--recipes", root])
    assert d.api.json("GET", f"/v1/templates/{name}")[0] == 404
    first = send_create(d, name)
    step = wait_until(lambda: [x["id"] for x in d.api.ok("GET", "/v1/sandboxes")["sandboxes"]
                               if x["metadata"].get("space.build") == name and x["state"] == "running"],
                      300, "the build's step sandbox")[0]
    # a tenant's create over TCP, while the build runs: it waits for the same build
    tenant = Api(tcp=("127.0.0.1", port), token=d.token("alice"), io_timeout=CREATE_TIMEOUT)
    second = {}
    t = threading.Thread(target=lambda: second.update(r=tenant.json("POST", "/v1/sandboxes", {"template": name})))
    t.start()
    d.api.exec(step, "touch /tmp/go")
    status, sb = answer(first)
    t.join(CREATE_TIMEOUT)
    assert status == 201, sb
    assert second["r"][0] == 201, second["r"]
    for sbid in (sb["id"], second["r"][1]["id"]):
        out = d.api.exec(sbid, "cat /etc/recipe-hello /etc/recipe-run")
        assert out["stdout"] == f"hello {mark}\n{mark}\n", out
    assert builds_of(d, name) == 1
    # recorded as any template: the next create finds it, with no build
    assert d.api.ok("GET", f"/v1/templates/{name}")["name"] == name
    d.api.create(template=name)
    assert builds_of(d, name) == 1


def test_a_recipe_that_fails_fails_its_creates_and_is_tried_again(make_daemon):
    root = tempfile.mkdtemp(prefix="space-recipes-")
    name = f"broken-{secrets.token_hex(4)}"
    recipe(root, name, {"Dockerfile": "FROM space:default\nCOPY missing.txt /\n"})
    d = make_daemon(args=["--recipes", root])
    status, body = d.api.json("POST", "/v1/sandboxes", {"template": name}, timeout=CREATE_TIMEOUT)
    assert status == 500, body
    assert f"building template {name} from its recipe failed" in body["error"]["message"], body
    assert "missing.txt" in body["error"]["message"], body
    assert d.api.json("GET", f"/v1/templates/{name}")[0] == 404
    # fixed, the next create builds it
    with open(os.path.join(root, name, "missing.txt"), "w") as f:
        f.write("here\n")
    sbid = d.api.create(template=name)
    assert d.api.exec(sbid, "cat /missing.txt")["stdout"] == "here\n"
    assert builds_of(d, name) == 2
    # a name with no recipe is what it was: not found
    assert d.api.json("POST", "/v1/sandboxes", {"template": f"none-{secrets.token_hex(4)}"})[0] == 404


def interpreter_cell(api, sbid, language, code):
    """A cell of the code interpreter's server (port 49999), asked from inside the sandbox: its
    events."""
    prog = ("import json, sys, urllib.request\n"
            "r = urllib.request.Request('http://127.0.0.1:49999/execute', data=sys.stdin.buffer.read())\n"
            "print(urllib.request.urlopen(r, timeout=120).read().decode())\n")
    out = api.exec(sbid, ["python3", "-c", prog], stdin=json.dumps({"code": code, "language": language}))
    return [json.loads(line) for line in out["stdout"].splitlines() if line.strip()]


def test_code_interpreter_from_the_installed_recipe_survives_a_suspend(make_daemon):
    """code-interpreter-v1 from build/recipes (the default --recipes): a suspend saves its
    python, javascript, r and bash contexts (gVisor cannot save a listening TCP socket a thread
    waits on, nor an open deleted file: the kernels are started so as to hold neither)."""
    # the server's kernels start in seconds under gVisor, in minutes in a microVM under TCG
    # (no KVM here): its ready command gets 600 s there
    d = make_daemon(args=["--ready-timeout", "600"] if ISOLATION == "microvm" else [])
    sbid = d.api.ok("POST", "/v1/sandboxes", {"template": "code-interpreter-v1"}, expect=(201,),
                    timeout=3600)["id"]
    cells = {"python": ("kept = 'py'", "kept"), "javascript": ("let kept = 'js'", "kept"),
             "r": ("kept <- 'r'", "kept"), "bash": ("kept=sh", "echo $kept")}
    for language, (define, _) in cells.items():
        assert not [e for e in interpreter_cell(d.api, sbid, language, define) if e["type"] == "error"]
    assert d.api.ok("POST", f"/v1/sandboxes/{sbid}/suspend", timeout=900)["state"] == "suspended"
    assert d.api.ok("POST", f"/v1/sandboxes/{sbid}/resume", timeout=900)["state"] == "running"
    seen = {}
    for language, (_, read) in cells.items():
        events = interpreter_cell(d.api, sbid, language, read)
        seen[language] = [e.get("text") for e in events if e["type"] in ("result", "stdout")]
    assert seen == {"python": ["'py'"], "javascript": ["'js'"], "r": ['[1] "r"'], "bash": ["sh\n"]}, seen

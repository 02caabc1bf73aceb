"""Named templates: `spaced --template NAME=PKG[,PKG...]` makes a template holding the default
one's packages and those, and `space create --template NAME` starts from it.

Each test runs its own spaced. The first run on a machine builds the template with mmdebstrap
(a minute or two); it is cached by its inputs, as the default one is, so later runs and other
state dirs asking for the same packages reuse it.
"""

import json
import os
import subprocess

from conftest import SPACED, Cli


def test_named_template_holds_its_packages_and_shares_its_cache(make_daemon):
    d = make_daemon(args=["--template", "tools=file"])
    cli = Cli(f"unix://{d.socket}")

    t = cli("template", "ls", "--json")
    assert t.returncode == 0, t.stderr
    templates = {x["name"]: x for x in json.loads(t.stdout)}
    assert set(templates) == {"default", "tools"}, templates
    assert templates["tools"]["key"] != templates["default"]["key"]

    sbid = cli("create", "--template", "tools")
    assert sbid.returncode == 0, sbid.stderr
    sbid = sbid.stdout.strip()
    r = cli("exec", sbid, "--", "file", "-L", "/bin/sh")
    assert r.returncode == 0, r.stderr
    assert "ELF 64-bit" in r.stdout, r.stdout
    assert json.loads(cli("inspect", "--json", sbid).stdout)["template"] == "tools"

    # the default template has no `file`: the package came with the named one
    plain = cli("create")
    assert plain.returncode == 0, plain.stderr
    r = cli("exec", plain.stdout.strip(), "--", "sh", "-c", "command -v file")
    assert r.returncode != 0, r.stdout

    # the same package set under another name, in another state dir: the same cache entry
    other = make_daemon(args=["--template", "other=file,file"])
    t = Cli(f"unix://{other.socket}")("template", "ls", "--json")
    assert t.returncode == 0, t.stderr
    keys = {x["name"]: x["key"] for x in json.loads(t.stdout)}
    assert keys["other"] == templates["tools"]["key"], (keys, templates)


def test_spaced_refuses_bad_template_flags(tmp_path):
    """Each mistake ends spaced at start, before any build or socket, with a line naming it."""
    state = str(tmp_path)
    sock = os.path.join(state, "s.sock")

    def refused(*args):
        r = subprocess.run([SPACED, "--state-dir", state, "--socket", sock, *args], capture_output=True,
                           text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert r.returncode == 2, (args, r)
        return r.stderr

    assert "'default' is the template spaced always makes" in refused("--template", "default=file")
    assert "bad template name '../x'" in refused("--template", "../x=file")
    assert "'file;id' is not a Debian package name" in refused("--template", "x=file;id")
    assert "'$(id)' is not a Debian package name" in refused("--template", "x=$(id)")
    assert "'' is not a Debian package name" in refused("--template", "x=")
    assert "is not NAME=PKG" in refused("--template", "x")
    assert "x is named twice" in refused("--template", "x=file", "--template", "x=bash")
    assert not os.path.exists(sock)

"""`--version` on every program: the version it was built as, and exit status 0, without a
daemon, a sandbox or a network (docs/cli.md#space-version)."""

import os
import subprocess

from spacetest import BUILD, ROOT

PROGRAMS = ("spaced", "space-e2b", "space-build", "space-agent")


def version():
    with open(os.path.join(ROOT, "Makefile")) as f:
        return next(line.split(":=")[1].strip() for line in f if line.startswith("VERSION"))


def test_every_program_says_its_version():
    for name in PROGRAMS:
        r = subprocess.run([os.path.join(BUILD, name), "--version"], capture_output=True, text=True,
                           timeout=30, stdin=subprocess.DEVNULL)
        assert (r.returncode, r.stdout, r.stderr) == (0, f"{name} {version()}\n", ""), name
    r = subprocess.run([os.path.join(BUILD, "space"), "--version"], capture_output=True, text=True, timeout=30,
                       env={**os.environ, "SPACE_HOST": "unix:///nonexistent/space.sock"})
    assert r.stdout.splitlines()[0] == f"client: {version()}", r.stdout

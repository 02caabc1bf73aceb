"""The Debian packages space and python3-space (debian/; docs/spaced.md#the-debian-package):
what they hold, lintian's verdict, the unit's check by systemd-analyze, and an install into a
throwaway root where the programs and `import space` run.

`make deb-test` runs it; it builds the packages with `make deb` when build/deb/ has none
(SPACE_DEB_REBUILD=1: always). The throwaway root is a copy of the default template's root
filesystem in the machine's cache (Debian 12 minbase and python3; the cache itself is only
read), into which dpkg --root installs the packages and the libraries they link: those apt
would add there, from /var/cache/apt/archives, or else copied from the host's own install of
them. Nothing is fetched (tests/README.md), and the host's packages are never changed.

Run: /usr/bin/python3 -m pytest -q tests/deb
"""
import glob
import os
import re
import shutil
import subprocess
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEB_DIR = os.path.join(ROOT, "build", "deb")
TEMPLATES = "/var/cache/space/templates"
BUILD_TIMEOUT = 1800  # make deb: the whole build, from nothing
CMD_TIMEOUT = 600


def version():
    with open(os.path.join(ROOT, "Makefile")) as f:
        return next(line.split(":=")[1].strip() for line in f if line.startswith("VERSION"))


def run(*argv, timeout=CMD_TIMEOUT, check=True, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, **kw)
    if check:
        assert r.returncode == 0, f"{argv}: {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


@pytest.fixture(scope="module")
def debs():
    """{package: path of its .deb}, built now if need be."""
    def found():
        return {p: glob.glob(os.path.join(DEB_DIR, f"{p}_{version()}_*.deb")) for p in ("space", "python3-space")}
    if os.environ.get("SPACE_DEB_REBUILD") or not all(found().values()):
        run("make", "deb", cwd=ROOT, timeout=BUILD_TIMEOUT)
    got = found()
    assert all(len(v) == 1 for v in got.values()), got
    return {p: v[0] for p, v in got.items()}


def contents(deb):
    """{path: (mode string, link target or None)} of what deb holds (dpkg-deb -c)."""
    out = {}
    for line in run("dpkg-deb", "-c", deb).stdout.splitlines():
        mode, _, _, _, _, rest = line.split(None, 5)
        path, _, target = rest.partition(" -> ")
        out[path[1:].rstrip("/") or "/"] = (mode, target or None)
    return out


def field(deb, name):
    return run("dpkg-deb", "-f", deb, name).stdout.strip()


def test_space_holds_the_programs_beside_each_other(debs):
    c = contents(debs["space"])
    lib = "/usr/lib/space"
    for prog in ("spaced", "space-agent", "space-build", "space-e2b"):
        assert c[f"{lib}/{prog}"][0] == "-rwxr-xr-x", prog
    assert c["/usr/bin/space"][0] == "-rwxr-xr-x"
    assert c[f"{lib}/libspace-shim.so"][0] == "-rw-r--r--"
    # spaced finds the agent beside its real path: the link resolves into /usr/lib/space
    assert c["/usr/sbin/spaced"] == ("lrwxrwxrwx", "../lib/space/spaced")
    # the recipes make all puts beside the programs
    for f in os.listdir(os.path.join(ROOT, "sandbox", "interpreter")):
        assert f"{lib}/recipes/code-interpreter-v1/{f}" in c, f
    for path in ("/etc/space/spaced.conf", "/lib/systemd/system/spaced.service",
                 "/usr/share/bash-completion/completions/space", "/usr/share/man/man8/spaced.8.gz",
                 "/usr/share/man/man1/space.1.gz", "/usr/share/doc/space/copyright",
                 "/usr/share/doc/space/spaced.md.gz"):
        assert path in c, path
    ctl = tempfile.mkdtemp()
    try:
        run("dpkg-deb", "-e", debs["space"], ctl)
        with open(os.path.join(ctl, "conffiles")) as f:
            assert f.read().split() == ["/etc/space/spaced.conf"]
        for script in ("postinst", "postrm", "prerm"):
            assert os.access(os.path.join(ctl, script), os.X_OK), script
    finally:
        shutil.rmtree(ctl)
    assert field(debs["space"], "Version") == version()
    depends = {d.split()[0] for d in field(debs["space"], "Depends").split(", ")}
    assert {"runsc", "nftables", "mmdebstrap", "adduser", "libsystemd0", "libmicrohttpd12"} <= depends, depends
    assert "qemu-system-x86" in field(debs["space"], "Recommends")


def test_python3_space_holds_the_sdk(debs):
    c = contents(debs["python3-space"])
    sdk = os.path.join(ROOT, "sdk", "python", "space")
    for f in os.listdir(sdk):
        if not f.startswith("__pycache__"):
            assert f"/usr/lib/python3/dist-packages/space/{f}" in c, f
    assert field(debs["python3-space"], "Depends").startswith("python3:any")
    assert field(debs["python3-space"], "Architecture") == "all"


def test_lintian_has_nothing_to_say(debs):
    """Every tag lintian finds, pedantic and experimental ones included, is fixed or overridden
    with its reason (debian/space.lintian-overrides; docs/spaced.md)."""
    changes = glob.glob(os.path.join(DEB_DIR, f"space_{version()}_*.changes"))
    assert len(changes) == 1, changes
    r = run("lintian", "-EIL", "+pedantic", "--tag-display-limit", "0", changes[0], check=False, timeout=900)
    tags = [line for line in r.stdout.splitlines() if re.match(r"^[EWIPXO]: ", line)]
    assert tags == [] and r.returncode == 0, r.stdout + r.stderr


def test_the_config_file_names_every_option_commented_out(debs):
    d = tempfile.mkdtemp()
    try:
        run("dpkg-deb", "-x", debs["space"], d)
        with open(os.path.join(d, "etc/space/spaced.conf")) as f:
            lines = f.read().splitlines()
        # spaced --help names each option; those of the command line alone are not in the file
        usage = run(os.path.join(d, "usr/lib/space/spaced"), "--help").stdout.split(" token create")[0]
        options = set(re.findall(r"--([a-z][a-z0-9-]*)", usage)) - {"config"}
        assert len(options) > 20, usage
        named = {m.group(1) for m in map(re.compile(r"^#([a-z][a-z0-9-]*)( = |$)").match, lines) if m}
        assert options <= named, options - named
        assert not [line for line in lines if line.strip() and not line.startswith("#")], lines
    finally:
        shutil.rmtree(d)


def test_systemd_analyze_verifies_the_unit(debs):
    """systemd-analyze verify finds nothing to say of the unit: no unknown key, no bad value.
    It checks that ExecStart's program exists on this machine, and the extracted package is no
    system of units (--root wants sysinit.target there): the copy it reads names the extracted
    spaced, and is otherwise the packaged unit."""
    if not shutil.which("systemd-analyze"):
        pytest.skip("systemd-analyze is not on this machine")
    d = tempfile.mkdtemp()
    try:
        run("dpkg-deb", "-x", debs["space"], d)
        with open(os.path.join(d, "lib/systemd/system/spaced.service")) as f:
            text = f.read()
        unit = os.path.join(d, "spaced.service")
        with open(unit, "w") as f:
            f.write(re.sub(r"^ExecStart=/", f"ExecStart={d}/", text, flags=re.M))
        r = run("systemd-analyze", "verify", "--man=no", unit, check=False)
        assert r.returncode == 0 and not r.stderr.strip(), r.stderr
        for line in ("Type=notify", "KillMode=process", "Restart=on-failure", "ExecStart=/usr/sbin/spaced"):
            assert re.search(rf"^{re.escape(line)}$", text, re.M), line
    finally:
        shutil.rmtree(d)


def test_bash_completes_commands_and_options(debs):
    d = tempfile.mkdtemp()
    try:
        run("dpkg-deb", "-x", debs["space"], d)
        comp = os.path.join(d, "usr/share/bash-completion/completions/space")
        script = (f'source {comp}; COMP_WORDS=(space sn); COMP_CWORD=1; _space; echo "${{COMPREPLY[*]}}"; '
                  'COMP_WORDS=(space create --mem); COMP_CWORD=2; _space; echo "${COMPREPLY[*]}"; '
                  'COMP_WORDS=(space template ""); COMP_CWORD=2; _space; echo "${COMPREPLY[*]}"')
        env = dict(os.environ, PATH=f"{d}/usr/bin:/usr/bin:/bin", SPACE_HOST="unix:///nonexistent/space.sock")
        out = run("bash", "-c", script, env=env).stdout.splitlines()
        assert out == ["snapshot", "--memory", "ls inspect rm build import cancel"], out
    finally:
        shutil.rmtree(d)


# ---------------------------------------------------------------------------------------------
# the install into a throwaway root


def default_rootfs():
    """The default template's root filesystem in the machine's cache: of the templates made by
    mmdebstrap (keys of 64 hex digits) with python3, the one of fewest packages (the default is
    minbase and python3; the others add theirs), the newest of those."""
    found = []
    for d in glob.glob(os.path.join(TEMPLATES, "*", "rootfs")):
        key = os.path.basename(os.path.dirname(d))
        status = os.path.join(d, "var/lib/dpkg/status")
        if not re.fullmatch(r"[0-9a-f]{64}", key) or not os.path.exists(os.path.join(d, "usr/bin/python3")) \
                or not os.path.exists(status):
            continue
        with open(status) as f:
            n = sum(line.startswith("Package: ") for line in f)
        found.append((n, -os.stat(d).st_mtime, d))
    if not found:
        pytest.skip(f"no template in {TEMPLATES}: start spaced once (make up) to build the default one")
    return min(found)[2]


def host_version(name):
    r = run("dpkg-query", "-W", "-f", "${db:Status-Status} ${Version}", name, check=False)
    status, _, ver = r.stdout.partition(" ")
    return ver if r.returncode == 0 and status == "installed" else None


def libraries(root, deb):
    """What the space package's libraries (and adduser) add to root, as apt resolves them against
    root's dpkg status (with the host's package lists, offline): (the .deb files of those that
    /var/cache/apt/archives has, the names of the others). Those others are installed on the
    host (this Debian release, maybe at an older point release than apt's candidate), and their
    files are copied from there."""
    wanted = [d.split()[0] for d in field(deb, "Depends").split(", ")
              if d.startswith("lib") or d.startswith("adduser")]
    r = run("apt-get", "-s", "--no-install-recommends", "-o", f"Dir::State::status={root}/var/lib/dpkg/status",
            "install", *wanted)
    files, copies = [], []
    for m in re.finditer(r"^Inst (\S+) (?:\[\S+\] )?\((\S+) .*\[(\w+)\]\)", r.stdout, re.M):
        name, ver, arch = m.groups()
        path = os.path.join("/var/cache/apt/archives", f"{name}_{ver.replace(':', '%3a')}_{arch}.deb")
        if os.path.exists(path):
            files.append(path)
        elif host_version(name):
            copies.append(name)
        else:
            pytest.skip(f"{name}, which the packages need, is neither in /var/cache/apt/archives nor installed "
                        "here: the test fetches nothing")
    return files, copies


def copy_from_host(root, name):
    """The libraries of the host's installed package name (its files under /usr/lib and /lib, not
    its documents, which the template's root keeps none of), into root."""
    paths = [p for p in run("dpkg", "-L", name).stdout.splitlines()
             if p.startswith(("/usr/lib/", "/lib/")) and (os.path.islink(p) or os.path.isfile(p))]
    run("cp", "-a", "--parents", "-t", root, *[p[1:] for p in paths], cwd="/")


@pytest.fixture(scope="module")
def installed(debs):
    """A copy of the default template's root with both packages installed by dpkg --root."""
    src = default_rootfs()
    root = tempfile.mkdtemp(prefix="space-deb-")
    try:
        run("cp", "-a", "--reflink=auto", f"{src}/.", root)
        files, copies = libraries(root, debs["space"])
        for name in copies:
            copy_from_host(root, name)
        if files:
            run("dpkg", f"--root={root}", "--force-depends", "-i", *files)
        run("chroot", root, "ldconfig")
        # runsc, nftables, mmdebstrap...: not needed to run the programs here, so not installed
        run("dpkg", f"--root={root}", "--force-depends", "-i", debs["space"], debs["python3-space"])
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def chroot(root, *argv):
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SPACE_HOST": "unix:///nonexistent/space.sock"}
    return run("chroot", root, *argv, env=env)


def test_the_programs_and_the_sdk_run_where_installed(installed):
    assert chroot(installed, "spaced", "--version").stdout == f"spaced {version()}\n"
    assert chroot(installed, "space", "--version").stdout.splitlines()[0] == f"client: {version()}"
    for prog in ("space-agent", "space-build", "space-e2b"):
        assert chroot(installed, f"/usr/lib/space/{prog}", "--version").stdout == f"{prog} {version()}\n"
    r = chroot(installed, "/usr/bin/python3", "-c", "import space; print(space.__file__)")
    assert r.stdout.strip() == "/usr/lib/python3/dist-packages/space/__init__.py"
    # the postinst made the socket's group and enabled the unit, and started nothing: no systemd
    with open(os.path.join(installed, "etc/group")) as f:
        assert any(line.startswith("space:") for line in f)
    wants = os.path.join(installed, "etc/systemd/system/multi-user.target.wants/spaced.service")
    assert os.readlink(wants) == "/lib/systemd/system/spaced.service"
    status = run("dpkg", f"--root={installed}", "-s", "space").stdout
    assert "Status: install ok installed" in status, status


def test_purge_removes_the_state_and_the_cache(installed):
    for d in ("var/lib/space/sandboxes", "var/cache/space/templates"):
        os.makedirs(os.path.join(installed, d))
    with open(os.path.join(installed, "var/lib/space/state.db"), "w") as f:
        f.write("state")
    run("dpkg", f"--root={installed}", "--purge", "python3-space", "space")
    for d in ("var/lib/space", "var/cache/space", "etc/space/spaced.conf", "usr/lib/space"):
        assert not os.path.exists(os.path.join(installed, d)), d

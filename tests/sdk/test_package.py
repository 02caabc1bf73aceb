"""The package itself: standard library only, documented, installable offline, Python 3.9."""

import ast
import glob
import inspect
import os
import re
import shutil
import subprocess
import sys

import pytest

import space
from conftest import ROOT, SDK

PKG = os.path.join(SDK, "space")
DOC = os.path.join(ROOT, "docs", "sdk-python.md")


def modules():
    return sorted(os.path.join(PKG, f) for f in os.listdir(PKG) if f.endswith(".py"))


def test_only_the_standard_library_is_imported():
    stdlib = set(sys.stdlib_module_names)
    for path in modules():
        tree = ast.parse(open(path).read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in stdlib, f"{os.path.basename(path)} imports {name}"


def public_members():
    """(qualified name, object) for every public name and every public method or property."""
    for name in space.__all__:
        obj = getattr(space, name)
        yield name, obj
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr != "__init__":
                    continue
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if callable(member) or isinstance(member, property):
                    yield f"{name}.{attr}", member


def test_every_public_name_has_a_docstring():
    missing = [q for q, obj in public_members() if not (inspect.getdoc(obj) or "").strip()]
    assert not missing, missing


def test_the_documentation_covers_every_public_name():
    doc = open(DOC).read()
    missing = []
    for q, _ in public_members():
        short = q.split(".")[-1]
        if short == "__init__":
            continue
        if not re.search(r"\b%s\b" % re.escape(short), doc):
            missing.append(q)
    assert not missing, f"docs/sdk-python.md does not mention {missing}"


def test_import_from_the_tree():
    env = dict(os.environ, PYTHONPATH=SDK)
    r = subprocess.run([sys.executable, "-c", "import space; print(space.__version__)"], capture_output=True,
                       text=True, env=env, cwd="/")
    assert r.returncode == 0 and r.stdout.strip() == space.__version__, r.stderr


def test_make_up_makes_it_importable_for_debians_python(tmp_path):
    """scripts/sdk_path.sh (run by `make up`) writes a .pth naming sdk/python into a site folder
    of /usr/bin/python3's: there, `import space` finds the tree's SDK with no PYTHONPATH."""
    script = os.path.join(ROOT, "scripts", "sdk_path.sh")
    r = subprocess.run([script, "--dir"], capture_output=True, text=True, check=True)
    default = r.stdout.strip()
    r = subprocess.run(["/usr/bin/python3", "-c", "import site; print('\\n'.join(site.getsitepackages()))"],
                       capture_output=True, text=True, check=True)
    assert default in r.stdout.split("\n") and default.startswith("/usr/local/"), (default, r.stdout)

    site_dir = tmp_path / "site"
    subprocess.run([script, str(site_dir)], capture_output=True, check=True)
    assert (site_dir / "space-sdk.pth").read_text() == SDK + "\n"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = f"import site; site.addsitedir({str(site_dir)!r}); import space; print(space.__file__)"
    # -S: only the site folder written here, not one another checkout's `make up` wrote into
    # this machine's /usr/local (which would find that checkout's SDK first)
    r = subprocess.run(["/usr/bin/python3", "-S", "-c", code], capture_output=True, text=True, env=env,
                       cwd=str(tmp_path))
    assert r.returncode == 0 and r.stdout.strip() == os.path.join(SDK, "space", "__init__.py"), r.stderr


def test_pip_installs_offline(tmp_path):
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        pytest.skip("pip is not installed for " + sys.executable)
    src = tmp_path / "src"
    shutil.copytree(SDK, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                        "--target", str(target), str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    env = dict(os.environ, PYTHONPATH=str(target))
    r = subprocess.run([sys.executable, "-c", "import space, space.code as c; print(space.__file__);"
                        "print('KeyboardInterrupt' in c.server_source())"],
                       capture_output=True, text=True, env=env, cwd="/")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(target / "space" / "__init__.py"), "True"]


def python39():
    cands = [shutil.which("python3.9")] + sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.9*/bin/python3")))
    for path in cands:
        if path:
            r = subprocess.run([path, "-c", "import sys; print(sys.version_info[:2] == (3, 9))"],
                               capture_output=True, text=True)
            if r.stdout.strip() == "True":
                return path
    return None


def test_works_on_python_3_9(spaced):
    py = python39()
    if not py:
        pytest.skip("no Python 3.9 interpreter on this machine")
    script = (
        "from space import Sandbox\n"
        "with Sandbox.create() as sb:\n"
        "    assert sb.commands.run('echo hi').stdout == 'hi\\n'\n"
        "    sb.run_code('x = 40')\n"
        "    assert sb.run_code('x + 2').text == '42'\n"
        "    sb.files.write('/work/f', b'data')\n"
        "    assert sb.files.read('/work/f') == 'data'\n"
        "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=SDK, SPACE_HOST=spaced.host)
    r = subprocess.run([py, "-c", script], capture_output=True, text=True, env=env, cwd="/", timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr

"""Runs the E2B suite (tests/e2b/*.test.mjs, Node's own test runner) against a private spaced
with an E2B front, driven by E2B's unmodified JavaScript SDK.

The SDK (e2b@SDK_VERSION from the npm registry) is installed once per machine into
SPACE_E2B_SDK_DIR (default /var/cache/space/e2b-js/<version>), outside the checkout: a fresh
machine installs it, a warm one reuses it. E2B's Code Interpreter SDK (@e2b/code-interpreter@
CI_SDK_VERSION) is installed the same way into SPACE_E2B_CI_SDK_DIR (default
/var/cache/space/e2b-js/code-interpreter-<version>). Template code-interpreter-v1 is not built
here: the private spaced starts without it, and the SDK's first create builds it from its recipe
(build/recipes/code-interpreter-v1, docs/templates.md), as on any spaced; the build's steps and
Debian packages come from the machine's cache after the first time. The tests get the three variables an E2B program
needs (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY: a token of tenant "e2b"), SPACE_OTHER_KEY
(a token of another tenant), and SPACE_SOCKET, the administrator's socket, to look behind the
front. spaced runs its port proxy on a loopback port: the sandboxes' E2B domain, from
which getHost(port) makes a host that reaches their ports.

SPACE_TEST_ISOLATION=microvm runs every sandbox of the suite as a microVM (spacetest.Daemon
gives spaced --isolation, as for the pytest suites); the tests see the same variable, for what
differs by kind (sudo under gVisor's no_new_privs). `make e2b-test-vm` runs the files whose
behaviour depends on the kind that way (E2B_VM_TESTS in the Makefile).

Run: /usr/bin/python3 tests/e2b/run.py [node --test arguments, e.g. a file]
"""

import fcntl
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))

import spacetest  # noqa: E402

SDK_VERSION = "2.51.0"
SDK_DIR = os.environ.get("SPACE_E2B_SDK_DIR", f"/var/cache/space/e2b-js/{SDK_VERSION}")
CI_SDK_VERSION = "2.8.0"
CI_SDK_DIR = os.environ.get("SPACE_E2B_CI_SDK_DIR", f"/var/cache/space/e2b-js/code-interpreter-{CI_SDK_VERSION}")
SUITE_TIMEOUT = 1800


def sdk_ready(sdk_dir, package, version):
    try:
        with open(os.path.join(sdk_dir, "node_modules", package, "package.json")) as f:
            return json.load(f)["version"] == version
    except (OSError, ValueError, KeyError):
        return False


def ensure_sdk(sdk_dir, package, version):
    """Installs package@version into sdk_dir unless it is there; one installer at a time."""
    os.makedirs(os.path.dirname(sdk_dir), exist_ok=True)
    with open(sdk_dir + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if sdk_ready(sdk_dir, package, version):
            return
        tmp = tempfile.mkdtemp(prefix="e2b-js-", dir=os.path.dirname(sdk_dir))
        with open(os.path.join(tmp, "package.json"), "w") as f:
            json.dump({"name": "space-e2b-tests", "private": True}, f)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", f"{package}@{version}"],
                       cwd=tmp, check=True, timeout=600)
        shutil.rmtree(sdk_dir, ignore_errors=True)
        os.rename(tmp, sdk_dir)


def main():
    ensure_sdk(SDK_DIR, "e2b", SDK_VERSION)
    files = sys.argv[1:] or sorted(glob.glob(os.path.join(HERE, "*.test.mjs")))
    interpreter = any("code_interpreter" in f for f in files)
    if interpreter:
        ensure_sdk(CI_SDK_DIR, "@e2b/code-interpreter", CI_SDK_VERSION)
    port, proxy_port = spacetest.free_port(), spacetest.free_port()
    # the port proxy on loopback: getHost(port) reaches a sandbox's ports through it
    d = spacetest.Daemon(prefix="space-e2b-", args=["--e2b-listen", f"127.0.0.1:{port}",
                                                    "--proxy-listen", f"127.0.0.1:{proxy_port}"])
    d.start()
    print(f"E2B suite: sandboxes are {spacetest.ISOLATION or 'gvisor'} (spaced's --isolation)", flush=True)
    try:
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "E2B_API_URL": url, "E2B_SANDBOX_URL": url, "E2B_API_KEY": d.token("e2b"),
               "SPACE_SOCKET": d.socket, "SPACE_E2B_SDK": os.path.join(SDK_DIR, "node_modules", "e2b"),
               "SPACE_OTHER_KEY": d.token("other"),
               "SPACE_E2B_CI_SDK": os.path.join(CI_SDK_DIR, "node_modules", "@e2b", "code-interpreter")}
        # The SDKs keep HTTP connections alive after a file's last test, and a file waits for
        # them; where node can, it ends once every test has (node >= 20.14).
        force = ["--test-force-exit"] if subprocess.run(["node", "--test-force-exit", "-e", ""],
                                                         capture_output=True).returncode == 0 else []
        r = subprocess.run(["node", "--test", *force, "--test-reporter=spec", *files], env=env, timeout=SUITE_TIMEOUT)
        if r.returncode != 0:
            print(f"spaced's log ({d.log_path}), the end:\n{d.log_tail(60)}")
        return r.returncode
    finally:
        d.stop()


if __name__ == "__main__":
    sys.exit(main())

"""A registry on loopback holding a small image, for the E2B suite's fromImage test: makes the
busybox image of tests/support/images.py, starts Debian's docker-registry on a free loopback
port, pushes the image there with skopeo, prints `ready HOST:PORT/space-test/busybox:v1`, and
stops the registry and removes its files once its standard input closes (the test ended).

Run by tests/e2b/template_build.test.mjs: /usr/bin/python3 tests/e2b/registry.py
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))

from images import busybox_image, run  # noqa: E402

REGISTRY_START_S = 60


def main():
    top = tempfile.mkdtemp(prefix="e2b-registry-")
    proc = None
    try:
        image = busybox_image(top)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        conf = os.path.join(top, "registry.yml")
        with open(conf, "w") as f:
            f.write(f"version: 0.1\nlog: {{level: error}}\nstorage: {{filesystem: {{rootdirectory: {top}/store}}}}\n"
                    f"http: {{addr: 127.0.0.1:{port}}}\n")
        proc = subprocess.Popen(["docker-registry", "serve", conf], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + REGISTRY_START_S
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("docker-registry did not start")
                time.sleep(0.1)
        ref = f"127.0.0.1:{port}/space-test/busybox:v1"
        run("skopeo", "--insecure-policy", "copy", "--quiet", "--dest-tls-verify=false", f"oci:{image['layout']}:v1",
            f"docker://{ref}")
        print(f"ready {ref}", flush=True)
        sys.stdin.read()
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=30)
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()

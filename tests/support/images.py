"""A container image made on this machine, for the tests that import images: Debian's static
busybox in two layers (the second deletes a file of the first: a whiteout, and adds one), made
with umoci, with an environment, a working folder, a user and a command in its config."""

import os
import shutil
import subprocess

import pytest


def run(*argv, cwd=None):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=cwd)
    assert r.returncode == 0, (argv, r.stdout, r.stderr)
    return r.stdout


def busybox_image(top):
    """Makes the image under folder top: {"layout": its OCI layout (tag v1), "oci": an OCI
    archive of it, "docker": a docker archive}. Skips the test without umoci, skopeo or busybox."""
    for tool in ("umoci", "skopeo", "busybox"):
        if not shutil.which(tool):
            pytest.skip(f"needs {tool} (make deps installs it)")
    layout, bundle = os.path.join(top, "layout"), os.path.join(top, "bundle")
    run("umoci", "init", "--layout", layout)
    run("umoci", "new", "--image", f"{layout}:v1")
    # the first layer: busybox and its commands, and two files of /etc
    run("umoci", "unpack", "--image", f"{layout}:v1", bundle)
    root = os.path.join(bundle, "rootfs")
    for d in ("bin", "etc", "srv", "tmp"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    shutil.copy(shutil.which("busybox"), os.path.join(root, "bin", "busybox"))
    for cmd in ("sh", "cat", "ls", "env", "id", "pwd", "true", "echo"):
        os.symlink("busybox", os.path.join(root, "bin", cmd))
    with open(os.path.join(root, "etc", "hello.txt"), "w") as f:
        f.write("from the first layer\n")
    with open(os.path.join(root, "etc", "gone.txt"), "w") as f:
        f.write("deleted by the second layer\n")
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    run("umoci", "repack", "--image", f"{layout}:v1", bundle)
    shutil.rmtree(bundle)
    # the second: one file gone, one new
    run("umoci", "unpack", "--image", f"{layout}:v1", bundle)
    os.unlink(os.path.join(bundle, "rootfs", "etc", "gone.txt"))
    with open(os.path.join(bundle, "rootfs", "etc", "second.txt"), "w") as f:
        f.write("from the second layer\n")
    run("umoci", "repack", "--image", f"{layout}:v1", bundle)
    run("umoci", "config", "--image", f"{layout}:v1", "--config.env", "GREETING=hello from the image",
        "--config.env", "PATH=/bin", "--config.workingdir", "/srv", "--config.user", "1000:1000",
        "--config.cmd", "sh")
    oci_archive = os.path.join(top, "image.oci.tar")
    run("tar", "-C", layout, "-cf", oci_archive, ".")
    docker_archive = os.path.join(top, "image.docker.tar")
    run("skopeo", "--insecure-policy", "copy", "--quiet", f"oci:{layout}:v1",
        f"docker-archive:{docker_archive}:space-test/busybox:v1")
    return {"oci": oci_archive, "docker": docker_archive, "layout": layout}

"""TLS on the TCP listener: spaced --listen with --tls-cert/--tls-key speaks only https there,
and the CLI (SPACE_CA) and the SDK (SPACE_CA or ca=) verify its certificate, failing with a
clear error, never falling back to plain HTTP, when they cannot.

The certificates are made here with the openssl command: a private CA and a certificate for
127.0.0.1 and localhost that it signed, and a second CA that signed nothing of spaced's.
"""

import http.client
import os
import subprocess
import sys

import pytest

from conftest import ROOT, SPACED, Cli, Daemon, free_port

sys.path.insert(0, os.path.join(ROOT, "sdk", "python"))

import space  # noqa: E402  (the SDK, from the tree)


def openssl(*args, cwd):
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def make_ca(d, name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2", "-subj", f"/CN=space test {name}",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            cwd=d)
    return os.path.join(d, f"{name}.pem")


def make_server_cert(d, ca):
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
                "authorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "server.key",
            "-out", "server.csr", "-subj", "/CN=localhost", cwd=d)
    openssl("x509", "-req", "-in", "server.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "2", "-extfile", "server.ext", cwd=d)
    return os.path.join(d, "server.pem"), os.path.join(d, "server.key")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("tls"))
    ca = make_ca(d, "ca")
    other = make_ca(d, "other")
    cert, key = make_server_cert(d, "ca")
    return {"ca": ca, "other": other, "cert": cert, "key": key, "dir": d}


@pytest.fixture(scope="module")
def tls(certs):
    """One spaced with TLS on its TCP listener, its port and a token, for the module."""
    port = free_port()
    d = Daemon(listen=f"127.0.0.1:{port}", args=["--tls-cert", certs["cert"], "--tls-key", certs["key"]])
    try:
        d.start()
        yield d, port, d.token("tls")
    finally:
        d.cleanup()


def test_the_cli_works_over_https_with_space_ca(tls, certs):
    d, port, token = tls
    for host in (f"https://127.0.0.1:{port}", f"https://localhost:{port}"):
        cli = Cli(host, token)
        env = {"SPACE_CA": certs["ca"]}
        r = cli("create", env=env)
        assert r.returncode == 0, r.stderr
        sbid = r.stdout.strip()
        r = cli("exec", sbid, "--", "echo", "over tls", env=env)
        assert (r.returncode, r.stdout) == (0, "over tls\n"), r.stderr
        r = cli("rm", sbid, env=env)
        assert r.returncode == 0, r.stderr
        assert d.api.json("GET", f"/v1/sandboxes/{sbid}")[0] == 404


def test_the_cli_refuses_a_certificate_it_cannot_verify(tls, certs):
    """Without SPACE_CA (the system's CAs know nothing of it) or with a CA that did not sign it,
    the CLI says it cannot verify the certificate, and does nothing."""
    d, port, token = tls
    cli = Cli(f"https://127.0.0.1:{port}", token)
    before = d.api.ok("GET", "/v1/sandboxes")["sandboxes"]
    for env in ({}, {"SPACE_CA": certs["other"]}):
        r = cli("create", env=env)
        assert r.returncode != 0 and r.stdout == "", (env, r)
        assert "cannot verify the certificate" in r.stderr, (env, r.stderr)
    assert d.api.ok("GET", "/v1/sandboxes")["sandboxes"] == before
    # a CA given for plain http is refused, not ignored
    r = Cli(f"http://127.0.0.1:{port}", token)("ls", env={"SPACE_CA": certs["ca"]})
    assert r.returncode != 0 and "not https://" in r.stderr, r


def test_plain_http_to_the_tls_port_gets_no_api_answer(tls):
    d, port, token = tls
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        with pytest.raises((http.client.HTTPException, OSError)):
            c.request("GET", "/v1/sandboxes", headers={"Authorization": f"Bearer {token}"})
            c.getresponse()
    finally:
        c.close()
    r = Cli(f"http://127.0.0.1:{port}", token)("ls")
    assert r.returncode != 0 and r.stdout == "", r


def test_the_sdk_works_over_https_with_a_ca_and_refuses_without(tls, certs, monkeypatch):
    d, port, token = tls
    host = f"https://127.0.0.1:{port}"
    monkeypatch.delenv("SPACE_CA", raising=False)
    with space.Sandbox.create(host=host, token=token, ca=certs["ca"]) as sb:
        assert sb.commands.run("echo sdk over tls").stdout == "sdk over tls\n"
        monkeypatch.setenv("SPACE_CA", certs["ca"])
        assert [i.id for i in space.Sandbox.list(host=host, token=token)] == [sb.id]
        monkeypatch.delenv("SPACE_CA")
        for ca in (None, certs["other"]):
            with pytest.raises(space.ConnectionError) as e:
                space.Sandbox.list(host=host, token=token, ca=ca)
            assert "cannot verify the certificate" in str(e.value), e.value
        with pytest.raises(space.InvalidArgumentError):
            space.Sandbox.list(host=f"http://127.0.0.1:{port}", token=token, ca=certs["ca"])


def spaced_refuses(state_dir, *args):
    r = subprocess.run([SPACED, "--state-dir", state_dir, "--socket", os.path.join(state_dir, "s.sock"), *args],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode != 0, (args, r)
    return r.stderr


def test_spaced_refuses_half_a_pair_or_files_it_cannot_use(certs, tmp_path):
    """Each mistake ends spaced at start (before the template, the sandboxes, the sockets) with
    a line that names it."""
    listen = ["--listen", f"127.0.0.1:{free_port()}"]
    cert, key = certs["cert"], certs["key"]
    missing = os.path.join(certs["dir"], "missing.pem")
    state = str(tmp_path)
    assert "--tls-cert is given without --tls-key" in spaced_refuses(state, *listen, "--tls-cert", cert)
    assert "--tls-key is given without --tls-cert" in spaced_refuses(state, *listen, "--tls-key", key)
    assert "give --listen" in spaced_refuses(state, "--tls-cert", cert, "--tls-key", key)
    err = spaced_refuses(state, *listen, "--tls-cert", missing, "--tls-key", key)
    assert missing in err and "No such file" in err, err
    err = spaced_refuses(state, *listen, "--tls-cert", key, "--tls-key", key)
    assert "holds no PEM certificate" in err, err
    err = spaced_refuses(state, *listen, "--tls-cert", cert, "--tls-key", cert)
    assert "holds no PEM private key" in err, err
    assert not os.path.exists(os.path.join(state, "s.sock"))

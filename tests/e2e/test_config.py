"""spaced's configuration file (daemon/config.h): `name = value` lines of its long flags, read
before the command line, whose flags win; every mistake ends spaced at start with the file, the
line and what is wrong."""
import http.client
import json
import os
import subprocess

from conftest import SPACED, free_port

CONFIG_LINE_MAX = 4096  # daemon/config.h


def health(port):
    """The status of /v1/health on a TCP listener (401 without a token), or None if none listens."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("GET", "/v1/health")
        return c.getresponse().status
    except OSError:
        return None
    finally:
        c.close()


def test_the_file_is_applied_and_the_command_line_wins(make_daemon, tmp_path):
    from_file, from_flag, only_file = free_port(), free_port(), free_port()
    conf = tmp_path / "spaced.conf"
    conf.write_text(f"# made by the test\n\nlisten = 127.0.0.1:{from_file}   # overridden below\n"
                    f"no-auto-resume\nproxy-listen=127.0.0.1:{only_file}\n")
    d = make_daemon(args=["--config", str(conf), "--listen", f"127.0.0.1:{from_flag}"])
    assert health(from_flag) == 401          # the flag's value: a listener, which wants a token
    assert health(from_file) is None         # not the file's, which it replaced
    sb = d.api.create()
    assert d.api.ok("GET", f"/v1/sandboxes/{sb}")["auto_resume"] is False  # the file's flag
    # the file's proxy listener answers (a Host naming no sandbox: 404 of its own)
    c = http.client.HTTPConnection("127.0.0.1", only_file, timeout=30)
    c.request("GET", "/", headers={"Host": "nothing.localhost"})
    assert c.getresponse().status == 404
    c.close()


def test_every_mistake_names_its_line(tmp_path):
    state = str(tmp_path / "state")
    sock = os.path.join(str(tmp_path), "s.sock")

    def refused(text):
        conf = tmp_path / "bad.conf"
        conf.write_bytes(text.encode() if isinstance(text, str) else text)
        r = subprocess.run([SPACED, "--config", str(conf), "--state-dir", state, "--socket", sock],
                           capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert r.returncode == 2, (text, r)
        assert not os.path.exists(sock)  # ended before any socket
        return r.stderr

    assert f"{tmp_path}/bad.conf:3: unknown option 'bogus'" in refused("# x\ndns-port = 5353\nbogus = 1\n")
    assert "bad.conf:1: --dns-port wants a whole number from 1 to 65535, not 0" in refused("dns-port = 0\n")
    assert "bad.conf:2: listen wants a value" in refused("\nlisten\n")
    assert "bad.conf:1: no-auto-resume is a flag" in refused("no-auto-resume = maybe\n")
    assert "bad.conf:1: unknown option 'config'" in refused("config = /etc/other\n")
    assert "bad.conf:2: a NUL byte" in refused(b"dns-port = 5353\ndns-port\x00 = 1\n")
    # a line at the bound is read; one past it is refused
    at_edge = "template = t=" + "x" * (CONFIG_LINE_MAX - len("template = t=") - 1) + "\n"
    assert len(at_edge) == CONFIG_LINE_MAX and "a line is at most" not in refused(at_edge)
    assert f"bad.conf:1: a line is at most {CONFIG_LINE_MAX} bytes" in refused(at_edge[:-1] + "x\n")


def test_a_config_file_that_is_not_there(tmp_path):
    missing = tmp_path / "none.conf"
    r = subprocess.run([SPACED, "--config", str(missing), "--state-dir", str(tmp_path)], capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and f"{missing}: No such file or directory" in r.stderr, r

"""Bad requests get a 4xx with {"error": {"code", "message"}}, and nothing
else notices: after each one the daemon still answers and a neighbour
sandbox still runs commands (docs/api.md, "Conventions").
"""

import subprocess

import pytest

from conftest import SPACED, Api, assert_alive, free_port, q

UNKNOWN_ID = "0123456789ab"


def check_error(status, body, want_status, want_code, mentions=None):
    assert status == want_status, (status, body)
    assert isinstance(body, dict) and set(body) == {"error"}, body
    err = body["error"]
    assert err["code"] == want_code, err
    assert isinstance(err["message"], str) and err["message"], err
    if mentions:
        assert mentions in err["message"], err


@pytest.fixture
def after(api, neighbour):
    """Checks, after the test's bad request, that the daemon and the neighbour carry on."""
    yield
    assert_alive(api, neighbour)


def raw_json(api, method, path, text):
    return api.json(method, path, raw=text.encode() if isinstance(text, str) else text,
                    headers={"Content-Type": "application/json"})


def test_malformed_json(api, neighbour, after):
    for text in ('{"cpus": ', "not json", '{"cpus": 1,}', "[1, 2]", '"a string"'):
        status, body = raw_json(api, "POST", "/v1/sandboxes", text)
        check_error(status, body, 400, "invalid_argument")
        status, body = raw_json(api, "POST", f"/v1/sandboxes/{neighbour}/exec", text)
        check_error(status, body, 400, "invalid_argument")


def test_unknown_field_is_named(api, neighbour, after):
    status, body = api.json("POST", "/v1/sandboxes", {"cpu": 2})
    check_error(status, body, 400, "invalid_argument", mentions="cpu")
    status, body = api.json("POST", f"/v1/sandboxes/{neighbour}/exec", {"cmd": ["true"], "comand": "x"})
    check_error(status, body, 400, "invalid_argument", mentions="comand")


def test_wrong_type_is_named(api, neighbour, after):
    status, body = api.json("POST", "/v1/sandboxes", {"cpus": "two"})
    check_error(status, body, 400, "invalid_argument", mentions="cpus")
    status, body = api.json("POST", f"/v1/sandboxes/{neighbour}/exec", {"cmd": [1, 2]})
    check_error(status, body, 400, "invalid_argument", mentions="cmd")
    status, body = api.json("POST", f"/v1/sandboxes/{neighbour}/exec", {"cmd": ["true"], "timeout": "5"})
    check_error(status, body, 400, "invalid_argument", mentions="timeout")
    status, body = api.json("POST", f"/v1/sandboxes/{neighbour}/exec", {"cmd": ["true"], "env": {"A": 1}})
    check_error(status, body, 400, "invalid_argument", mentions="env")


def test_missing_cmd(api, neighbour, after):
    status, body = api.json("POST", f"/v1/sandboxes/{neighbour}/exec", {})
    check_error(status, body, 400, "invalid_argument", mentions="cmd")


def test_unknown_sandbox_is_404(api, after):
    for method, tail, body in (("GET", "", None), ("DELETE", "", None), ("POST", "/exec", {"cmd": ["true"]}),
                               ("GET", "/processes", None), ("GET", f"/files?path={q('/work')}", None)):
        status, answer = api.json(method, f"/v1/sandboxes/{UNKNOWN_ID}{tail}", body)
        check_error(status, answer, 404, "not_found")


def test_body_over_one_mib_is_413(api, neighbour, after):
    big = {"cmd": ["echo", "x" * (1 << 20)]}
    status, body = api.json("POST", f"/v1/sandboxes/{neighbour}/exec", big)
    check_error(status, body, 413, "too_large")
    status, body = api.json("POST", "/v1/sandboxes", {"metadata": {"k": "v" * (2 << 20)}})
    check_error(status, body, 413, "too_large")


def test_path_with_a_nul_byte_is_400(api, neighbour, after):
    for tail in ("", "/stat", "/list"):
        status, body = api.json("GET", f"/v1/sandboxes/{neighbour}/files{tail}?path=/work/a%00b")
        check_error(status, body, 400, "invalid_argument")
    status, body = api.json("PUT", f"/v1/sandboxes/{neighbour}/files?path=/work/a%00b", raw=b"data")
    check_error(status, body, 400, "invalid_argument")
    status, body = api.json("POST", f"/v1/sandboxes/{neighbour}/files/mkdir", {"path": "/work/a\u0000b"})
    check_error(status, body, 400, "invalid_argument")


def test_a_nul_byte_anywhere_in_the_url_is_400(api, neighbour, after):
    # the decoded URL would end at the NUL: /v1/sandboxes/%00 must not become the list route
    for method, url in (("GET", "/v1/sandboxes/%00"), ("GET", f"/v1/sandboxes/{neighbour}%00/processes"),
                        ("DELETE", f"/v1/sandboxes/{neighbour}%00"), ("GET", "/v1/sandboxes?metadata.k=%00")):
        status, body = api.json(method, url)
        check_error(status, body, 400, "invalid_argument")
        assert "NUL" in body["error"]["message"]
    # an encoded percent sign followed by 00 is only text
    status, body = api.json("GET", f"/v1/sandboxes/{neighbour}/files?path=/work/a%2500b")
    check_error(status, body, 404, "not_found")
    assert api.ok("GET", f"/v1/sandboxes/{neighbour}")["state"] == "running"


def test_a_missing_or_empty_path_is_400(api, neighbour, after):
    """A relative path is taken from the working folder (docs/api.md); no path, or an empty one,
    is refused."""
    for method, tail in (("GET", ""), ("GET", "/stat"), ("GET", "/list"), ("DELETE", "")):
        status, body = api.json(method, f"/v1/sandboxes/{neighbour}/files{tail}?path=")
        check_error(status, body, 400, "invalid_argument")
        status, body = api.json(method, f"/v1/sandboxes/{neighbour}/files{tail}")
        check_error(status, body, 400, "invalid_argument")
    status, body = api.json("POST", f"/v1/sandboxes/{neighbour}/files/rename", {"from": "", "to": "/work/b"})
    check_error(status, body, 400, "invalid_argument")
    status, body = api.json("POST", f"/v1/sandboxes/{neighbour}/exec", {"cmd": ["pwd"], "cwd": ""})
    check_error(status, body, 400, "invalid_argument")
    # taken from /work, not refused: a file that is not there
    status, body = api.json("GET", f"/v1/sandboxes/{neighbour}/files/stat?path=no/such/file")
    check_error(status, body, 404, "not_found")


def test_command_that_does_not_exist_is_422(api, neighbour, after):
    status, body = api.json("POST", f"/v1/sandboxes/{neighbour}/exec", {"cmd": ["no-such-command"]})
    check_error(status, body, 422, "exec_failed")
    status, body = api.json("POST", f"/v1/sandboxes/{neighbour}/processes", {"cmd": ["no-such-command"]})
    check_error(status, body, 422, "exec_failed")
    # With a stream, the same error comes before any start event.
    with api.exec_stream(neighbour, ["no-such-command"]) as s:
        if s.status == 200:
            events = list(s)
            assert events and events[0]["type"] == "error", events
            assert events[0]["error"]["code"] == "exec_failed"
        else:
            check_error(s.status, s.json_body(), 422, "exec_failed")


def test_a_file_that_is_not_executable_is_422(api, neighbour, after):
    api.ok("PUT", f"/v1/sandboxes/{neighbour}/files?path={q('/work/notexec.sh')}", raw=b"#!/bin/sh\n")
    status, body = api.json("POST", f"/v1/sandboxes/{neighbour}/exec", {"cmd": ["/work/notexec.sh"]})
    check_error(status, body, 422, "exec_failed")


def test_second_delete_is_404(api, sandbox, after):
    status, _, _ = api.request("DELETE", f"/v1/sandboxes/{sandbox}")
    assert status == 204
    status, body = api.json("DELETE", f"/v1/sandboxes/{sandbox}")
    check_error(status, body, 404, "not_found")
    status, body = api.json("GET", f"/v1/sandboxes/{sandbox}")
    check_error(status, body, 404, "not_found")


def test_unknown_route_and_wrong_method(api, neighbour, after):
    for path in ("/v1/nope", "/v2/health", "/", f"/v1/sandboxes/{neighbour}/nope"):
        status, body = api.json("GET", path)
        check_error(status, body, 404, "not_found")
    for method, path in (("PUT", "/v1/sandboxes"), ("POST", "/v1/health"), ("PATCH", f"/v1/sandboxes/{neighbour}"),
                         ("GET", f"/v1/sandboxes/{neighbour}/exec")):
        status, body = api.json(method, path)
        check_error(status, body, 405, "method_not_allowed")


def test_limits_out_of_range(api, after):
    for fields in ({"memory_mb": 63}, {"memory_mb": 65537}, {"memory_mb": -1}, {"memory_mb": 2 ** 40},
                   {"cpus": 0}, {"cpus": 65}, {"cpus": -3}, {"timeout": -1}):
        status, body = api.json("POST", "/v1/sandboxes", fields)
        check_error(status, body, 400, "invalid_argument")
        assert list(fields)[0] in body["error"]["message"], body


def test_unknown_template_is_refused(api, after):
    status, body = api.json("POST", "/v1/sandboxes", {"template": "no-such-template"})
    assert 400 <= status < 500, (status, body)
    assert set(body["error"]) >= {"code", "message"}


def test_bad_signal_and_bad_wait_timeout(api, neighbour, after):
    pid = api.ok("POST", f"/v1/sandboxes/{neighbour}/processes", {"cmd": ["sleep", "1000"]}, expect=(201,))["pid"]
    try:
        status, body = api.json("POST", f"/v1/sandboxes/{neighbour}/processes/{pid}/signal", {"signal": "NOPE"})
        check_error(status, body, 400, "invalid_argument")
        status, body = api.json("GET", f"/v1/sandboxes/{neighbour}/processes/{pid}/wait?timeout=soon")
        check_error(status, body, 400, "invalid_argument")
        assert api.ok("GET", f"/v1/sandboxes/{neighbour}/processes/{pid}")["state"] == "running"
    finally:
        api.ok("POST", f"/v1/sandboxes/{neighbour}/processes/{pid}/signal", {"signal": "KILL"})
        api.ok("GET", f"/v1/sandboxes/{neighbour}/processes/{pid}/wait")


def test_tcp_listener_wants_the_right_token(make_daemon):
    port = free_port()
    d = make_daemon(listen=f"127.0.0.1:{port}")
    r = subprocess.run([SPACED, "--state-dir", d.state_dir, "token", "create"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    token = r.stdout.strip()
    assert token and "\n" not in token

    for bad in (None, "wrong-token", token + "x", ""):
        tcp = Api(tcp=("127.0.0.1", port), token=bad)
        status, body = tcp.json("GET", "/v1/health")
        check_error(status, body, 401, "unauthorized")
        status, body = tcp.json("POST", "/v1/sandboxes", {})
        check_error(status, body, 401, "unauthorized")
    status, body = Api(tcp=("127.0.0.1", port)).json("GET", "/v1/health", headers={"Authorization": token})
    check_error(status, body, 401, "unauthorized")

    good = Api(tcp=("127.0.0.1", port), token=token)
    status, body = good.json("GET", "/v1/health")
    assert status == 200 and body["status"] == "ok"
    assert good.ok("GET", "/v1/sandboxes") == {"sandboxes": []}
    # The Unix socket needs no token.
    assert d.api.json("GET", "/v1/health")[0] == 200

"""The web console (docs/console.md): GET /ui serves its static files without a token, with a
Content-Security-Policy and nosniff, refusing any name that would reach outside its folder;
and the page itself, driven by Debian's headless Chromium, signs in with a token, creates a
sandbox, types into its terminal and suspends and resumes it from its buttons.

The browser test needs chromium, chromium-driver and python3-selenium (the Makefile's
APT_PACKAGES) and is skipped, saying which is missing, without them. Its screenshots go to
build/test-artifacts/ui/. Chromium is kept on this machine: no background services, and its
resolver answers no name (the page is reached at 127.0.0.1).
"""

import http.client
import json
import os
import shutil

import pytest

from conftest import ROOT, Api, free_port, wait_until
import spacetest

UI_DIR = os.path.join(ROOT, "build", "ui")
ARTIFACTS = os.path.join(ROOT, "build", "test-artifacts", "ui")
CSP = "default-src 'self'"
UI_NAME_MAX = 64  # daemon/api/ui.h


def raw(port, method, path, headers=None, body=None):
    """(status, headers, body) of one request sent with path exactly as given (no client
    normalises it)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        conn.putheader("Content-Length", str(len(body or b"")))
        conn.endheaders(body)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


@pytest.fixture
def console(make_daemon, tmp_path):
    """A spaced on loopback TCP whose --ui is a copy of build/ui holding a link to a file
    outside it, with the port."""
    ui = tmp_path / "ui"
    shutil.copytree(UI_DIR, ui)
    secret = tmp_path / "secret.js"
    secret.write_text("the secret outside\n")
    os.symlink(secret, ui / "link.js")
    port = free_port()
    d = make_daemon(listen=f"127.0.0.1:{port}", args=["--ui", str(ui)])
    return d, port


def test_ui_files_served_without_token(console):
    """/ui and /ui/ are the page, each file has its extension's type, and everything /ui serves
    carries the CSP and nosniff; the API beside it still wants a token."""
    d, port = console
    for path in ("/ui", "/ui/"):
        status, hdrs, body = raw(port, "GET", path)
        assert status == 200, (path, status, body[:200])
        assert hdrs["content-type"] == "text/html; charset=utf-8"
        assert b"<title>space console</title>" in body
    types = {"app.js": "text/javascript; charset=utf-8", "console.css": "text/css; charset=utf-8",
             "index.html": "text/html; charset=utf-8"}
    for name, ctype in types.items():
        status, hdrs, body = raw(port, "GET", f"/ui/{name}")
        assert status == 200 and hdrs["content-type"] == ctype, (name, status, hdrs)
        with open(os.path.join(UI_DIR, name), "rb") as f:
            assert body == f.read()
        assert hdrs["content-security-policy"].startswith(CSP), hdrs
        assert "script-src 'self'" in hdrs["content-security-policy"]
        assert "frame-ancestors 'none'" in hdrs["content-security-policy"]
        assert hdrs["x-content-type-options"] == "nosniff"
    status, hdrs, body = raw(port, "HEAD", "/ui/app.js")
    assert status == 200 and body == b"" and int(hdrs["content-length"]) == os.path.getsize(f"{UI_DIR}/app.js")
    status, _, _ = raw(port, "GET", "/v1/health")
    assert status == 401
    # the Unix socket serves the same files
    status, hdrs, body = d.api.request("GET", "/ui/app.js")
    assert status == 200 and hdrs["content-type"].startswith("text/javascript")


def test_ui_vendor_files_from_debian(console):
    """/ui/vendor/ serves Debian's Chart.js and term.js from /usr/share/javascript, and nothing
    else of that folder or outside it."""
    _, port = console
    for name, path, package in (("chart.js", "/usr/share/javascript/chart.js/chart.min.js", "libjs-chart.js"),
                                ("term.js", "/usr/share/javascript/term.js/term.js", "libjs-term.js")):
        status, hdrs, body = raw(port, "GET", f"/ui/vendor/{name}")
        if os.path.exists(path):
            assert status == 200 and hdrs["content-type"] == "text/javascript; charset=utf-8", (name, status)
            with open(path, "rb") as f:
                assert body == f.read()
        else:
            assert status == 404 and package in json.loads(body)["error"]["message"], (name, status, body)
        assert hdrs["x-content-type-options"] == "nosniff"
    for path in ("/ui/vendor/chart.min.js", "/ui/vendor/", "/ui/vendor/../../../../etc/passwd",
                 "/ui/vendor/xterm/xterm.js"):
        status, _, body = raw(port, "GET", path)
        assert status == 404 and b"root:" not in body, (path, status, body[:200])


def test_ui_traversal_refused(console):
    """Names that climb out of the console's folder, hide, encode a slash or a NUL, or follow a
    link are refused (400 for a name outside the rules, 404 for what is not a file of the
    folder), each with the API's JSON error, and nothing outside is ever read."""
    _, port = console
    attempts = {
        "/ui/../v1/health": 400, "/ui/..": 400, "/ui/%2e%2e/%2e%2e/etc/passwd": 400,
        "/ui/..%2f..%2fetc%2fpasswd": 400, "/ui//etc/passwd": 400, "/ui/.%2e/secret.js": 400,
        "/ui/.hidden.js": 400, "/ui/sub/app.js": 400, "/ui/app.js%2f": 400, "/ui/a..b.js": 400,
        "/ui/%5c..%5csecret.js": 400, "/ui/-x.js": 400,
        "/ui/link.js": 404,          # a link to a file outside: not followed
        "/ui/missing.js": 404, "/ui/app.txt": 404, "/ui/vendor": 404,
    }
    for path, want in attempts.items():
        status, hdrs, body = raw(port, "GET", path)
        assert status == want, (path, status, body[:200])
        err = json.loads(body)["error"]
        assert err["code"] == ("invalid_argument" if want == 400 else "not_found"), (path, err)
        assert b"secret outside" not in body and b"root:" not in body
        assert hdrs["x-content-type-options"] == "nosniff"
    # a NUL encoded in the URL is refused before decoding could cut the name short
    status, _, body = raw(port, "GET", "/ui/app.js%00.png")
    assert status in (400, 401) and b"secret" not in body, (status, body)
    # a name of UI_NAME_MAX bytes is looked for, one byte more is refused
    status, _, _ = raw(port, "GET", "/ui/" + "a" * (UI_NAME_MAX - 3) + ".js")
    assert status == 404
    status, _, _ = raw(port, "GET", "/ui/" + "a" * (UI_NAME_MAX - 2) + ".js")
    assert status == 400


def test_ui_only_get(console):
    """Only GET and HEAD are served under /ui; a body sent along is not read."""
    _, port = console
    for method in ("POST", "PUT", "DELETE"):
        status, _, body = raw(port, method, "/ui/app.js", body=b"x" * 1000)
        assert status == 405 and json.loads(body)["error"]["code"] == "method_not_allowed", (method, status)


# --------------------------------------------------------------------------
# the page, in a browser

def browser_or_skip():
    """A headless Chromium under Selenium, or pytest.skip saying what is missing."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("python3-selenium is not installed (apt-get install python3-selenium)")
    chromium = shutil.which("chromium")
    driver = shutil.which("chromedriver")
    if not chromium:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    if not driver:
        pytest.skip("chromedriver is not installed (apt-get install chromium-driver)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000",
              "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--disable-default-apps", "--disable-domain-reliability", "--disable-client-side-phishing-detection",
              "--disable-features=OptimizationHints,MediaRouter,Translate,AutofillServerCommunication",
              # every name resolves to nothing: the page is at 127.0.0.1, and nothing else is reached
              "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=driver), options=opts)


def shot(drv, name):
    os.makedirs(ARTIFACTS, exist_ok=True)
    drv.save_screenshot(os.path.join(ARTIFACTS, f"{name}.png"))


def terminal_lines(drv):
    return drv.execute_script(
        "return Array.from(document.querySelectorAll('#terminal .terminal > div'))"
        ".map(d => d.textContent.replace(/\\u00a0/g, ' ').trimEnd());")


def page_state(drv):
    return drv.execute_script("const s = document.querySelector('#state [data-state]'); return s && s.dataset.state;")


def test_console_in_browser(make_daemon):
    """Signed in with alice's token, the console lists her sandboxes and not bob's, creates one,
    runs `echo $((6*7))` in its terminal and shows 42, and suspends and resumes it from its
    buttons, the page following each state."""
    drv = browser_or_skip()
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys
    try:
        port = free_port()
        d = make_daemon(listen=f"127.0.0.1:{port}")
        alice_token = d.token("alice")
        alice = Api(tcp=("127.0.0.1", port), token=alice_token)
        bob = Api(tcp=("127.0.0.1", port), token=d.token("bob"))
        bobs = bob.create()

        drv.get(f"http://127.0.0.1:{port}/ui/")
        wait_until(lambda: drv.find_elements(By.ID, "token"), 60, "the sign-in form")
        drv.find_element(By.ID, "token").send_keys("not-a-token")
        drv.find_element(By.CSS_SELECTOR, "#signin button").click()
        wait_until(lambda: "does not know" in drv.find_element(By.ID, "signin-error").text, 60,
                   "a wrong token to be refused")
        drv.find_element(By.ID, "token").clear()
        drv.find_element(By.ID, "token").send_keys(alice_token)
        drv.find_element(By.CSS_SELECTOR, "#signin button").click()
        wait_until(lambda: drv.find_elements(By.ID, "create"), 60, "the sandboxes page")
        assert drv.execute_script("return sessionStorage.getItem('space.token')") == alice_token
        shot(drv, "1-sandboxes")

        drv.find_element(By.ID, "create").click()
        wait_until(lambda: "#/sandboxes/" in drv.current_url, spacetest.CREATE_TIMEOUT, "the new sandbox's page")
        sbid = drv.current_url.rsplit("/", 1)[1]
        assert alice.ok("GET", f"/v1/sandboxes/{sbid}")["metadata"] == {"created-by": "console"}
        wait_until(lambda: page_state(drv) == "running", 60, "the page to show it running")

        # the list shows alice's sandbox, not bob's
        drv.get(f"http://127.0.0.1:{port}/ui/#/")
        wait_until(lambda: drv.find_elements(By.CSS_SELECTOR, f"tr[data-id='{sbid}']"), 60, "alice's sandbox listed")
        assert not drv.find_elements(By.CSS_SELECTOR, f"tr[data-id='{bobs}']")
        drv.find_element(By.CSS_SELECTOR, f"tr[data-id='{sbid}']").click()
        wait_until(lambda: page_state(drv) == "running", 60, "the sandbox's page")

        drv.find_element(By.ID, "open-terminal").click()
        wait_until(lambda: drv.find_element(By.ID, "terminal").get_attribute("data-pid"), 60, "the terminal's shell")
        wait_until(lambda: any(terminal_lines(drv)), 60, "the shell's prompt")
        drv.find_element(By.CSS_SELECTOR, "#terminal .terminal").click()
        ActionChains(drv).send_keys("echo $((6*7))" + Keys.ENTER).perform()
        wait_until(lambda: "42" in [line.strip() for line in terminal_lines(drv)], 60,
                   "42 in the terminal", interval=0.2)
        shot(drv, "2-terminal")
        pid = int(drv.find_element(By.ID, "terminal").get_attribute("data-pid"))
        proc = alice.ok("GET", f"/v1/sandboxes/{sbid}/processes/{pid}")
        assert proc["pty"]["rows"] == 28 and proc["state"] == "running", proc

        drv.find_element(By.ID, "btn-suspend").click()
        wait_until(lambda: page_state(drv) == "suspended", spacetest.CREATE_TIMEOUT, "the page to show it suspended")
        assert alice.ok("GET", f"/v1/sandboxes/{sbid}")["state"] == "suspended"
        shot(drv, "3-suspended")
        drv.find_element(By.ID, "btn-resume").click()
        wait_until(lambda: page_state(drv) == "running", spacetest.CREATE_TIMEOUT, "the page to show it running again")
        assert alice.ok("GET", f"/v1/sandboxes/{sbid}")["state"] == "running"
        # the same shell, attached again: what is typed now still reaches it
        wait_until(lambda: drv.find_element(By.ID, "terminal-status").text.endswith(": attached"), 60,
                   "the terminal attached again")
        drv.find_element(By.CSS_SELECTOR, "#terminal .terminal").click()
        ActionChains(drv).send_keys("echo $((6*7+1))" + Keys.ENTER).perform()
        wait_until(lambda: "43" in [line.strip() for line in terminal_lines(drv)], 60, "43 in the terminal", interval=0.2)
        shot(drv, "4-resumed")
        logs = [e for e in drv.get_log("browser") if e["level"] == "SEVERE" and "Content Security Policy" in e["message"]]
        assert not logs, logs
    finally:
        drv.quit()

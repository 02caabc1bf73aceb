"""space's `Sandbox.run_code` and the Code Interpreter's server give the same results.

In a sandbox of template code-interpreter-v1 (built on first use from its recipe), the same
cells run through the SDK's run_code (its own REPL, sdk/python/space/_repl_server.py) and
through the template's server on port 49999 (sandbox/interpreter/server.py, an IPython
kernel, as E2B's Code Interpreter SDKs reach it), each in its own default context; their text
results, output and errors are compared. docs/sdk-python.md ("Code") says which engine run_code
uses and where the two differ.
"""

import json

import space

TEMPLATE = "code-interpreter-v1"
BUILD_DEADLINE = 3600  # the create may wait for the template's build (RECIPE_BUILD_TIMEOUT_S)

CELLS = [
    "1 + 1",
    "'text'",
    "x = [1, 2, 3]",
    "x",
    "{'a': 1, 'b': [2, 3]}",
    "sum(x) / len(x)",
    "None",
    "print('out')\n5",
    "def f(n):\n    return n * 2\nf(21)",
    "import math\nround(math.pi, 5)",
    "(1, 'a', None)",
    "x.append(4)\nlen(x)",
    "1 / 0",
    "undefined_name",
    "raise ValueError('bad value')",
    "x",
]

# The server's answer to each cell, from inside the sandbox: what an E2B SDK's runCode gets.
SERVER_CLIENT = r"""
import json, sys, urllib.request
out = []
for code in json.load(sys.stdin):
    req = urllib.request.Request("http://127.0.0.1:49999/execute", data=json.dumps({"code": code}).encode(),
                                 headers={"Content-Type": "application/json"})
    r = {"text": None, "stdout": "", "error": None}
    for line in urllib.request.urlopen(req, timeout=120):
        ev = json.loads(line)
        if ev["type"] == "result" and ev.get("is_main_result"):
            r["text"] = ev.get("text")
        elif ev["type"] == "stdout":
            r["stdout"] += ev["text"]
        elif ev["type"] == "error":
            r["error"] = [ev["name"], ev["value"]]
    out.append(r)
print(json.dumps(out))
"""


def test_the_same_cells_give_the_same_results_through_both_engines(spaced):
    sb = space.Sandbox.create(template=TEMPLATE, request_timeout=BUILD_DEADLINE)
    try:
        through_sdk = []
        for code in CELLS:
            ex = sb.run_code(code)
            through_sdk.append({"text": ex.text, "stdout": ex.stdout,
                                "error": [ex.error.name, ex.error.message] if ex.error else None})
        res = sb.commands.run(["python3", "-c", SERVER_CLIENT], stdin=json.dumps(CELLS), timeout=600)
        assert res.exit_code == 0, res.stderr
        through_server = json.loads(res.stdout)
        for code, a, b in zip(CELLS, through_sdk, through_server):
            assert a == b, f"{code!r}: run_code {a} != the interpreter's server {b}"
        # and they are what a reader expects
        assert [r["text"] for r in through_sdk[:2]] == ["2", "'text'"]
        assert through_sdk[-4]["error"] == ["ZeroDivisionError", "division by zero"]
        assert through_sdk[-1]["text"] == "[1, 2, 3, 4]"
    finally:
        sb.kill()

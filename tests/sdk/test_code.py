"""The stateful code interpreter: run_code, code contexts, state across the lifecycle, interrupts."""

import pytest

import space
from space import Sandbox

WAIT_FOR_GO = """
import os, time
for _ in range(600):
    if os.path.exists('/work/go'):
        break
    time.sleep(0.1)
else:
    raise RuntimeError('gave up waiting for /work/go')
"""


def test_the_issue_example(sandbox):
    r = sandbox.run_code("x = 40")
    assert (r.text, r.stdout, r.stderr, r.error) == (None, "", "", None)
    r = sandbox.run_code("x + 2")
    assert r.text == "42" and r.error is None


def test_state_across_20_cells(sandbox):
    cells = [
        ("import math, json", None),
        ("total = 0", None),
        ("def add(n):\n    global total\n    total += n\n    return total", None),
        ("add(1)", "1"),
        ("add(2)", "3"),
        ("class Acc:\n    def __init__(self):\n        self.items = []\n    def push(self, v):\n"
         "        self.items.append(v)\n        return len(self.items)", None),
        ("acc = Acc()", None),
        ("acc.push('a')", "1"),
        ("acc.push(math.pi)", "2"),
        ("acc.items[0]", "'a'"),
        ("squares = {i: i * i for i in range(10)}", None),
        ("squares[9]", "81"),
        ("json.dumps(sorted(squares)[:3])", "'[0, 1, 2]'"),
        ("print('side effect'); total", "3"),
        ("import collections\ncounts = collections.Counter('mississippi')", None),
        ("counts['s']", "4"),
        ("lam = lambda v: v * total", None),
        ("lam(5)", "15"),
        ("_ * 2", "30"),
        ("[add(i) for i in range(3)][-1], round(math.sqrt(total), 3)", "(6, 2.449)"),
    ]
    assert len(cells) == 20
    for code, text in cells:
        r = sandbox.run_code(code)
        assert r.error is None, (code, r.error.traceback)
        assert r.text == text, code
    assert sandbox.run_code("total").text == "6"


def test_output_and_errors_are_returned_not_raised(sandbox):
    r = sandbox.run_code("import sys, subprocess\nprint('out')\nprint('err', file=sys.stderr)\n"
                         "subprocess.run(['echo', 'from a child'])\n1 / 0")
    assert r.stdout == "out\nfrom a child\n" and r.stderr == "err\n"
    assert r.text is None and not r.interrupted
    assert r.error.name == "ZeroDivisionError" and r.error.message == "division by zero"
    assert "Traceback" in r.error.traceback and "1 / 0" in r.error.traceback
    assert "_repl_server" not in r.error.traceback and "space-repl" not in r.error.traceback

    r = sandbox.run_code("def broken(:\n    pass")
    assert r.error.name == "SyntaxError"
    r = sandbox.run_code("input()")  # no stdin in cells: end of file, not a hang
    assert r.error.name == "EOFError"
    r = sandbox.run_code("exit(3)")
    assert r.error.name == "SystemExit"
    r = sandbox.run_code("undefined_name")
    assert r.error.name == "NameError" and "undefined_name" in r.error.message
    # the interpreter lives on
    assert sandbox.run_code("'still here'").text == "'still here'"
    assert sandbox.run_code("None").text is None


def test_run_code_streams_output_as_it_is_produced(sandbox):
    events = []

    def on_stdout(text):
        events.append(("stdout", text))
        if "first" in text:
            sandbox.files.write("/work/go", "")  # only now may the cell go on
            events.append(("released", None))

    r = sandbox.run_code("print('first')\n" + WAIT_FOR_GO + "\nprint('second')\n'done'", on_stdout=on_stdout)
    events.append(("returned", r.text))
    assert r.error is None, r.error.traceback
    # print() may reach the callback in pieces ("first", "\n"): check the order of the events
    kinds = [k for k, _ in events]
    released, returned = kinds.index("released"), kinds.index("returned")
    second = next(i for i, (k, t) in enumerate(events) if k == "stdout" and "second" in t)
    assert "first" in "".join(t for _, t in events[:released])
    assert released < second < returned == len(events) - 1 and events[-1] == ("returned", "'done'")
    assert "".join(t for k, t in events if k == "stdout") == r.stdout == "first\nsecond\n"


def test_state_survives_pause_and_resume(sandbox):
    sandbox.run_code("import hashlib\nstate = {i: str(i) for i in range(100000)}\n"
                     "digest = lambda: hashlib.sha256(repr(sorted(state.items())).encode()).hexdigest()")
    before = sandbox.run_code("digest()").text
    sandbox.pause()
    assert sandbox.run_code("len(state)").text == "100000"  # resumes transparently
    sandbox.pause()
    sandbox.resume()
    assert sandbox.run_code("digest()").text == before


def test_state_survives_suspend_and_resume(sandbox):
    sandbox.run_code("import os\nstate = {i: i * 3 for i in range(100000)}\npid = os.getpid()")
    pid = sandbox.run_code("pid").text
    assert sandbox.suspend().state == "suspended"
    assert sandbox.run_code("sum(state.values())").text == str(3 * sum(range(100000)))
    assert sandbox.get_info().state == "running"
    sandbox.suspend()
    assert sandbox.resume().state == "running"
    assert sandbox.run_code("os.getpid()").text == pid  # the same interpreter, not a new one
    # and another client finds the same interpreter after a suspend
    sandbox.suspend()
    other = Sandbox.connect(sandbox.id)
    assert other.run_code("state[10]").text == "30"


def test_a_runaway_cell_is_interrupted_and_state_kept(sandbox):
    sandbox.run_code("kept = 'yes'\ncount = 0")
    r = sandbox.run_code("while True:\n    count += 1", timeout=1)
    assert r.interrupted and r.error.name == "KeyboardInterrupt"
    assert sandbox.run_code("kept").text == "'yes'"
    assert int(sandbox.run_code("count").text) > 0
    r = sandbox.run_code("import time\nprint('sleeping')\ntime.sleep(100000)", timeout=1)
    assert r.interrupted and r.error.name == "KeyboardInterrupt" and r.stdout == "sleeping\n"
    r = sandbox.run_code("import subprocess\nsubprocess.run(['sleep', '100000'])", timeout=1)
    assert r.interrupted
    assert sandbox.run_code("kept * 2").text == "'yesyes'"


def test_independent_contexts(sandbox):
    c1 = sandbox.create_code_context()
    c2 = sandbox.create_code_context(cwd="/tmp", env={"WHO": "c2"}, name="second")
    assert c1.name != c2.name and c1.pid != c2.pid and c2.name == "second"
    c1.run("v = 1")
    c2.run("v = 2")
    assert c1.run("v").text == "1"
    assert c2.run("v").text == "2"
    assert sandbox.run_code("v", context=c2).text == "2"
    assert sandbox.run_code("'v' in globals()").text == "False"  # the default context is a third one
    assert c2.run("import os; os.getcwd(), os.environ['WHO']").text == "('/tmp', 'c2')"
    names = {c.name for c in sandbox.list_code_contexts()}
    assert {c1.name, "second", "default"} <= names
    assert c1.is_alive()
    c1.close()
    with pytest.raises(space.SpaceError):
        c1.run("v")
    assert c2.run("v + 1").text == "3"
    with pytest.raises(space.InvalidArgumentError):
        sandbox.create_code_context(language="r")
    with pytest.raises(ValueError):
        sandbox.run_code("1", language="javascript")
    with pytest.raises(space.InvalidArgumentError):
        sandbox.create_code_context(name="bad name")


def test_a_dead_interpreter_raises_then_a_new_one_starts(sandbox):
    sandbox.run_code("lost = 1")
    with pytest.raises(space.SpaceError) as e:
        sandbox.run_code("import os\nos._exit(1)")
    assert "exited" in str(e.value)
    r = sandbox.run_code("'lost' in globals()")
    assert r.text == "False"


def test_forks_and_snapshots_carry_the_interpreter(sandbox):
    sandbox.run_code("secret = 'from the source'")
    clone = sandbox.fork(count=1)[0]
    try:
        assert clone.run_code("secret").text == "'from the source'"
        clone.run_code("secret = 'changed in the clone'")
        assert sandbox.run_code("secret").text == "'from the source'"
    finally:
        clone.kill()
    snap = sandbox.snapshot()
    try:
        with Sandbox.create(snapshot=snap) as restored:
            assert restored.run_code("secret").text == "'from the source'"
    finally:
        snap.delete()


def test_two_clients_share_the_default_context(sandbox):
    sandbox.run_code("shared = 1")
    other = Sandbox.connect(sandbox.id)
    assert other.run_code("shared += 1; shared").text == "2"   # other takes the output over
    assert sandbox.run_code("shared += 1; shared").text == "3"  # and this one takes it back
    assert other.run_code("shared").text == "3"
    assert len([c for c in sandbox.list_code_contexts() if c.name == "default"]) == 1


def test_a_failing_callback_interrupts_the_cell(sandbox):
    sandbox.run_code("before = 'kept'")

    def boom(text):
        raise ValueError("callback failed")

    with pytest.raises(ValueError):
        sandbox.run_code("print('tick')\nimport time\ntime.sleep(100000)\nafter = 'never'", on_stdout=boom)
    r = sandbox.run_code("before, 'after' in globals()")
    assert r.text == "('kept', False)"

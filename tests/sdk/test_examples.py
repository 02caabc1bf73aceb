"""The examples in examples/ run as they are, against the session's daemon."""

import os
import subprocess
import sys

import pytest

from conftest import ROOT, SDK

EXAMPLES = {
    "code_interpreter.py": ["value:  [4.0, -1.92, 10.59, -1.42]", "error: IndexError",
                            "interrupted: KeyboardInterrupt", "final state: (14.1, 13.25)"],
    "data_task.py": ["sandbox says: 5000 orders in 4 regions", "result verified"],
    "suspend_resume.py": ["state suspended", "connected again: state running", "task says: task finished",
                          "['started the task', 'finished after a suspend']"],
}


def test_every_example_is_tested():
    present = {f for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".py")}
    assert present == set(EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_runs(spaced, name):
    env = dict(os.environ, SPACE_HOST=spaced.host, PYTHONPATH=SDK)
    env.pop("SPACE_TOKEN", None)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", name)], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    for line in EXAMPLES[name]:
        assert line in r.stdout, r.stdout

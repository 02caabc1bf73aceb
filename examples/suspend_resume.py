"""Suspend and resume a long task: the work goes on where it stopped, memory included.

A background task in the sandbox works through 40 steps, keeping its running
state only in memory. Midway, the sandbox is suspended: memory, processes
and files go to disk and the sandbox stops using any CPU or RAM. Later --
here a moment later, but it could be after a restart of the application,
which only needs to keep the sandbox id -- Sandbox.connect() resumes it, the
task carries on from the step it had reached, and the interpreter's
variables are still there.

Run: SPACE_HOST=unix:///run/space/space.sock PYTHONPATH=sdk/python python3 examples/suspend_resume.py
"""

import hashlib
import json
import time

from space import Sandbox

TASK = r'''
import hashlib, json, os, time
state = hashlib.sha256()
for step in range(40):
    state.update(str(step).encode())        # the work, kept in memory only
    with open("/work/progress.tmp", "w") as f:
        f.write(str(step))
    os.rename("/work/progress.tmp", "/work/progress")
    time.sleep(0.1)
with open("/work/result.json", "w") as f:
    json.dump({"steps": 40, "pid": os.getpid(), "digest": state.hexdigest()}, f)
print("task finished")
'''


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise SystemExit("timed out waiting for " + what)
        time.sleep(0.05)


def start(sb):
    sb.files.write("/work/task.py", TASK)
    sb.run_code("notes = ['started the task']")
    task = sb.commands.run("python3 /work/task.py", background=True)
    wait_for(lambda: sb.files.exists("/work/progress") and int(sb.files.read("/work/progress")) >= 5, 120,
             "the task to get going")
    task.disconnect()                  # this client stops following; the task runs on
    info = sb.suspend()
    print(f"suspended {sb.id}: state {info.state}")
    return task.pid


def finish(sandbox_id, pid):
    sb = Sandbox.connect(sandbox_id)   # a suspended sandbox is resumed
    print("connected again: state", sb.get_info().state)
    step = int(sb.files.read("/work/progress"))
    assert step >= 5, step
    print("the task is at step", step, "(it went on from where it was suspended)")
    task = sb.commands.connect(pid)
    result = task.wait(timeout=300)
    print("task says:", result.stdout.strip())
    out = json.loads(sb.files.read("/work/result.json"))
    want = hashlib.sha256("".join(str(i) for i in range(40)).encode()).hexdigest()
    assert out["digest"] == want, "the task lost its in-memory state"
    sb.run_code("notes.append('finished after a suspend')")
    print("interpreter notes:", sb.run_code("notes").text)
    return sb


def main():
    sb = Sandbox.create(timeout=300, metadata={"example": "suspend_resume"})
    try:
        pid = start(sb)
        assert Sandbox.list(metadata={"example": "suspend_resume"}, state="suspended")
        finish(sb.id, pid)
        print("the task ran to its end through a suspend, with its memory intact")
    finally:
        sb.kill()


if __name__ == "__main__":
    main()

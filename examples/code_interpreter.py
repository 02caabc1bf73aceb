"""A code-interpreter loop: run a list of cells in one sandbox, keeping state between them.

This is the loop an agent runs: it hands cells (from a model, here a fixed
list) to a stateful Python interpreter in a sandbox, and reads back for each
one the printed output, the value of its last expression and any error --
without the loop ever raising for a bad cell. A runaway cell is interrupted
at its timeout and the variables defined before it survive.

Run: SPACE_HOST=unix:///run/space/space.sock PYTHONPATH=sdk/python python3 examples/code_interpreter.py
"""

from space import Sandbox

CELLS = [
    # (code, timeout in seconds)
    ("import statistics\nprices = [12.5, 13.0, 12.75, 14.1, 13.9]", 30),
    ("mean = statistics.mean(prices)\nprint(f'mean price: {mean:.2f}')", 30),
    ("def change(a, b):\n    return round((b - a) / a * 100, 2)", 30),
    ("[change(a, b) for a, b in zip(prices, prices[1:])]", 30),
    ("prices[10]", 30),                        # an error: reported, not raised
    ("while True:\n    pass", 2),              # a runaway cell: interrupted after 2 s
    ("max(prices), round(mean, 2)", 30),       # state from before the errors is intact
]


def main():
    with Sandbox.create(timeout=120, metadata={"example": "code_interpreter"}) as sb:
        for i, (code, timeout) in enumerate(CELLS, 1):
            r = sb.run_code(code, timeout=timeout)
            print(f"[{i}] >>> " + code.replace("\n", "\n      ... "))
            if r.stdout:
                print("      stdout: " + r.stdout.rstrip())
            if r.text is not None:
                print("      value:  " + r.text)
            if r.error:
                how = "interrupted" if r.interrupted else "error"
                print(f"      {how}: {r.error.name}: {r.error.message}")
        final = sb.run_code("max(prices), round(mean, 2)").text
        assert final == "(14.1, 13.25)", final
        print("final state:", final)


if __name__ == "__main__":
    main()

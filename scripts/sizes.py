#!/usr/bin/python3
"""Fails when a C file of the programs is over 800 lines or a function over 80.

    scripts/sizes.py [--verbose]

Reads every .c file git knows outside tests/. A function is counted from the line after its
opening brace (a `{` alone at the start of a line, after its signature) to the line before its
closing one (a `}` at the start of a line), as the code's style lays them out. Exits 1 naming
each file or function over its limit, and the limits (FILE_MAX_LINES, FUNCTION_MAX_LINES).
"""
import os
import subprocess
import sys

FILE_MAX_LINES = 800
FUNCTION_MAX_LINES = 80
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def functions(lines):
    """(name line, body length) of every function in lines."""
    start = None
    for i, line in enumerate(lines):
        if start is None and line.startswith("{") and i > 0:
            j = i - 1
            while j > 0 and "(" not in lines[j]:
                j -= 1
            start, name = i, lines[j].strip()
        elif start is not None and line.startswith("}"):
            yield name, i - start - 1
            start = None


def main():
    files = subprocess.run(["git", "ls-files", "*.c"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    bad = []
    for f in files:
        if f.startswith("tests/"):
            continue
        with open(os.path.join(ROOT, f), errors="replace") as fh:
            lines = fh.read().split("\n")
        if len(lines) - 1 > FILE_MAX_LINES:
            bad.append(f"{f}: {len(lines) - 1} lines (at most {FILE_MAX_LINES})")
        for name, n in functions(lines):
            if n > FUNCTION_MAX_LINES:
                bad.append(f"{f}: {name[:60]}... is {n} lines (at most {FUNCTION_MAX_LINES})")
            elif "--verbose" in sys.argv and n > FUNCTION_MAX_LINES * 3 // 4:
                print(f"{f}: {name[:60]} is {n} lines")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

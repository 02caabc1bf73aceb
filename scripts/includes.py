#!/usr/bin/python3
"""Checks that each program is built from lib/, proto/ and its own folder only.

    scripts/includes.py FOLDER: SOURCE... [FOLDER: SOURCE...]

Each FOLDER: starts a program (daemon:, agent:, builder:, ...) and the sources its build
compiles into it besides the archives of lib/. Fails (exit 1), naming each one, when

- a source a program compiles is outside its folder, lib/ and proto/;
- a file of a program's folder (.c or .h, built or not) includes a file outside them;
- a file of lib/ or proto/ includes a file outside lib/ and proto/.

An include "X" is looked for as the compiler does with -I.: beside the including file first,
then from the top of the tree; one found in neither place is taken from the top.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = ("lib", "proto")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def top(path):
    """The top folder of a path relative to ROOT ('..' for one outside the tree)."""
    return path.split("/", 1)[0] if "/" in path else ""


def resolve(src, name):
    """Where `#include "name"` in src (relative to ROOT) takes its file from."""
    beside = os.path.normpath(os.path.join(os.path.dirname(src), name))
    if os.path.exists(os.path.join(ROOT, beside)):
        return beside
    return os.path.normpath(name)


def files(folder):
    for d, _, names in os.walk(os.path.join(ROOT, folder)):
        for n in sorted(names):
            if n.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(d, n), ROOT)


def includes(src):
    with open(os.path.join(ROOT, src), errors="replace") as f:
        text = f.read()
    for m in INCLUDE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        yield line, m.group(1), resolve(src, m.group(1))


def programs(args):
    """{folder: [sources]} from FOLDER: markers."""
    out, cur = {}, None
    for a in args:
        if a.endswith(":"):
            cur = a[:-1].rstrip("/")
            out.setdefault(cur, [])
        elif cur is None:
            sys.exit(f"includes.py: {a}: no FOLDER: before it")
        else:
            out[cur].append(os.path.normpath(a))
    return out


def main(argv):
    progs = programs(argv)
    if not progs:
        sys.exit(__doc__)
    bad = []
    for folder, sources in progs.items():
        allowed = (folder,) + SHARED
        for s in sources:
            if top(s) not in allowed:
                bad.append(f"{folder}: compiles {s}, another program's source")
        for f in files(folder):
            for line, name, path in includes(f):
                if top(path) not in allowed:
                    bad.append(f'{f}:{line}: #include "{name}" ({path}) is outside {folder}/, lib/ and proto/')
    for folder in SHARED:
        for f in files(folder):
            for line, name, path in includes(f):
                if top(path) not in SHARED:
                    bad.append(f'{f}:{line}: #include "{name}" ({path}) is outside lib/ and proto/')
    for b in bad:
        print(b)
    print(f"includes: {len(bad)} outside a program's folder, lib/ and proto/" if bad else
          f"includes: {', '.join(f + '/' for f in progs)} each include and compile only lib/, proto/ and their own")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

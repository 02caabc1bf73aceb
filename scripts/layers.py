#!/usr/bin/python3
"""Who calls whom among a program's modules, from the symbols of its objects.

    scripts/layers.py [--check] [--warn NAME]... [NAME:] OBJECT.o... | DIR... [NAME: ...]

Each object file is a module; module A depends on B when A uses a function or
object that B defines. Prints the dependencies of every module and any circle
(a strongly connected group of two or more modules). With --check, exits 1 if
there is a circle. Reads symbols with nm; a module's symbols come from its
object, so this sees calls through headers' inline functions as the callers'
own code.

An argument NAME: starts the objects of one program (spaced:, space-agent:, ...): each
program is looked at on its own, its modules named from the folder its objects share, and
its lines prefixed with its name. A program named by --warn has its circles printed but
does not fail --check (one whose circles are still to be cut).
"""

import os
import subprocess
import sys


def objects(roots):
    for root in roots:
        if root.endswith(".o"):
            yield root
            continue
        for d, _, files in os.walk(root):
            for f in sorted(files):
                if f.endswith(".o"):
                    yield os.path.join(d, f)


def symbols(path):
    out = subprocess.run(["nm", "--defined-only", "-g", path], capture_output=True, text=True, check=True).stdout
    defined = {line.split()[-1] for line in out.splitlines() if line.strip()}
    out = subprocess.run(["nm", "-u", path], capture_output=True, text=True, check=True).stdout
    used = {line.split()[-1] for line in out.splitlines() if line.strip()}
    return defined, used


def circles(graph):
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def program(objs):
    """The modules of one program, who calls whom, and its circles."""
    mods = {}
    base = os.path.commonpath([os.path.dirname(o) for o in objs]) if objs else "."
    for o in objs:
        mods[os.path.relpath(o, base)[:-2]] = symbols(o)
    owner = {}
    for m, (defined, _) in mods.items():
        for s in defined:
            owner[s] = m
    graph = {m: sorted({owner[s] for s in used if s in owner and owner[s] != m}) for m, (_, used) in mods.items()}
    return graph, circles(graph)


def groups(args):
    """[(name, roots)] from NAME: markers; objects before any marker form one unnamed program."""
    out = [("", [])]
    for a in args:
        if a.endswith(":") and not a.endswith(".o:"):
            out.append((a[:-1], []))
        else:
            out[-1][1].append(a)
    return [(n, r) for n, r in out if r or n]


def main(argv):
    check, warn, args = False, set(), []
    it = iter(argv)
    for a in it:
        if a == "--check":
            check = True
        elif a == "--warn":
            warn.add(next(it))
        else:
            args.append(a)
    failed = False
    for name, roots in groups(args):
        graph, found = program(list(objects(roots)))
        prefix = f"{name}: " if name else ""
        for m in sorted(graph):
            print(f"{prefix}{m}: {' '.join(graph[m])}")
        for c in found:
            print(f"{prefix}circle: {' <-> '.join(c)}" + (" (allowed for now: --warn)" if name in warn else ""))
        if not found:
            print(f"{prefix}no circles")
        failed |= bool(found) and name not in warn
    return 1 if check and failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/python3
"""Checks the README's tour of the tree against the tree.

    scripts/docs_tree.py

The tour is the table under "## A tour of the tree": a row per place, its path in the first
column. It names every top folder of the repository (a first column's path in it), and
everything it names is there: each path of a first column, and each path of the descriptions
(`api/`, `main.c`, `lib/client/`: a name ending in / or in a source file's extension), read
from its row's folder or from the top. Exits 1 naming each difference.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOUR = "## A tour of the tree"
# what in a description is a path of the tree: a folder (ending in /) or a file of these kinds
PATHLIKE = re.compile(r"[\w.-]+(?:/[\w.-]+)*(?:/|\.(?:c|h|py|sh|mk|md|yaml|js|mjs|html|css))")


def tour_rows():
    """Each row of the tour as (its first column's paths, the backquoted names of the others)."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    if TOUR not in text:
        sys.exit(f"README.md: no {TOUR!r}")
    rows = []
    for line in text.split(TOUR, 1)[1].split("\n#", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue  # not a row of places (the head, its rule, the text around)
        rows.append((re.findall(r"`([^`]+)`", cells[0]), re.findall(r"`([^`]+)`", "|".join(cells[1:]))))
    return rows


def main():
    files = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True, check=True).stdout
    tops = sorted({p.split("/")[0] for p in files.splitlines() if "/" in p and not p.startswith(".")})
    rows = tour_rows()
    named = {p.split("/")[0] for places, _ in rows for p in places}
    bad = [f"README.md: the tour of the tree does not name {t}/" for t in tops if t not in named]
    for places, names in rows:
        for p in places:
            if not os.path.exists(os.path.join(ROOT, p)):
                bad.append(f"README.md: the tour names {p}, which is not there")
        folders = [p for p in places if p.endswith("/")]
        for name in names:
            if not PATHLIKE.fullmatch(name):
                continue  # a program, a command, a library, a route
            if not any(os.path.exists(os.path.join(ROOT, base, name)) for base in folders + [""]):
                bad.append(f"README.md: the tour's row of {', '.join(places)} names {name}, which is not there")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Checks that the tests and files README.md, SPECIFICATION.md and docs/*.md cite are there.

    scripts/docs_refs.py

- a link to a file (`[x](../tests/README.md)`, read from the document's folder) reaches one;
- a path of the repository (`tests/e2e/test_exec.py`, `daemon/driver/cpio.c`: its first folder
  one the repository has) names a file or folder that exists;
- a test, written `path::name`, `file::name` (a file named without its folder: the one file of
  the repository with that name) or, after one of those in the same line, `::name` (another
  test of that file), is a test function of that file: `def name(` in Python (name starting
  with test), a cmocka test in C (`void name(void **state)` and registered), and the name
  defined in any other file.
Exits 1 naming each reference that does not resolve.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# a path or a file name, with its test; or ::test, another test of the last file in the line
REF = re.compile(r"(?<![\w/.:@-])(?P<path>(?:[\w.-]+/)*[\w.-]+\.(?:py|c|h|mjs|sh|mk|md|yaml|js))\b"
                 r"(?:::(?P<test>[A-Za-z_]\w*))?"
                 r"|(?<![\w:])::(?P<more>[A-Za-z_]\w*)")
# a link of Markdown to a file of the repository: no scheme, not only an anchor
LINK = re.compile(r"\]\(([^()\s#:]+)(?:#[^()\s]*)?\)")


def read(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


def tracked():
    out = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def defines_test(path, name):
    """Whether the file at path (from the root) defines the test name."""
    text = read(path)
    if path.endswith(".py"):
        return name.startswith("test") and re.search(rf"^\s*(?:async\s+)?def\s+{name}\s*\(", text, re.M)
    if path.endswith(".c"):  # cmocka's signature, and named again where the tests are listed
        return re.search(rf"\bvoid\s+{name}\s*\(\s*void\s*\*\*", text) and len(re.findall(rf"\b{name}\b", text)) > 1
    return re.search(rf"\b{re.escape(name)}\b", text)


def check(doc, files, tops):
    """Each reference of doc that does not resolve, as a line to print."""
    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), []).append(f)
    bad = []
    for n, line in enumerate(read(doc).splitlines(), 1):
        for target in LINK.findall(line):
            if not os.path.exists(os.path.join(ROOT, os.path.dirname(doc), target)):
                bad.append(f"{doc}:{n}: the link to {target} reaches nothing")
        last = None  # the file a ::test after it belongs to
        for m in REF.finditer(line):
            path, test = m.group("path"), m.group("test")
            if m.group("more"):
                if not last:
                    bad.append(f"{doc}:{n}: ::{m.group('more')} follows no file of the repository")
                    continue
                path, test = last, m.group("more")
            elif "/" in path:
                last = None
                if path.split("/")[0] not in tops:
                    continue  # a path inside a sandbox, on the host, of a URL
                if not os.path.exists(os.path.join(ROOT, path)):
                    bad.append(f"{doc}:{n}: {path} does not exist")
                    continue
            elif test:
                found = by_name.get(path, [])
                if len(found) != 1:
                    bad.append(f"{doc}:{n}: {path}::{test}: " +
                               ("no file of the repository has that name" if not found else
                                "several files have that name (" + ", ".join(found) + "): give its folder"))
                    last = None
                    continue
                path = found[0]
            else:
                continue  # a file named in passing (spaced.conf, main.c): nothing says where
            last = path
            if test and not defines_test(path, test):
                bad.append(f"{doc}:{n}: {path} has no test {test}")
    return bad


def main():
    files = tracked()
    tops = {f.split("/")[0] for f in files if "/" in f and not f.startswith(".")}
    docs = ["README.md", "SPECIFICATION.md"] + ["docs/" + n for n in sorted(os.listdir(os.path.join(ROOT, "docs")))
                                   if n.endswith(".md")]
    bad = [b for doc in docs for b in check(doc, files, tops)]
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

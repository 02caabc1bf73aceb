#!/usr/bin/python3
"""Checks the documents that describe the API, the tests and the tree against what is there.

    scripts/docs_routes.py

- every route of spaced's route table (daemon/api/routes.c) is in docs/openapi.yaml and in
  docs/api.md, and each of those documents names no route the table lacks (the routes of API v1,
  and those outside it: GET /metrics);
- every `path::test_name` and `path.py` reference in SPECIFICATION.md and docs/*.md names a
  file that exists (and, for `::`, a test defined in it);
- the README's tour of the tree names every top folder of the repository.
Exits 1 naming each difference.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


def norm(path):
    """/v1/sandboxes/:id/files?path=P -> /v1/sandboxes/{}/files"""
    path = re.split(r"[?\[`]", path)[0].rstrip("/")
    return re.sub(r"(?::[a-z_]+|\{[a-z_]+\})", "{}", path)


# The routes outside API v1, where Prometheus looks (openapi.yaml gives each a servers: of its own).
UNVERSIONED = r"/metrics\b"


def table():
    return {(m, norm(p)) for m, p in
            re.findall(rf'\{{\s*"([A-Z]+)",\s*"(/v1/[^"]*|{UNVERSIONED})"', read("daemon/api/routes.c"))}


def openapi():
    routes, path = set(), None
    for line in read("docs/openapi.yaml").splitlines():
        m = re.match(r"^  (/\S*):\s*$", line)
        if m:
            path = "/v1" + m.group(1)
            continue
        if path and re.match(r"^    servers:", line):  # a path of its own server: not under /v1
            path = path[len("/v1"):]
            continue
        m = re.match(r"^    (get|post|put|delete|patch):", line)
        if m and path:
            routes.add((m.group(1).upper(), norm(path)))
        elif re.match(r"^\S", line):
            path = None
    return routes


def api_md():
    return {(m, norm(p)) for m, p in re.findall(rf"\b(GET|POST|PUT|DELETE|PATCH) (/v1/[^\s`),]*|{UNVERSIONED})", read("docs/api.md"))}


def references():
    bad = []
    docs = ["SPECIFICATION.md"] + ["docs/" + n for n in sorted(os.listdir(os.path.join(ROOT, "docs"))) if n.endswith(".md")]
    for doc in docs:
        text = read(doc)
        for path, test in re.findall(r"`?((?:tests|bench|scripts)/[\w./-]+\.(?:py|c|mjs|sh))(?:::(\w+))?", text):
            full = os.path.join(ROOT, path)
            if not os.path.exists(full):
                bad.append(f"{doc}: {path} does not exist")
            elif test and not re.search(rf"\b(?:def|test)\s*\(?\s*{re.escape(test)}\b|\b{re.escape(test)}\s*\(", read(path)):
                bad.append(f"{doc}: {path} defines no {test}")
    return bad


def tree():
    tracked = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True, check=True).stdout
    tops = sorted({p.split("/")[0] for p in tracked.splitlines() if "/" in p and not p.startswith(".")})
    readme = read("README.md")
    return [f"README.md: the tour of the tree does not name {t}/" for t in tops if f"`{t}/" not in readme]


def main():
    routes = table()
    bad = []
    for name, doc in (("docs/openapi.yaml", openapi()), ("docs/api.md", api_md())):
        bad += [f"{name} lacks {m} {p}" for m, p in sorted(routes - doc)]
        bad += [f"{name} names {m} {p}, which the route table lacks" for m, p in sorted(doc - routes)]
    bad += references()
    bad += tree()
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

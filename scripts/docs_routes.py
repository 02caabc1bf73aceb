#!/usr/bin/python3
"""Checks that the documents of the API name the routes spaced has, and only those.

    scripts/docs_routes.py

Every route of spaced's route table (daemon/api/routes.c) is in docs/openapi.yaml and in
docs/api.md, and each of those documents names no route the table lacks: the routes of API v1,
and those outside it (GET /metrics), which openapi.yaml gives a servers: of their own. Exits 1
naming each difference. (scripts/docs_refs.py checks the tests and files the documents cite,
scripts/docs_tree.py the README's tour of the tree.)
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


def norm(path):
    """/v1/sandboxes/:id/files?path=P -> /v1/sandboxes/{}/files"""
    path = re.split(r"[?\[`]", path)[0].rstrip("/")
    return re.sub(r"(?::[a-z_]+|\{[a-z_]+\})", "{}", path)


# The routes outside API v1 (where Prometheus looks) that api.md is read for even once the table
# has lost them; GET /ui, the web console's files, is served before the table (daemon/api/ui.c).
UNVERSIONED = {"/metrics"}


def table():
    """Every (METHOD, path) of the route table, the paths normalised."""
    src = read("daemon/api/routes.c")
    body = re.search(r"\broutes\[\]\s*=\s*\{(.*?)\n\};", src, re.S)
    if not body:
        sys.exit("daemon/api/routes.c: no route table (static const struct route routes[] = {...};)")
    return {(m, norm(p)) for m, p in re.findall(r'\{\s*"([A-Z]+)",\s*"(/[^"]*)"', body.group(1))}


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


def api_md(routes):
    """The routes docs/api.md names: METHOD /v1/..., or METHOD and a path outside /v1 that the
    table has or UNVERSIONED names."""
    outside = UNVERSIONED | {p for _, p in routes if not p.startswith("/v1/")}
    paths = r"/v1/[^\s`),]*|(?:" + "|".join(sorted(map(re.escape, outside))) + r")(?![\w/])"
    return {(m, norm(p)) for m, p in re.findall(rf"\b(GET|POST|PUT|DELETE|PATCH) ({paths})", read("docs/api.md"))}


def main():
    routes = table()
    bad = []
    for name, doc in (("docs/openapi.yaml", openapi()), ("docs/api.md", api_md(routes))):
        bad += [f"{name} lacks {m} {p}" for m, p in sorted(routes - doc)]
        bad += [f"{name} names {m} {p}, which the route table lacks" for m, p in sorted(doc - routes)]
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

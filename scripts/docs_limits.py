#!/usr/bin/python3
"""Checks that the limits the documents name have the code's numbers.

    scripts/docs_limits.py [--verbose]

Every `NAME` in backquotes in docs/*.md, README.md and SPECIFICATION.md that is a numeric
#define of the code (daemon/, agent/, lib/, proto/, e2b/, cli/, builder/) is looked at in its
sentence: when the sentence gives numbers, one of them, read with its unit (bytes, KiB, MiB,
GiB; ms, s, minutes), must be the constant's value. A sentence that names a limit without a
number says nothing to check. Exits 1 naming each mismatch.
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = ("daemon", "agent", "lib", "proto", "e2b", "cli", "builder")
DEFINE = re.compile(r"^\s*#\s*define\s+([A-Z][A-Z0-9_]+)\s+(.+?)\s*(?:/\*.*)?$")
NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?:\s*\^\s*(\d+))?\s*(KiB|MiB|GiB|kB|MB|GB|ms|s\b|seconds?|minutes?|hours?|bytes?)?")
# what names a limit, a size or a time (not a message type or a flag)
LIMITY = re.compile(r"MAX|MIN|LIMIT|KEEP|TIMEOUT|DEADLINE|_MS$|_S$|_MB$|_KB$|_KIB$|BYTES|SPAN|PROBES|QUEUE|WINDOW|TOTAL|PENDING|"
                    r"_CAP$|_IDLE|_GRACE|_PERIOD|_RETRY|_AFTER|_SIZE$|_LEN$|_COUNT$|_FOLDERS$|_EVENTS$")
UNITS = {"KiB": 1024, "MiB": 1 << 20, "GiB": 1 << 30, "kB": 1000, "MB": 10**6, "GB": 10**9}


def defines():
    """{NAME: value} for every #define whose value is an integer expression."""
    raw = {}
    for top in SOURCES:
        for path in glob.glob(os.path.join(ROOT, top, "**", "*.[ch]"), recursive=True):
            with open(path, errors="replace") as f:
                for line in f:
                    m = DEFINE.match(line)
                    if m and LIMITY.search(m.group(1)):
                        raw.setdefault(m.group(1), m.group(2))
    values = {}
    for _ in range(4):  # constants defined from others
        for name, expr in raw.items():
            if name in values:
                continue
            e = re.sub(r"\((?:u?int\d+_t|size_t|unsigned(?: long)*|long(?: long)?|int|uid_t|off_t|double)\)", "", expr)
            e = re.sub(r"\b(\d+)(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU]?)\b", r"\1", e)
            e = re.sub(r"\b[A-Z][A-Z0-9_]+\b", lambda m: str(values[m.group(0)]) if m.group(0) in values else "X", e)
            if "X" in e or not re.fullmatch(r"[\d\s()+\-*/<>]+", e):
                continue
            try:
                v = eval(e.replace("/", "//"), {"__builtins__": {}})
            except Exception:
                continue
            if isinstance(v, int):
                values[name] = v
    return values


def readings(text):
    """Each number of text as the values it may stand for (with its unit, and as powers)."""
    out = []
    for m in NUMBER.finditer(text):
        n = float(m.group(1).replace(",", ""))
        if m.group(2):
            n = n ** int(m.group(2))
        unit = (m.group(3) or "").rstrip("s") if m.group(3) not in ("s", "ms") else m.group(3)
        vals = {n}
        if unit in UNITS:
            vals = {n * UNITS[unit]}
        elif unit in ("s", "second"):
            vals = {n, n * 1000}
        elif unit == "ms":
            vals = {n, n / 1000}
        elif unit == "minute":
            vals = {n * 60, n * 60000}
        elif unit == "hour":
            vals = {n * 3600, n * 3600000}
        out.append((m.group(0).strip(), vals))
    return out


def fits(value, name, vals):
    scales = [1]
    if name.endswith(("_MB", "_MIB")):
        scales = [1, 1 << 20]
    elif name.endswith(("_KB", "_KIB")):
        scales = [1, 1024]
    elif name.endswith("_MS"):
        scales = [1, 1 / 1000]
    return any(abs(v * 1 - value * s) < 1e-9 or abs(v - value * s) < 1e-9 for v in vals for s in scales) or \
        any(abs(v - value / s) < 1e-9 for v in vals for s in scales if s)


def sentences(text):
    """The document's sentences: a paragraph's lines joined; a table row, a list item one each."""
    for para in re.split(r"\n\s*\n|\n(?=\s*(?:[-*]|\d+\.)\s)|\n(?=\s*\|)", text):
        if para.lstrip().startswith("|"):
            yield from para.splitlines()
            continue
        flat = " ".join(para.split()).replace("..", " .. ")
        yield from re.split(r"(?<=[.;])\s+(?=[A-Z(`*])", flat)


def mine(sentence, name, names):
    """The numbers of sentence nearer to name's mention than to any other constant's."""
    spots = [(m.start(), m.group(1)) for m in re.finditer(r"`([A-Z][A-Z0-9_]{3,})`", sentence) if m.group(1) in names]
    out = []
    for m in NUMBER.finditer(sentence):
        if any(a <= m.start() < b for a, b in ((x.start(), x.end()) for x in re.finditer(r"`[^`]*`", sentence))):
            continue  # a number inside code: a name, a flag, a JSON example
        nearest = min(spots, key=lambda sp: abs(sp[0] - m.start()))
        if nearest[1] == name:
            out.extend(readings(m.group(0)))
    return out


def main(argv):
    values = defines()
    docs = glob.glob(os.path.join(ROOT, "docs", "*.md")) + [os.path.join(ROOT, n) for n in ("README.md", "SPECIFICATION.md")]
    bad, checked = [], 0
    for path in sorted(docs):
        with open(path) as f:
            text = f.read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        text = re.sub(r"<!-- results:begin.*?results:end -->", "", text, flags=re.S)
        for s in sentences(text):
            for name in set(re.findall(r"`([A-Z][A-Z0-9_]{3,})`", s)):
                if name not in values:
                    continue
                nums = mine(s, name, values)
                if not nums:
                    continue
                checked += 1
                if not any(fits(values[name], name, v) for _, v in nums):
                    bad.append(f"{os.path.relpath(path, ROOT)}: {name} is {values[name]} in the code; its "
                               f"sentence gives {', '.join(t for t, _ in nums)}: {s[:240]}")
    if "--verbose" in argv or bad:
        print(f"{checked} mentions of {len(values)} constants checked")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

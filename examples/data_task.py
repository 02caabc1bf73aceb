"""A data task: upload a CSV, compute with Python inside the sandbox, read the result back.

The CSV is made here (in a real application it is the user's file), written
into the sandbox with files.write(), processed by a script that runs in the
sandbox with only its standard library, and the JSON result is read back
with files.read(). The sandbox never sees anything but its own files.

Run: SPACE_HOST=unix:///run/space/space.sock PYTHONPATH=sdk/python python3 examples/data_task.py
"""

import csv
import io
import json
import random

from space import Sandbox

ANALYSIS = r'''
import csv, json, statistics
from collections import defaultdict

by_region = defaultdict(list)
with open("/work/data/sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        by_region[row["region"]].append(float(row["amount"]))

summary = {region: {"orders": len(v), "total": round(sum(v), 2), "median": statistics.median(v)}
           for region, v in sorted(by_region.items())}
with open("/work/out/summary.json", "w") as f:
    json.dump(summary, f, indent=2)
print(f"{sum(len(v) for v in by_region.values())} orders in {len(summary)} regions")
'''


def make_csv(rows=5000, seed=7):
    rnd = random.Random(seed)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["order_id", "region", "amount"])
    for i in range(rows):
        w.writerow([i, rnd.choice(["north", "south", "east", "west"]), round(rnd.uniform(5, 500), 2)])
    return buf.getvalue()


def main():
    data = make_csv()
    with Sandbox.create(timeout=120, metadata={"example": "data_task"}) as sb:
        sb.files.write("/work/data/sales.csv", data)
        sb.files.write("/work/analysis.py", ANALYSIS)
        sb.files.make_dir("/work/out")
        r = sb.commands.run("python3 /work/analysis.py", cwd="/work", timeout=120)
        print("sandbox says:", r.stdout.strip())
        summary = json.loads(sb.files.read("/work/out/summary.json"))

    # check the sandbox's answer against the same computation done here
    totals = {}
    for row in csv.DictReader(io.StringIO(data)):
        totals[row["region"]] = totals.get(row["region"], 0.0) + float(row["amount"])
    for region, s in summary.items():
        assert abs(s["total"] - totals[region]) < 0.01, (region, s, totals[region])
        print(f"{region:6} {s['orders']:5} orders  total {s['total']:10.2f}  median {s['median']:7.2f}")
    assert sum(s["orders"] for s in summary.values()) == 5000
    print("result verified")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""summary.json of scripts/device-check.sh: every step's outcome and seconds, the machine, the
CUDA tests' results and the lines where they print their largest differences, and the 7B-shaped
model's extract and truncate timings from their manifests."""
import json
import os
import re
import sys


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def main():
    logs, out, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    steps = []
    for line in read(os.path.join(logs, "steps.tsv")).splitlines():
        name, status, took, last = (line.split("\t") + ["", "", "", ""])[:4]
        steps.append({"step": name, "status": status, "seconds": int(took or 0), "last_line": last})
    summary = {"seconds": seconds, "steps": steps,
               "failed": [s["step"] for s in steps if s["status"] not in ("ok", "skipped")],
               "skipped": [s["step"] for s in steps if s["status"] == "skipped"],
               "environment": read(os.path.join(logs, "environment.log")).splitlines()[-12:]}
    tests = read(os.path.join(out, "cuda_tests.json"))
    if tests:
        t = json.loads(tests)
        summary["cuda_tests"] = {"tests": t.get("tests"), "failures": t.get("failures"),
                                 "disabled": t.get("disabled")}
    printed = read(os.path.join(logs, "cuda_tests.log")) + read(os.path.join(logs, "cpu_tests.log"))
    summary["differences"] = [l for l in printed.splitlines()
                              if re.search(r"largest|differing|Failure|FAILED|SKIPPED", l)][:60]
    for kind in ("extract", "truncate"):
        m = read(os.path.join(out, f"{kind}_7b_manifest.json"))
        if m:
            manifest = json.loads(m)
            summary[f"{kind}_7b"] = {k: manifest.get(k) for k in ("timings", "documents", "model")}
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()

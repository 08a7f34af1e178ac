#!/usr/bin/env python3
"""Whether two trees of run outputs (scripts/readme-outputs.sh) hold the same results.

Provenance is set apart: each manifest's version, git_commit, command and timings, the
commit and version in a report's page, the trees' own paths, the path of the attngeo that
wrote them and staging folders' process ids. Everything else must match
byte for byte (JSON after those keys are removed). Prints each file that differs and exits 1
when any does.
Usage: python3 scripts/same-outputs.py BEFORE AFTER
"""
import json
import os
import re
import sys

PROVENANCE = {"version", "git_commit", "command", "timings"}


def without_provenance(value):
    if isinstance(value, dict):
        return {k: without_provenance(v) for k, v in value.items() if k not in PROVENANCE}
    if isinstance(value, list):
        return [without_provenance(v) for v in value]
    return value


def normalised(path, root):
    data = open(path, "rb").read()
    if path.endswith((".png", ".safetensors", ".bin")):
        return data
    text = data.decode("utf-8", errors="replace").replace(os.path.abspath(root), "<ROOT>")
    # The program that wrote it (each tree's own build folder) and a staging folder's process id.
    text = re.sub(r"[^\s\"<>]*/app/attngeo\b", "<ATTNGEO>", text)
    text = re.sub(r"\.staging-[0-9]+", ".staging-<PID>", text)
    if path.endswith(".json"):
        try:
            return json.dumps(without_provenance(json.loads(text)), sort_keys=True)
        except ValueError:
            return text
    # A report shows the extract's wall time beside the model's facts.
    text = re.sub(r"<td>extract time \(s\)</td><td>[^<]*</td>", "<td>extract time (s)</td>", text)
    # A report names the attngeo version and commit that wrote it.
    return re.sub(r"attngeo \S+ \(commit [^)]*\)", "attngeo <VERSION>", text)


def files(root):
    out = set()
    for folder, _, names in os.walk(root):
        for name in names:
            out.add(os.path.relpath(os.path.join(folder, name), root))
    return out


def main():
    before, after = sys.argv[1], sys.argv[2]
    a, b = files(before), files(after)
    differing = sorted(a ^ b)
    for name in differing:
        print(f"only in {'BEFORE' if name in a else 'AFTER'}: {name}")
    for name in sorted(a & b):
        if normalised(os.path.join(before, name), before) != normalised(
            os.path.join(after, name), after
        ):
            print(f"differs: {name}")
            differing.append(name)
    print(f"{len(a & b)} files compared, {len(differing)} differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The cluster recipes docs/commands/merge.md shows are examples/cluster/'s files, verbatim, so the
ones the cluster tests run are the ones a user copies. Prints each file that is missing or differs."""
import pathlib
import sys

root = pathlib.Path(sys.argv[1])
page = "docs/commands/merge.md"
text = (root / page).read_text()
recipes = sorted((root / "examples" / "cluster").iterdir())
missing = [p.name for p in recipes if p.read_text() not in text]
for name in missing:
    print(f"{page} does not show examples/cluster/{name} verbatim")
print(f"{len(recipes) - len(missing)} recipes shown verbatim")
sys.exit(1 if missing else 0)

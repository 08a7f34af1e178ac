#!/usr/bin/env python3
"""The cluster recipes the README shows are examples/cluster/'s files, verbatim, so the ones the
cluster tests run are the ones a user copies. Prints each file that is missing or differs."""
import pathlib
import sys

root = pathlib.Path(sys.argv[1])
readme = (root / "README.md").read_text()
recipes = sorted((root / "examples" / "cluster").iterdir())
missing = [p.name for p in recipes if p.read_text() not in readme]
for name in missing:
    print(f"README.md does not show examples/cluster/{name} verbatim")
print(f"{len(recipes) - len(missing)} recipes shown verbatim")
sys.exit(1 if missing else 0)

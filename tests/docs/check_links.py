#!/usr/bin/env python3
"""Every link of README.md and the docs/ pages resolves: the file (or folder) it names exists and,
for a `#anchor` into a Markdown page, that page has a heading with that GitHub anchor. Also keeps
the README a front door of at most 200 lines. Usage: check_links.py SOURCE_DIR. Prints each broken
link as FILE:LINE: TARGET and exits 1 when there is one."""
import pathlib
import re
import sys

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
README_MAX_LINES = 200


def prose_lines(path):
    """(line number, text) of the lines outside ``` fences."""
    fenced = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def anchors(path):
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats -1, -2."""
    seen, result = {}, set()
    for _, line in prose_lines(path):
        heading = re.match(r"#{1,6} (.*)", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def broken_links(page, root):
    for number, line in prose_lines(page):
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):  # code spans hold no links
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            name, _, anchor = target.partition("#")
            resolved = (page.parent / name).resolve() if name else page
            if not resolved.exists():
                yield f"{page.relative_to(root)}:{number}: {target} (no such file)"
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                yield f"{page.relative_to(root)}:{number}: {target} (no such heading)"


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    pages = [root / "README.md"] + sorted((root / "docs").rglob("*.md"))
    problems = [problem for page in pages for problem in broken_links(page, root)]
    readme_lines = len((root / "README.md").read_text(encoding="utf-8").splitlines())
    if readme_lines > README_MAX_LINES:
        problems.append(f"README.md: {readme_lines} lines, more than {README_MAX_LINES}")
    for problem in problems:
        print(problem)
    print(f"{len(pages)} pages checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

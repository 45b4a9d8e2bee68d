#!/usr/bin/env python3
"""Keeps docs/comparison.md's feature table true: every row of the table under
"## Feature by feature" names, in its "tested by" column, at least one test as `Suite.Name`,
and each named test is defined (TEST, TEST_F or TEST_P) in a .cpp file under tests/.
A renamed or deleted test, or a row with no test, fails the check.

Usage: check_comparison.py <repository root>. Exit status 1 and a message per problem.
"""
import pathlib
import re
import sys

SECTION = "## Feature by feature"
DEFINED = re.compile(r"^\s*TEST(?:_F|_P)?\(\s*(\w+)\s*,\s*(\w+)\s*\)", re.M)
NAMED = re.compile(r"`(\w+)\.(\w+)`")


def table_rows(page):
    """The body rows of the first table after SECTION, as lists of cells."""
    lines = page.split("\n")
    try:
        start = lines.index(SECTION)
    except ValueError:
        return None, None
    rows, header = [], None
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            if rows or header:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not all(set(c) <= set("-: ") for c in cells):
            rows.append(cells)
    return header, rows


def main(root):
    root = pathlib.Path(root)
    page = (root / "docs" / "comparison.md").read_text(encoding="utf-8")
    header, rows = table_rows(page)
    if header is None:
        print(f"docs/comparison.md: no '{SECTION}' section")
        return 1
    if "tested by" not in [h.lower() for h in header]:
        print("docs/comparison.md: the feature table has no 'tested by' column")
        return 1
    column = [h.lower() for h in header].index("tested by")
    defined = set()
    for source in (root / "tests").rglob("*.cpp"):
        defined.update(DEFINED.findall(source.read_text(encoding="utf-8", errors="replace")))
    problems = 0
    for row in rows:
        feature = row[0]
        named = NAMED.findall(row[column]) if column < len(row) else []
        if not named:
            print(f"docs/comparison.md: row '{feature}' names no test")
            problems += 1
        for suite, name in named:
            if (suite, name) not in defined:
                print(f"docs/comparison.md: row '{feature}' names {suite}.{name}, "
                      "which no file under tests/ defines")
                problems += 1
    if not rows:
        print("docs/comparison.md: the feature table has no rows")
        problems += 1
    if problems == 0:
        print(f"docs/comparison.md: {len(rows)} features, every named test exists")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))

#!/usr/bin/env python3
"""Checks that docs/internals.md's module map matches tools/check_layers.py and the tree.

1. The numbered list under "## Modules, lowest first" names the modules of check_layers.py,
   in its order.
2. Each item names every pattern check_layers.py gives its module, and every file it names
   (a path ending in .hpp, .cpp, .h or .cu, or a pattern with '*') is one of those patterns or
   a file of that module.
3. Every file path the page names anywhere exists in the repository.

Paths are under include/tessera/ unless they start with src/, tools/, tests/ or docs/.
Usage: check_internals_map.py <repository root>. Exit status 1 and a message per mismatch.
"""
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import check_layers  # noqa: E402

ITEM = re.compile(r"^\d+\. \*\*(\w+)\*\*")
TICK = re.compile(r"`([^`]+)`")
PATH = re.compile(r"^[\w./*-]+\.(hpp|cpp|h|cu|py)$|^[\w.-]*/[\w./-]*\*[\w./*-]*$")
ROOTED = ("src/", "tools/", "tests/", "docs/", "include/", "cmake/", "bench/")


def full(token):
    return token if token.startswith(ROOTED) else check_layers.I + token


def modules_in(text):
    """[(name, [tokens])] of the numbered list of the modules section."""
    section = text.split("## Modules, lowest first", 1)
    if len(section) < 2:
        return None
    body = section[1].split("\n## ", 1)[0]
    items = []
    for line in body.splitlines():
        m = ITEM.match(line)
        if m:
            items.append((m.group(1), []))
            line = line[m.end():]
        elif not line.startswith("   ") or not items:
            if line.strip() and items:
                items.append((None, []))  # the list ended
            continue
        if items and items[-1][0] is not None:
            items[-1][1].extend(t for t in TICK.findall(line) if PATH.match(t))
    return [(n, ts) for n, ts in items if n is not None]


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    text = (root / "docs" / "internals.md").read_text()
    bad = []
    files = check_layers.tree(root)
    owner, _ = check_layers.module_of(files)
    listed = modules_in(text)
    if listed is None:
        bad.append('docs/internals.md: no "## Modules, lowest first" section')
        listed = []
    doc_names = [n for n, _ in listed]
    tool_names = [n for n, _ in check_layers.MODULES]
    if doc_names != tool_names:
        bad.append("docs/internals.md lists the modules " + ", ".join(doc_names) +
                   "; tools/check_layers.py has " + ", ".join(tool_names))
    patterns = dict(check_layers.MODULES)
    for name, tokens in listed:
        if name not in patterns:
            continue
        named = {full(t) for t in tokens}
        for pat in patterns[name]:
            if pat not in named:
                bad.append(f"docs/internals.md: module {name} does not name {pat}")
        for path in sorted(named):
            if path in patterns[name]:
                continue
            if path not in owner:
                bad.append(f"docs/internals.md: module {name} names {path}, which is no file "
                           "of the tree")
            elif owner[path][1] != name:
                bad.append(f"docs/internals.md: module {name} names {path}, which is in "
                           f"module {owner[path][1]}")
    for token in sorted(set(TICK.findall(text))):
        if PATH.match(token) and "*" not in token and not (root / full(token)).is_file():
            bad.append(f"docs/internals.md names {token}, which is not in the repository")
    for b in bad:
        print(b)
    print(f"check_internals_map: {len(listed)} modules in docs/internals.md, "
          f"{len(bad)} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

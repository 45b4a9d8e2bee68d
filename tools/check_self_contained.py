#!/usr/bin/env python3
"""Checks that the repository stands alone (the `self_contained` test).

1. No source, script or page names a file that lives outside the repository: the design notes,
   benchmark definitions and style guide the project started from are summarised in docs/
   (docs/design.md, docs/benchmarks.md), so code and docs cite those pages instead.
2. Every relative link of a Markdown page (README.md, CONTRIBUTING.md, CHANGELOG.md, docs/*.md)
   points at a file that exists in the repository.
3. The contributor's map, docs/internals.md, and the design page are linked from README.md and
   docs/README.md.
4. The library's headers and sources say what a behaviour is, not which reference ECS it came
   from: they name none of them (docs/comparison.md keeps the sources).

Usage: check_self_contained.py <repository root>. Exit status 1 and a line per finding.
"""
import pathlib
import re
import subprocess
import sys

# Built from pieces so that this file does not match itself.
OUTSIDE = re.compile("|".join([
    r"\b" + "DESIGN" + r"\.md", r"\b" + "BENCHMARKS" + r"\.md", r"\b" + "MEASURING" + r"\.md",
    r"\b" + "STYLE" + r"\.md", r"\.\./" + "shared/", "/work" + "/shared", "/work" + "/main",
]))
SOURCES_OF_FEATURES = re.compile("Cozy" + "ECS|mo" + "ecs|cin" + "der/ecs|cin" + "der's|prag" + "ma_ecs")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
TEXT_SUFFIXES = {".hpp", ".cpp", ".h", ".cu", ".py", ".md", ".txt", ".cmake", ".json", ".sh",
                 ".in", ".yml", ".yaml", ".js", ".html", ".css"}


def repository_files(root):
    """The files git tracks (or would: untracked but not ignored), else every file."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, text=True, check=True)
        return [root / line for line in out.stdout.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):
        return [p for p in root.rglob("*") if p.is_file() and "build" not in p.parts
                and ".git" not in p.parts]


def main(argv):
    root = pathlib.Path(argv[1]).resolve()
    problems = []
    files = [p for p in repository_files(root) if p.is_file()]
    for p in files:
        rel = p.relative_to(root)
        if p.suffix not in TEXT_SUFFIXES and p.name not in ("Makefile", "CMakeLists.txt", "run"):
            continue
        try:
            text = p.read_text()
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                problems.append(f"{rel}:{n}: names a file outside the repository: "
                                f"{line.strip()[:120]}")
        if rel.parts[0] in ("include", "src"):
            for n, line in enumerate(text.splitlines(), 1):
                if SOURCES_OF_FEATURES.search(line):
                    problems.append(f"{rel}:{n}: names a reference ECS (say what it does instead): "
                                    f"{line.strip()[:120]}")
        if p.suffix == ".md" and (p.parent == root or rel.parts[0] == "docs"):
            fenced = False
            for n, line in enumerate(text.splitlines(), 1):
                if line.lstrip().startswith("```"):
                    fenced = not fenced
                if fenced:
                    continue
                for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                    if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                        continue
                    path = target.split("#", 1)[0]
                    if path and not (p.parent / path).exists():
                        problems.append(f"{rel}:{n}: the link ({target}) points at no file")
    for page in ("README.md", "docs/README.md"):
        text = (root / page).read_text()
        for wanted in ("internals.md", "design.md"):
            if not re.search(r"\]\((docs/)?" + re.escape(wanted) + r"(#[^)]*)?\)", text):
                problems.append(f"{page}: does not link {wanted}")
    for line in problems:
        print(line)
    if problems:
        print(f"check_self_contained: {len(problems)} finding(s)")
        return 1
    print(f"check_self_contained: {len(files)} files, no reference outside the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

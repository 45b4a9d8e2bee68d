#!/usr/bin/env python3
"""Holds a public header to a budget of preprocessed lines and a list of banned includes.

Preprocesses a one-line translation unit `#include <HEADER>` with the given compiler
(`CXX -std=c++20 -I INCLUDE -E`), then
1. fails when it reaches a banned header: oneTBB, glm or nlohmann-json, or the standard
   <chrono>, <map>, <sstream>, <functional> or <unordered_map> (docs/performance.md, "Compile
   time", says why each is out);
2. fails when the output has more than BUDGET non-blank lines (line markers not counted).
Line counts are stable from run to run where compile seconds are not; the budget is set from
the measured count plus a margin, and lowered when a change cuts the count for good.

Usage: check_header_budget.py CXX INCLUDE_DIR BUDGET [--header tessera/tessera.hpp]
Exit status 0 when within budget, 1 otherwise (with what was found on stdout).
"""
import argparse
import re
import subprocess
import sys
import tempfile

MARKER = re.compile(r'^#\s*\d+\s+"([^"]+)"')
BANNED = [
    (re.compile(r"/(oneapi/)?tbb/"), "oneTBB"),
    (re.compile(r"/glm/"), "glm"),
    (re.compile(r"/nlohmann/"), "nlohmann-json"),
    (re.compile(r"/c\+\+/[^/]+/(chrono|map|sstream|functional|unordered_map)$"), "standard"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cxx")
    ap.add_argument("include_dir")
    ap.add_argument("budget", type=int)
    ap.add_argument("--header", default="tessera/tessera.hpp")
    args = ap.parse_args()

    with tempfile.NamedTemporaryFile("w", suffix=".cpp") as tu:
        tu.write(f"#include <{args.header}>\n")
        tu.flush()
        run = subprocess.run([args.cxx, "-std=c++20", "-I", args.include_dir, "-E", tu.name],
                             capture_output=True, text=True)
    if run.returncode != 0:
        print(run.stderr)
        print(f"check_header_budget: {args.cxx} -E failed on #include <{args.header}>")
        return 1

    lines, files = 0, set()
    for line in run.stdout.splitlines():
        m = MARKER.match(line)
        if m:
            files.add(m.group(1))
        elif line.strip():
            lines += 1

    bad = []
    for pattern, what in BANNED:
        hits = sorted(f for f in files if pattern.search(f))
        if hits:
            more = f" and {len(hits) - 1} more" if len(hits) > 1 else ""
            bad.append(f"#include <{args.header}> reaches {hits[0]}{more} ({what}: banned)")
    if lines > args.budget:
        bad.append(f"#include <{args.header}> preprocesses to {lines} non-blank lines, over the "
                   f"budget of {args.budget}: find what grew (tools/check_header_budget.py "
                   f"prints the count; g++ -H lists the headers) and cut it, or raise the budget "
                   f"in tests/CMakeLists.txt with the reason")
    for b in bad:
        print(b)
    print(f"check_header_budget: <{args.header}>: {lines} non-blank preprocessed lines "
          f"(budget {args.budget}), {len(files)} files, {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Runs gdb -batch with printers.gdb on the test program and checks what the printers print.

Usage: check_printers.py --gdb GDB --program PROGRAM [--source SCRIPT]
  --gdb      gdb's path ("" or missing: the test is skipped, exit status 77)
  --source   source the printers from SCRIPT instead of expecting gdb to auto-load them from
             the program's .debug_gdb_scripts section (a build with TESSERA_GDB_SCRIPTS off)
Exit status 0 when every expectation holds, 1 otherwise (gdb's output is printed).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# (section, regular expression that must match a line of it); sections in order.
EXPECT = [
    ("entity", r"^\$\d+ = 0:1$"),
    ("entity", r"^\$\d+ = 2:1$"),
    ("entity", r"^\$\d+ = 3:1$"),
    ("entity", r"^\$\d+ = null$"),
    ("world", r"^\$\d+ = tessera::World with 4 entities in 5 archetypes, tick \d+ = \{"
              r"\[0\] = archetype 0 \{\}: 0 rows, "
              r"\[1\] = archetype 1 \{Position, Velocity\}: 1 row, "
              r"\[2\] = archetype 2 \{Position, Velocity, Frozen\}: 1 row, "
              r"\[3\] = archetype 3 \{Position, Health, game::Label\}: 1 row, "
              r"\[4\] = archetype 4 \{Health\}: 1 row\}$"),
    ("query", r"^\$\d+ = Query<Position&, Velocity const&>, all \{Position, Velocity\}, "
              r"2 matched tables = \{\[1\] = archetype 1 \{Position, Velocity\}: 1 row, "
              r"\[2\] = archetype 2 \{Position, Velocity, Frozen\}: 1 row\}$"),
    ("query", r"^\$\d+ = Query<Health const&>, all \{Health\}, not run yet"),
    ("archetype_info", r"^\$\d+ = archetype 3 \{Position, Health, game::Label\}: 1 row "
                       r"\(capacity \d+, \d+ B per row\)$"),
    ("component_id", r"^\$\d+ = game::Label \(id \d+\)$"),
    ("components", r"^Position = \{x = 1.75, y = 1.5\}$"),
    ("components", r'^game::Label = \{text = "hero"\}$'),
    ("components", r"^Health = \{hp = 2\}$"),
    ("components", r"^\$\d+ = \{dx = 0.25, dy = -1\}$"),
    ("components", r"^\$\d+ = 42$"),
    ("components", r"^entity 2:1: archetype 3 \{Position, Health, game::Label\}: 1 row, row 0$"),
    ("components", r"^  Health = \{hp = 42\}$"),
    ("components", r"^  Frozen = \(tag\)$"),
    ("components", r"^archetype 4 \{Health\}: 1 row$"),
    ("components", r"^  3:2$"),
    ("errors", r"^error: entity 3:1 is not alive \(its index is at generation 2\)$"),
    ("errors", r"^error: the null entity has no components$"),
    ("errors", r"^error: entity 0:1 has no Health$"),
    ("errors", r"^error: the world has no component named Nothing$"),
    ("moved", r"^\$\d+ = tessera::World \(moved from: no state\)$"),
]


def sections(output):
    """Lines of gdb's output by the section that printers.gdb's `echo === name` opened."""
    result = {"": []}
    current = ""
    for line in output.splitlines():
        m = re.match(r"^=== (\w+)$", line)
        if m:
            current = m.group(1)
            result.setdefault(current, [])
        else:
            result[current].append(line)
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gdb", default="")
    parser.add_argument("--program", required=True)
    parser.add_argument("--source", default="")
    args = parser.parse_args()
    gdb = args.gdb or shutil.which("gdb")
    if not gdb or not os.path.exists(gdb):
        print("gdb is not installed: skipped")
        return 77
    program = os.path.abspath(args.program)
    command = [gdb, "-nx", "-batch", "-iex", "add-auto-load-safe-path " + program]
    if args.source:
        command += ["-iex", "source " + os.path.abspath(args.source)]
    command += ["-x", os.path.join(HERE, "printers.gdb"), program]
    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=300, check=False)
    found = sections(run.stdout)
    failures = []
    if not args.source and not re.search(r"^Yes\s+tessera-gdb-printers", run.stdout, re.M):
        failures.append("gdb did not auto-load tessera-gdb-printers from the program")
    if "done" not in found:
        failures.append("gdb stopped before the end of printers.gdb")
    for section, pattern in EXPECT:
        if not any(re.search(pattern, line) for line in found.get(section, [])):
            failures.append("section %s: no line matches %s" % (section, pattern))
    if failures:
        print(" ".join(command))
        print(run.stdout)
        for f in failures:
            print("FAIL:", f)
        return 1
    print("gdb printers: %d expectations hold" % len(EXPECT))
    return 0


if __name__ == "__main__":
    sys.exit(main())

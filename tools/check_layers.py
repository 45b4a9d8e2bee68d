#!/usr/bin/env python3
"""Checks the layering of docs/internals.md on the include graph of include/ and src/.

1. No include cycle among the project's headers.
2. The core (detail/core.hpp, detail/archetype.hpp, src/core*.cpp) reaches, through any chain
   of includes, nothing above it: no observers, relations, deferral, hooks, strings,
   serialization, queries or World.
3. The operation layer (detail/operations.hpp, detail/storage.hpp, detail/hooks.hpp,
   src/operations.cpp, src/storage.cpp) reaches no observer, relation, dynamic, serialization,
   transform, query or World header: it calls the layers above only through detail/hooks.hpp.

Usage: check_layers.py <repository root>. Exit status 1 and a message per violation.
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)

CORE = ["include/tessera/detail/core.hpp", "include/tessera/detail/archetype.hpp",
        "src/core.cpp", "src/core_copy.cpp", "src/core_move.cpp"]
CORE_MAY_REACH = {"include/tessera/" + h for h in
                  ["assert.hpp", "component.hpp", "entity.hpp", "error.hpp",
                   "detail/core.hpp", "detail/archetype.hpp", "detail/type_list.hpp"]}
OPERATIONS = ["include/tessera/detail/operations.hpp", "include/tessera/detail/storage.hpp",
              "include/tessera/detail/hooks.hpp", "src/operations.cpp", "src/storage.cpp"]
OPERATIONS_MAY_NOT_REACH = {"include/tessera/" + h for h in
                            ["observer.hpp", "detail/observe.hpp", "relation.hpp",
                             "dynamic.hpp", "serialize.hpp", "snapshot.hpp", "transform.hpp",
                             "query.hpp", "world.hpp", "detail/world_impl.hpp", "schedule.hpp",
                             "commands.hpp"]}


def resolve(root, src, name):
    """The project file an include names, or None for a system or third-party header."""
    for base in (root / "include", src.parent):
        p = (base / name).resolve()
        if p.is_file() and root in p.parents:
            return str(p.relative_to(root))
    return None


def graph(root):
    files = [p for d in ("include", "src") for p in (root / d).rglob("*")
             if p.suffix in (".hpp", ".cpp")]
    g = {}
    for p in files:
        rel = str(p.relative_to(root))
        g[rel] = [r for n in INCLUDE.findall(p.read_text()) if (r := resolve(root, p, n))]
    return g


def reach(g, start):
    seen, todo = set(), [start]
    while todo:
        f = todo.pop()
        for n in g.get(f, []):
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


def cycles(g):
    out, state, stack = [], {}, []

    def visit(f):
        state[f] = 1
        stack.append(f)
        for n in g.get(f, []):
            if state.get(n) == 1:
                out.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[f] = 2

    for f in sorted(g):
        if f not in state:
            visit(f)
    return out


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    g = graph(root)
    bad = []
    for c in cycles(g):
        bad.append("include cycle: " + " -> ".join(c))
    for f in CORE:
        if f not in g:
            bad.append(f"{f}: missing (update tools/check_layers.py with the layout)")
            continue
        for n in sorted(reach(g, f) - CORE_MAY_REACH):
            bad.append(f"core file {f} reaches {n}, which is above the core")
    for f in OPERATIONS:
        if f not in g:
            bad.append(f"{f}: missing (update tools/check_layers.py with the layout)")
            continue
        for n in sorted(reach(g, f) & OPERATIONS_MAY_NOT_REACH):
            bad.append(f"operation-layer file {f} reaches {n} (call it through detail/hooks.hpp)")
    for b in bad:
        print(b)
    print(f"check_layers: {len(g)} files, {len(bad)} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Checks the module order of docs/internals.md on the include graph of include/ and src/.

A module is a concept's headers and sources together (module "queries" is query.hpp, chunk.hpp,
mut.hpp, detail/terms.hpp and src/query.cpp). MODULES lists them lowest first, and:

1. Every file under include/ and src/ belongs to exactly one module (a new file is an error
   until it is given one here), and every pattern below names at least one file.
2. No file of a module includes a file of a higher module, headers and sources alike: the
   lower modules never reach the higher ones, whatever the chain of includes.
3. No include cycle among the project's files (within a module too).

The core and the operation layer are the lowest modules after the base vocabulary and the
component registry, so rule 2 keeps them free of observers, relations, queries and World: they
call what is attached above them only through detail/hooks.hpp and detail/attachment.hpp.

Usage: check_layers.py <repository root> [--inject FILE INCLUDE]
Exit status 1 and a message per violation. --inject checks a temporary copy of the tree in
which FILE (a path from the root; made when missing) also includes INCLUDE (as written in an
#include), so a test can prove that an upward include, or a file of no module, is caught.
"""
import fnmatch
import pathlib
import re
import shutil
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)

I = "include/tessera/"
# The modules, lowest first: (name, patterns). A pattern is a path from the repository root,
# fnmatch-style ("src/relation*" is relation.cpp, relation_despawn.cpp and relation_index.hpp).
MODULES = [
    ("base", [I + "assert.hpp", I + "error.hpp", I + "entity.hpp", I + "fwd.hpp",
              I + "detail/type_list.hpp", "src/error.cpp", "src/entity.cpp", "src/utf8.hpp"]),
    ("components", [I + "component.hpp", I + "reflect.hpp", I + "prefab_tags.hpp",
                    "src/registry.cpp"]),
    ("core", [I + "detail/archetype.hpp", I + "detail/core.hpp", "src/core.cpp",
              "src/core_copy.cpp", "src/core_move.cpp", "src/core_row_log.cpp",
              I + "detail/sparse_set.hpp", "src/sparse_set.cpp"]),
    ("operations", [I + "detail/attachment.hpp", I + "detail/hooks.hpp",
                    I + "detail/command_queue.hpp", I + "detail/queued_changes.hpp",
                    I + "detail/entity_list.hpp", I + "detail/storage.hpp",
                    I + "detail/operations.hpp", "src/operations.cpp", "src/required.hpp",
                    "src/storage.cpp", "src/command_queue.cpp"]),
    ("parallel", [I + "detail/parallel.hpp", "src/parallel.cpp"]),
    ("world", [I + "world.hpp", I + "detail/world_impl.hpp", I + "detail/spawn_many.hpp",
               "src/world.cpp", "src/spawn_rollback.cpp", I + "detail/sparse_access.hpp"]),
    ("commands", [I + "commands.hpp", "src/commands.cpp"]),
    ("accessor", [I + "accessor.hpp"]),
    ("event_kinds", [I + "event_kind.hpp"]),
    ("query_spec", [I + "query_spec.hpp", "src/query_spec.cpp"]),
    ("observers", [I + "observer.hpp", I + "detail/notify.hpp", "src/observer.cpp",
                   "src/observer_hooks.hpp"]),
    ("relations", [I + "relation.hpp", "src/relation*"]),
    ("queries", [I + "query.hpp", I + "chunk.hpp", I + "mut.hpp", I + "detail/terms.hpp",
                 I + "detail/cascade.hpp", I + "detail/cascade_loop.hpp", I + "traverse.hpp",
                 "src/query.cpp", "src/query_cascade.cpp", I + "detail/sparse_query.hpp"]),
    ("resources", [I + "resource.hpp", "src/resource.cpp"]),
    ("events", [I + "events.hpp", "src/events.cpp"]),
    ("dynamic", [I + "dynamic.hpp", I + "detail/field_value.hpp", "src/dynamic.cpp"]),
    ("authoring", [I + "prefab.hpp", I + "names.hpp", I + "module.hpp", "src/prefab.cpp",
                   "src/names.cpp", "src/module.cpp"]),
    ("transforms", [I + "transform.hpp", "src/transform*"]),
    ("serialization", [I + "snapshot.hpp", I + "serialize.hpp", "src/snapshot.cpp",
                       "src/serialize*", "src/state_hash.cpp"]),
    ("schedules", [I + "system.hpp", I + "schedule.hpp", I + "system_stats.hpp", "src/schedule*"]),
    ("fixed_step", [I + "fixed_step.hpp", "src/fixed_step.cpp"]),
    # net/enet.hpp is net_enet's, so net names its headers one by one.
    ("net", [I + "net.hpp", I + "net/replicator.hpp", I + "net/mirror.hpp",
             I + "net/rollback.hpp", "src/net/*"]),
    ("net_enet", [I + "net/enet.hpp", "src/net_enet/*"]),
    ("gpu", [I + "gpu.hpp", I + "detail/gpu_*.hpp", "src/gpu/*"]),
    ("inspector", [I + "inspect.hpp", "src/inspect/*"]),
    ("umbrella", [I + "tessera.hpp"]),
]


def resolve(root, src, name):
    """The project file an include names, or None for a system or third-party header."""
    for base in (root / "include", src.parent):
        p = (base / name).resolve()
        if p.is_file() and root in p.parents:
            return str(p.relative_to(root))
    return None


def tree(root):
    """Every file under include/ and src/, as paths from the root."""
    return sorted(str(p.relative_to(root)) for d in ("include", "src")
                  for p in (root / d).rglob("*") if p.is_file())


def graph(root):
    g = {}
    for rel in tree(root):
        if pathlib.PurePath(rel).suffix not in (".hpp", ".cpp", ".h", ".cu"):
            continue
        p = root / rel
        g[rel] = [r for n in INCLUDE.findall(p.read_text()) if (r := resolve(root, p, n))]
    return g


def module_of(files):
    """file -> (rank, module name), and the problems: files of no module or of two, and
    patterns that name no file."""
    owner, bad = {}, []
    for rank, (name, patterns) in enumerate(MODULES):
        for pat in patterns:
            hits = [f for f in files if fnmatch.fnmatchcase(f, pat)]
            if not hits:
                bad.append(f"module {name}: {pat} names no file (update tools/check_layers.py "
                           "and docs/internals.md with the layout)")
            for f in hits:
                if f in owner and owner[f][1] != name:
                    bad.append(f"{f} is in two modules: {owner[f][1]} and {name}")
                owner.setdefault(f, (rank, name))
    for f in files:
        if f not in owner:
            bad.append(f"{f} belongs to no module (give it one in tools/check_layers.py and "
                       "docs/internals.md)")
    return owner, bad


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


def check(root):
    files = tree(root)
    g = graph(root)
    owner, bad = module_of(files)
    for f in sorted(g):
        if f not in owner:
            continue
        for n in g[f]:
            if n in owner and owner[n][0] > owner[f][0]:
                bad.append(f"module {owner[f][1]} ({f}) includes {n} of module {owner[n][1]}, "
                           "which is above it")
    for c in cycles(g):
        bad.append("include cycle: " + " -> ".join(c))
    for b in bad:
        print(b)
    print(f"check_layers: {len(files)} files in {len(MODULES)} modules, {len(bad)} violations")
    return 1 if bad else 0


def main():
    args = sys.argv[1:]
    inject = None
    if "--inject" in args:
        k = args.index("--inject")
        inject = args[k + 1:k + 3]
        del args[k:k + 3]
        if len(inject) != 2:
            print("usage: check_layers.py <root> [--inject FILE INCLUDE]")
            return 2
    root = pathlib.Path(args[0] if args else ".").resolve()
    if inject is None:
        return check(root)
    with tempfile.TemporaryDirectory() as tmp:
        copy = pathlib.Path(tmp).resolve() / "tree"
        for d in ("include", "src"):
            shutil.copytree(root / d, copy / d)
        target = copy / inject[0]
        before = target.read_text() if target.exists() else ""  # a new file is made
        target.write_text(before + f"\n#include <{inject[1]}>\n")
        print(f"check_layers: {inject[0]} now also includes <{inject[1]}>")
        return check(copy)


if __name__ == "__main__":
    sys.exit(main())

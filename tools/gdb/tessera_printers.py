# gdb pretty-printers and commands for tessera (docs/debugging.md).
#
# tessera's library embeds this file in the .debug_gdb_scripts section of one of its objects
# (cmake/GdbScripts.cmake), so gdb loads it from any program linked with tessera once the
# program's directory is in gdb's auto-load safe-path. It is also installed as
# <prefix>/share/tessera/gdb/tessera_printers.py, to `source` by hand.
#
# Printers: tessera::Entity ("3:1", "null"), tessera::ComponentId, tessera::World (counts,
# archetypes as children), tessera::Query<...> and detail::QueryState (terms, spec, matched
# tables), tessera::ArchetypeInfo and detail::Archetype (component names, rows).
# Commands: tessera-get WORLD ENTITY TYPE, tessera-components WORLD ENTITY,
# tessera-entities WORLD; convenience function $tessera_get(world, entity, "Type").
#
# Everything reads the inferior's memory only (no function is called), and a printer that can't
# read what it needs (optimized out, a moved-from or dangling object) says so instead of failing.

import re

import gdb
import gdb.printing
import gdb.types

# Past these counts memory is taken as garbage (a dangling or uninitialised object).
_MAX_ITEMS = 1 << 22
_MAX_SHOWN = 64  # component names / matched tables spelled out in one line

# Archetype indices of the core (include/tessera/detail/core.hpp).
_DEAD_ARCHETYPE = 0
_EMPTY_ARCHETYPE = 1
_PENDING_ARCHETYPE = 2
_NULL_INDEX = 0xFFFFFFFF


class _Unreadable(Exception):
    """Something a printer needs is optimized out or not a plausible value."""


def _check(value):
    if value.is_optimized_out:
        raise _Unreadable("optimized out")
    return value


def _int(value):
    return int(_check(value))


class _Items:
    """The elements of a contiguous range, read from the inferior only when asked for."""

    def __init__(self, start, n):
        if n < 0 or n > _MAX_ITEMS:
            raise _Unreadable("a range of %d elements" % n)
        self._start = start
        self._n = n

    def __len__(self):
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._start[k] for k in range(*i.indices(self._n))]
        if not 0 <= i < self._n:
            raise IndexError(i)
        return self._start[i]

    def __iter__(self):
        return (self._start[k] for k in range(self._n))


def _vector(v):
    """The elements of a std::vector (any allocator, std::pmr included)."""
    impl = _check(v)["_M_impl"]
    start = impl["_M_start"]
    return _Items(start, int(impl["_M_finish"] - start))


def _span(s):
    """The elements of a std::span with a dynamic extent."""
    s = _check(s)
    return _Items(s["_M_ptr"], int(s["_M_extent"]["_M_extent_value"]))


def _string_view(sv):
    n = int(sv["_M_len"])
    if n == 0:
        return ""
    if n < 0 or n > 4096:
        raise _Unreadable("a name of %d bytes" % n)
    return sv["_M_str"].string(length=n, errors="replace")


def _atomic(a):
    """The value held by a libstdc++ std::atomic (integer or pointer)."""
    for path in (("_M_i",), ("_M_b", "_M_p"), ("_M_base", "_M_i")):
        try:
            v = a
            for field in path:
                v = v[field]
            return v
        except gdb.error:
            continue
    raise _Unreadable("an atomic of unknown layout")


def _registry():
    """The process-wide component registry (src/registry.cpp), or None."""
    # `static Registry* r` inside registry(): its address from the symbol table, its type from
    # the library's debug information (gdb's expressions can't name an anonymous namespace).
    try:
        address = gdb.parse_and_eval(
            "(unsigned long)&'tessera::(anonymous namespace)::registry()::r'")
        registry = gdb.lookup_type("tessera::(anonymous namespace)::Registry")
        ptr = gdb.Value(int(address)).cast(registry.pointer().pointer()).dereference()
        return ptr.dereference() if int(ptr) != 0 else None
    except gdb.error:
        return None


def _component_info(id_value, storage=None):
    """The ComponentInfo of id `id_value` (a gdb.Value), from `storage` or the registry."""
    if storage is not None:
        try:
            components = _vector(storage["components_"])
            if id_value < len(components):
                info = components[id_value]["info"]
                if int(info) != 0:
                    return info.dereference()
        except (gdb.error, _Unreadable):
            pass
    registry = _registry()
    if registry is None:
        return None
    try:
        if id_value >= int(_atomic(registry["count"])):
            return None
        chunks = registry["chunks"]["_M_elems"]
        chunk = _atomic(chunks[id_value >> 8])
        return chunk[id_value & 255]
    except (gdb.error, _Unreadable):
        return None


def _component_name(id_value, storage=None):
    info = _component_info(id_value, storage)
    if info is not None:
        try:
            return _string_view(info["name"])
        except (gdb.error, _Unreadable):
            pass
    return "#%d" % id_value


def _names(ids, storage=None):
    shown = [_component_name(int(i["value"]), storage) for i in ids[:_MAX_SHOWN]]
    if len(ids) > _MAX_SHOWN:
        shown.append("... %d more" % (len(ids) - _MAX_SHOWN))
    return "{" + ", ".join(shown) + "}"


def _guard(fn):
    """to_string that reports what it could not read instead of raising."""

    def wrapped(self):
        try:
            return fn(self)
        except _Unreadable as e:
            return "<%s: %s>" % (self.label, e)
        except (gdb.error, gdb.MemoryError) as e:
            return "<%s: unreadable (%s)>" % (self.label, e)

    return wrapped


def _entity_text(e):
    index = _int(e["index"])
    generation = _int(e["generation"])
    if index == _NULL_INDEX:
        return "null"
    return "%d:%d" % (index, generation)


def _shown_archetype(index):
    return 0 if index == _EMPTY_ARCHETYPE else index - 2


def _user_archetypes(storage):
    """(core index, Archetype value) for every archetype a user sees, in archetypes() order."""
    tables = _vector(storage["archetypes_"])
    for i, ptr in enumerate(tables):
        if i in (_DEAD_ARCHETYPE, _PENDING_ARCHETYPE) or int(ptr) == 0:
            continue
        yield i, ptr.dereference()


def _archetype_text(a, storage=None):
    index = _int(a["index"])
    ids = _vector(a["ids"])
    rows = _int(a["size"])
    return "archetype %d %s: %d %s" % (_shown_archetype(index), _names(ids, storage), rows,
                                       "row" if rows == 1 else "rows")


def _storage_of_world(world):
    ptr = _check(world["storage_"])
    if int(ptr) == 0:
        return None
    return ptr.dereference()


class EntityPrinter:
    """tessera::Entity: index:generation, or null."""
    label = "tessera::Entity"

    def __init__(self, val):
        self.val = val

    @_guard
    def to_string(self):
        return _entity_text(self.val)


class ComponentIdPrinter:
    """tessera::ComponentId: its type name and value."""
    label = "tessera::ComponentId"

    def __init__(self, val):
        self.val = val

    @_guard
    def to_string(self):
        value = _int(self.val["value"])
        if value == _NULL_INDEX:
            return "no component"
        return "%s (id %d)" % (_component_name(value), value)


class WorldPrinter:
    """tessera::World: entity and archetype counts; the archetypes as children."""
    label = "tessera::World"

    def __init__(self, val):
        self.val = val

    @_guard
    def to_string(self):
        storage = _storage_of_world(self.val)
        if storage is None:
            return "tessera::World (moved from: no state)"
        alive = _int(storage["alive_"])
        tables = len(_vector(storage["archetypes_"])) - 2
        return "tessera::World with %d %s in %d %s, tick %d" % (
            alive, "entity" if alive == 1 else "entities", tables,
            "archetype" if tables == 1 else "archetypes", _int(storage["tick_"]))

    def children(self):
        try:
            storage = _storage_of_world(self.val)
            if storage is None:
                return
            for i, a in _user_archetypes(storage):
                yield "[%d]" % _shown_archetype(i), a
        except (gdb.error, gdb.MemoryError, _Unreadable):
            return


class ArchetypePrinter:
    """tessera::detail::Archetype (a table): its component names and row count."""
    label = "tessera::detail::Archetype"

    def __init__(self, val):
        self.val = val

    @_guard
    def to_string(self):
        return _archetype_text(self.val)


class ArchetypeInfoPrinter:
    """tessera::ArchetypeInfo: index, component names, rows, capacity, bytes per row."""
    label = "tessera::ArchetypeInfo"

    def __init__(self, val):
        self.val = val

    @_guard
    def to_string(self):
        rows = _int(self.val["size"])
        return "archetype %d %s: %d %s (capacity %d, %d B per row)" % (
            _int(self.val["index"]), _names(_span(self.val["components"])), rows,
            "row" if rows == 1 else "rows", _int(self.val["capacity"]),
            _int(self.val["bytes_per_row"]))


def _query_text(state, terms):
    storage_ptr = _check(state["storage_"])
    if int(storage_ptr) == 0:
        return "%s: empty (belongs to no world)" % terms
    storage = storage_ptr.dereference()
    spec = state["spec"]
    parts = [terms, "all " + _names(_vector(spec["all"]), storage)]
    for key in ("any", "none"):
        ids = _vector(spec[key])
        if ids:
            parts.append(key + " " + _names(ids, storage))
    filters = len(_vector(state["filters_"]))
    if filters:
        parts.append("%d change %s" % (filters, "filter" if filters == 1 else "filters"))
    matched = _vector(state["matched_"])
    if _int(state["seen_"]) == 0:
        parts.append("not run yet (matches on its first run)")
    else:
        parts.append("%d matched %s" % (len(matched), "table" if len(matched) == 1 else "tables"))
    return ", ".join(parts)


def _query_children(state):
    try:
        storage_ptr = _check(state["storage_"])
        if int(storage_ptr) == 0:
            return
        tables = _vector(storage_ptr.dereference()["archetypes_"])
        for index in _vector(state["matched_"])[:_MAX_SHOWN * 4]:
            i = int(index)
            if 0 <= i < len(tables):
                yield "[%d]" % _shown_archetype(i), tables[i].dereference()
    except (gdb.error, gdb.MemoryError, _Unreadable):
        return


class QueryPrinter:
    """tessera::Query<Terms...>: its terms, spec and the tables it has matched (children)."""
    label = "tessera::Query"

    def __init__(self, val):
        self.val = val

    def _terms(self):
        name = gdb.types.get_basic_type(self.val.type).tag or "tessera::Query"
        return name.replace("tessera::", "")

    @_guard
    def to_string(self):
        return _query_text(self.val["state_"], self._terms())

    def children(self):
        return _query_children(self.val["state_"])


class QueryStatePrinter:
    """tessera::detail::QueryState (the untyped part of a query)."""
    label = "tessera::detail::QueryState"

    def __init__(self, val):
        self.val = val

    @_guard
    def to_string(self):
        return _query_text(self.val, "QueryState")

    def children(self):
        return _query_children(self.val)


def build_pretty_printer():
    pp = gdb.printing.RegexpCollectionPrettyPrinter("tessera")
    pp.add_printer("Entity", r"^tessera::Entity$", EntityPrinter)
    pp.add_printer("ComponentId", r"^tessera::ComponentId$", ComponentIdPrinter)
    pp.add_printer("World", r"^tessera::World$", WorldPrinter)
    pp.add_printer("Archetype", r"^tessera::detail::Archetype$", ArchetypePrinter)
    pp.add_printer("ArchetypeInfo", r"^tessera::ArchetypeInfo$", ArchetypeInfoPrinter)
    pp.add_printer("Query", r"^tessera::Query<.*>$", QueryPrinter)
    pp.add_printer("QueryState", r"^tessera::detail::QueryState$", QueryStatePrinter)
    return pp


# ------------------------------------------------------------------------------------------------
# Components by type: tessera-get, tessera-components, tessera-entities, $tessera_get.


def _gdb_type_name(name):
    # The library spells types as the compiler's __PRETTY_FUNCTION__ does; gdb as DWARF does.
    return name.replace("{anonymous}", "(anonymous namespace)")


def _lookup_type(name):
    try:
        return gdb.lookup_type(_gdb_type_name(name))
    except gdb.error:
        return None


def _world_storage(world):
    if world.type.code == gdb.TYPE_CODE_PTR:
        world = world.dereference()
    if world.type.code == gdb.TYPE_CODE_REF:
        world = world.referenced_value()
    tag = gdb.types.get_basic_type(world.type).tag
    if tag != "tessera::World":
        raise gdb.GdbError("not a tessera::World: %s" % world.type)
    storage = _storage_of_world(world)
    if storage is None:
        raise gdb.GdbError("the world has no state (moved from)")
    return storage


def _entity(arg):
    m = re.fullmatch(r"\s*(\d+):(\d+)\s*", arg)
    if m:
        return int(m.group(1)), int(m.group(2))
    e = gdb.parse_and_eval(arg)
    return _entity_value(e)


def _entity_value(e):
    if e.type.code == gdb.TYPE_CODE_REF:
        e = e.referenced_value()
    if gdb.types.get_basic_type(e.type).tag != "tessera::Entity":
        raise gdb.GdbError("not a tessera::Entity: %s (give an expression or INDEX:GENERATION)"
                           % e.type)
    return _int(e["index"]), _int(e["generation"])


def _locate(storage, index, generation):
    """(Archetype value, row) of a live entity; raises gdb.GdbError otherwise."""
    text = "%d:%d" % (index, generation)
    if index == _NULL_INDEX:
        raise gdb.GdbError("the null entity has no components")
    if index >= _int(storage["record_count_"]):
        raise gdb.GdbError("entity %s was never spawned in this world" % text)
    record = storage["record_data_"][index]
    if int(record["generation"]) != generation or int(record["archetype"]) == _DEAD_ARCHETYPE:
        raise gdb.GdbError("entity %s is not alive (its index is at generation %d%s)" % (
            text, int(record["generation"]),
            ", free" if int(record["archetype"]) == _DEAD_ARCHETYPE else ""))
    if int(record["archetype"]) == _PENDING_ARCHETYPE:
        raise gdb.GdbError("entity %s was spawned while the world defers: it has no table until "
                           "the flush" % text)
    table = storage["archetypes_"]["_M_impl"]["_M_start"][int(record["archetype"])]
    return table.dereference(), int(record["row"])


def _component_value(storage, archetype, row, id_value):
    """The value of component `id_value` at `row`: a typed gdb.Value, a tag marker string, or
    raw bytes when gdb knows no type of that name."""
    info = _component_info(id_value, storage)
    name = _component_name(id_value, storage)
    id_table_size = int(archetype["id_table_size"])
    int32 = gdb.lookup_type("int")
    id_table = (archetype.address + 1).cast(int32.pointer())
    column = int(id_table[id_value]) if id_value < id_table_size else -1
    if column == -1:
        return None
    size = int(info["size"]) if info is not None else 0
    if column == -2 or size == 0:
        return "(tag)"
    column = _vector(archetype["columns"])[column]
    address = column["data"] + row * int(column["size"])
    t = _lookup_type(name)
    if t is not None and t.sizeof == size:
        return address.cast(t.pointer()).dereference()
    raw = address.cast(gdb.lookup_type("unsigned char").array(size - 1).pointer()).dereference()
    return raw


def _find_component(storage, type_name):
    wanted = {type_name, _gdb_type_name(type_name)}
    t = _lookup_type(type_name)
    if t is not None:
        wanted.add(str(t.strip_typedefs()))
    components = _vector(storage["components_"])
    for id_value, wc in enumerate(components):
        info = wc["info"]
        if int(info) == 0:
            continue
        name = _string_view(info.dereference()["name"])
        if name in wanted or _gdb_type_name(name) in wanted:
            return id_value
    raise gdb.GdbError("the world has no component named %s" % type_name)


def _get(world, entity, type_name):
    storage = _world_storage(world)
    index, generation = entity
    archetype, row = _locate(storage, index, generation)
    id_value = _find_component(storage, type_name)
    value = _component_value(storage, archetype, row, id_value)
    if value is None:
        raise gdb.GdbError("entity %d:%d has no %s" % (index, generation, type_name))
    return value


class TesseraGet(gdb.Command):
    """Print one component of an entity by its type: tessera-get WORLD ENTITY TYPE.

WORLD is an expression naming a tessera::World (or a pointer to one), ENTITY an expression naming
a tessera::Entity or INDEX:GENERATION, TYPE the component's C++ type (e.g. Position or
game::Label). The value is printed with gdb's printers for that type; a type gdb does not know
(a runtime component) is shown as bytes."""

    def __init__(self):
        super().__init__("tessera-get", gdb.COMMAND_DATA, gdb.COMPLETE_EXPRESSION)

    def invoke(self, arg, from_tty):
        argv = gdb.string_to_argv(arg)
        if len(argv) != 3:
            raise gdb.GdbError("usage: tessera-get WORLD ENTITY TYPE")
        value = _get(gdb.parse_and_eval(argv[0]), _entity(argv[1]), argv[2])
        text = value if isinstance(value, str) else value.format_string()
        gdb.write("%s = %s\n" % (argv[2], text))


class TesseraComponents(gdb.Command):
    """Print every component of an entity: tessera-components WORLD ENTITY.

Lists the entity's archetype and row, then each component as TYPE = VALUE (tags as (tag))."""

    def __init__(self):
        super().__init__("tessera-components", gdb.COMMAND_DATA, gdb.COMPLETE_EXPRESSION)

    def invoke(self, arg, from_tty):
        argv = gdb.string_to_argv(arg)
        if len(argv) != 2:
            raise gdb.GdbError("usage: tessera-components WORLD ENTITY")
        storage = _world_storage(gdb.parse_and_eval(argv[0]))
        index, generation = _entity(argv[1])
        archetype, row = _locate(storage, index, generation)
        gdb.write("entity %d:%d: %s, row %d\n" % (index, generation,
                                                   _archetype_text(archetype, storage), row))
        for cid in _vector(archetype["ids"]):
            id_value = int(cid["value"])
            value = _component_value(storage, archetype, row, id_value)
            text = value if isinstance(value, str) else value.format_string()
            gdb.write("  %s = %s\n" % (_component_name(id_value, storage), text))


class TesseraEntities(gdb.Command):
    """List a world's live entities by archetype: tessera-entities WORLD [LIMIT].

LIMIT (default 100) caps the entities listed per archetype."""

    def __init__(self):
        super().__init__("tessera-entities", gdb.COMMAND_DATA, gdb.COMPLETE_EXPRESSION)

    def invoke(self, arg, from_tty):
        argv = gdb.string_to_argv(arg)
        if len(argv) not in (1, 2):
            raise gdb.GdbError("usage: tessera-entities WORLD [LIMIT]")
        limit = int(argv[1]) if len(argv) == 2 else 100
        storage = _world_storage(gdb.parse_and_eval(argv[0]))
        for _, a in _user_archetypes(storage):
            rows = int(a["size"])
            if rows == 0:
                continue
            entities = [_entity_text(a["entities"][r]) for r in range(min(rows, limit))]
            more = " ... %d more" % (rows - limit) if rows > limit else ""
            gdb.write("%s\n  %s%s\n" % (_archetype_text(a, storage), " ".join(entities), more))


class TesseraGetFunction(gdb.Function):
    """$tessera_get(world, entity, "Type"): the entity's component of that type, as a value
(print it, take its fields: $tessera_get(world, e, "Position").x)."""

    def __init__(self):
        super().__init__("tessera_get")

    def invoke(self, world, entity, type_name):
        value = _get(world, _entity_value(entity), type_name.string())
        if isinstance(value, str):
            raise gdb.GdbError("%s is a tag: it has no value" % type_name.string())
        return value


def register(objfile=None):
    """Registers the printers (for `objfile`, or everywhere) and the commands."""
    gdb.printing.register_pretty_printer(objfile, build_pretty_printer(), replace=True)
    TesseraGet()
    TesseraComponents()
    TesseraEntities()
    TesseraGetFunction()

register(gdb.current_objfile())

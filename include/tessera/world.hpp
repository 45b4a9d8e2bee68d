/// @file world.hpp
/// `tessera::World`: entities, components and change ticks.
#pragma once

#include <tessera/component.hpp>
#include <tessera/detail/attachment.hpp>
#include <tessera/entity.hpp>
#include <tessera/error.hpp>
#include <tessera/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory_resource>
#include <span>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera {

class Schedule;

namespace detail {
class Storage;
class ResourceMap;
struct FieldRef;
}  // namespace detail

/// Entity lifetimes: a permanent entity lives as long as the world.
enum class Lifetime : std::uint8_t {
    any,        ///< every entity
    dynamic,    ///< entities made with `spawn`
    permanent,  ///< entities made with `spawn_permanent`
};

/// A read-only description of one archetype table (`World::archetypes`, `World::archetype`).
/// The span stays valid as long as the world's state (until `restore`, `load` or a move of
/// another state in); the counts are those of the moment it was made.
struct ArchetypeInfo {
    std::uint32_t index = 0;                  ///< position in `archetypes()` (0: no components)
    std::span<const ComponentId> components;  ///< its component set, ascending ids, tags included
    std::size_t size = 0;                     ///< entities in it
    std::size_t capacity = 0;                 ///< rows allocated
    /// Bytes a row takes: the entity handle, each value, and the change ticks (16 B) and enable
    /// flag (1 B) of the columns that have them.
    std::size_t bytes_per_row = 0;
};

/// The container of entities and their components.
///
/// Entities with the same component set share an archetype table (one contiguous column per
/// component). Structural changes (spawn, despawn, add, remove) move rows between tables.
///
/// **Invalidation.** References, pointers and spans into the world (`get_mut`, `try_get`, the
/// span `spawn_many` returns) stay valid until the next structural change anywhere in the world.
///
/// **Errors.** Checked calls throw `Error` (`not_alive`, `missing_component`, ...) with a message
/// naming the entity and component; every call has the strong guarantee, `std::bad_alloc`
/// included: a call that throws leaves entities, values, ticks and counts as they were (an
/// empty archetype created on the way may stay).
///
/// **Deferral.** While the world iterates (inside a query's `each`/`each_chunk`, or while a
/// `chunks()` range is alive), `spawn`, `despawn`, `add` and `remove` are queued and applied,
/// in order, when the outermost iteration ends: a spawned entity is alive at once but has no
/// components until then; a despawned one stays alive and readable (`despawn_pending` tells); a
/// queued change whose entity died before the flush is skipped. Reads and writes of values
/// (`get`, `set`, `get_mut`) are never deferred; a write of a component whose add or remove on
/// that entity is queued throws `invalid_argument` (it would be lost when the command applies:
/// write after the flush, or queue the value with `add`, which then wins, being later). Structural
/// calls, deferral calls (`defer_begin`, `defer_end`, `flush`) and every other change to what the
/// world shares (archetypes, registrations, resources, events, observers, the tick) throw
/// `invalid_argument` from the workers of a `par_each`; docs/threading.md lists what they may call
/// (record structural changes in a `CommandBuffer`).
///
/// **Threads.** A world belongs to one thread at a time. Distinct worlds are independent.
///
/// **Memory.** All storage (tables, the entity index, metadata) comes from the memory resource
/// given at construction (`std::pmr::get_default_resource()` by default).
///
/// **Which header to include.** world.hpp alone gives the entities, archetypes, deferral,
/// components and ticks. The other members are each concept's, and their bodies live in its
/// header: a group (or member) below names the header to include to call it, e.g.
/// `#include <tessera/relation.hpp>` for `relate`, `<tessera/resource.hpp>` for
/// `insert_resource` (tessera.hpp includes them all). Without it a call compiles and fails to
/// link.
class World {
public:
    /// An empty world allocating from the default memory resource.
    World();
    /// An empty world allocating everything from `resource` (which must outlive the world).
    explicit World(std::pmr::memory_resource* resource);
    /// Destroys the resources, then every entity and component.
    ~World();
    /// Takes over `other`'s state without copying: entities, references into storage, queries,
    /// resources and observers stay valid and now belong to this world. `other` may then only
    /// be destroyed or assigned to.
    World(World&& other) noexcept;
    /// Destroys this world's state, then takes over `other`'s (like the move constructor).
    World& operator=(World&& other) noexcept;
    World(const World&) = delete;
    World& operator=(const World&) = delete;

    /// The memory resource the world allocates from.
    [[nodiscard]] std::pmr::memory_resource* memory_resource() const noexcept;

    // ----- entities -----

    /// Spawns an entity without components. Amortised O(1).
    Entity spawn();

    /// Spawns an entity with the given components, constructed once, directly in the table of
    /// their archetype. Duplicate types are a compile-time error. Amortised O(components).
    /// @throws Error(invalid_argument) for `R` or `Targets<R>` of a relation `R` used in this
    /// world (use `relate`).
    template <class... Ts>
    requires(sizeof...(Ts) > 0) Entity spawn(Ts&&... components);

    /// Spawns `n` entities whose component set is deduced from `init`'s parameters
    /// (`void(std::size_t i, A&, B&, ...)`); each component is value-initialised, then `init(i,
    /// ...)` runs for row `i`. Storage grows once. Returns the new entities in order (a view of
    /// their table's rows, or of a scratch list when the world iterates or observes these
    /// components): the span stays valid until the next structural change or `spawn_many`.
    /// `init` may make structural changes: they are deferred and applied, in order, before this
    /// returns. `init` may take no components (`init(std::size_t)`): empty entities. All or
    /// nothing: if `init` throws, an allocation fails, or applying what `init` queued throws,
    /// nothing is spawned, nothing `init` queued stays, and the entity index (generations, free
    /// list) is as before (observers that ran stay run). To put it back, a call whose `init`
    /// only spawned takes its rows and ids back (O(spawns)); otherwise (or if observers could
    /// do more) it keeps a copy of the state until `init`'s changes apply (O(entities +
    /// values)); a world with a component that can't be copied has none, and such a failure
    /// then leaves the new entities, that change and the rest queued. Commands an earlier
    /// failed flush left queued apply first, with that flush's guarantee.
    template <class Init>
    std::span<const Entity> spawn_many(std::size_t n, Init&& init);

    /// Spawns an entity that lives as long as the world: `despawn` on it throws
    /// `permanent_entity`. Otherwise like `spawn()` / `spawn(components...)`.
    template <class... Ts>
    Entity spawn_permanent(Ts&&... components);

    /// Calls `fn(Entity)` for every live entity of `lifetime`, archetype by archetype, rows in
    /// table order. Structural changes made by `fn` are deferred until it returns for the last
    /// entity.
    template <class F>
    void each_entity(F&& fn, Lifetime lifetime = Lifetime::any);

    /// Whether `e` is alive and permanent.
    [[nodiscard]] bool is_permanent(Entity e) const noexcept;

    /// Despawns `e`, destroying its components (and its relations; `ChildOf` children cascade,
    /// relation.hpp). O(components). Returns false (and does nothing) when `e` is already dead,
    /// null or queued for despawn. The last row of its table moves into its place.
    /// @throws Error(permanent_entity) when `e` was spawned with `spawn_permanent`.
    bool despawn(Entity e);

    /// Despawns every live entity of `entities` (dead, null and repeated handles are skipped)
    /// and returns how many of them died: each listed live entity counts once, whether it died
    /// as listed or earlier in the call by the `ChildOf` cascade of one listed before it (the
    /// children the cascade takes that are not listed don't count). The same observers, in the
    /// same order, the same relation cleanup and `ChildOf` cascade as one `despawn` per handle
    /// in the order given, and the handles are freed in that order; changes that observers
    /// make are applied when the call ends. Where no observer or relation is concerned it takes
    /// one pass per table instead of one row move per entity, so a table's surviving rows may
    /// end in another order than one despawn at a time would leave them. `entities` may be
    /// storage the call changes (`children(p)`, `sources<R>(t)`, a span `spawn_many`
    /// returned): it is read whole before anything changes. While the world iterates (or
    /// defers), each is queued, as `despawn` does. O(n + rows moved); a scratch bit per row of
    /// the tables concerned. Strong guarantee: an error or a failed allocation changes nothing
    /// (everything the call needs is allocated before the first despawn). An exception an
    /// observer throws propagates once the call is complete (every listed entity dead; the
    /// remaining observers skipped).
    /// @throws Error(permanent_entity) when one is permanent (before anything is despawned).
    std::size_t despawn(std::span<const Entity> entities);

    /// Despawns every entity `query` matches (the ones its `each` visits: enable flags and
    /// change filters apply; a since-last-run filter counts it as a run once it succeeded; no
    /// term stamps a row) and returns how many, as `despawn(span)` in table order. Whole tables
    /// with nothing observed are freed whole: O(tables + entities). Include `<tessera/query.hpp>`
    /// to call it (its body is there).
    /// @throws Error(invalid_argument) for a query of another world,
    /// Error(permanent_entity) like `despawn(span)`.
    template <class... Terms>
    std::size_t despawn_all(Query<Terms...>& query);

    // ----- archetypes -----

    /// Every archetype table: the one without components first, then in creation order (the
    /// order of `entities()`). Archetypes are never destroyed. O(archetypes); allocates the
    /// vector (for tools: the inspector reads this).
    [[nodiscard]] std::vector<ArchetypeInfo> archetypes() const;
    /// The archetype `e` is in. @throws Error(not_alive) for a dead entity or one spawned
    /// while the world defers (it has no table until the flush).
    [[nodiscard]] ArchetypeInfo archetype_of(Entity e) const;
    /// The archetype of exactly the components `Ts` (order and tags as given; created, empty,
    /// if none exists yet). O(Ts) once cached.
    /// @throws std::bad_alloc when it must be created (nothing changes then).
    template <class... Ts>
    ArchetypeInfo archetype();
    /// Grows the table of exactly the components `Ts` to hold at least `n` entities, and the
    /// entity index to spawn that many more, each in one allocation, so spawning them into it
    /// allocates nothing. Invalidates references into that table. Strong guarantee.
    /// @throws Error(invalid_argument) while the world defers or iterates (the table may be
    /// in use), std::bad_alloc.
    template <class... Ts>
    void reserve(std::size_t n);

    // ----- deferral on demand -----

    /// Starts deferring structural changes (spawn, despawn, add, remove, relate) outside loops
    /// too, as a loop does: they are queued, in order, and applied when the outermost level of
    /// deferral ends (this one's `defer_end`, or a loop's end if one encloses it). Levels nest,
    /// with each other and with loops. Reads and writes of values are never deferred.
    /// `despawn_pending` tells what is queued. O(1).
    /// @throws Error(invalid_argument) from the workers of a `par_each` (the deferral state is
    /// the world's thread's; nothing changes then).
    void defer_begin();
    /// Ends the innermost `defer_begin`; when no other level of deferral is open, applies what
    /// was queued (as a loop's end does: a failing change stays queued with the ones after it,
    /// and its exception propagates). @throws Error(invalid_argument) without an open
    /// `defer_begin`, or from the workers of a `par_each` (nothing changes then).
    void defer_end();
    /// Applies the queued structural changes now, when the world is not deferring: those a
    /// failed flush left queued (a loop's end, `defer_end`). While it defers (a loop runs, a
    /// `defer_begin` is open, a flush is applying) it does nothing and returns false;
    /// else true. Throws like `defer_end`'s flush, and
    /// Error(invalid_argument) from the workers of a `par_each`.
    bool flush();
    /// Whether structural changes are queued rather than applied now (a loop runs, a
    /// `defer_begin` is open, or a flush is applying).
    [[nodiscard]] bool deferring() const noexcept;

    /// Whether a despawn of `e` is queued (made while the world iterates; applied when the
    /// outermost iteration ends). O(queued commands).
    [[nodiscard]] bool despawn_pending(Entity e) const noexcept;

    /// Whether `e` is a live entity of this world (false for null, stale and foreign handles).
    [[nodiscard]] bool is_alive(Entity e) const noexcept;

    /// Number of live entities. O(1).
    [[nodiscard]] std::size_t count() const noexcept;

    /// Every live entity, archetype by archetype in creation order, rows in table order.
    /// Allocates a new vector (for tools and tests, not for hot loops).
    [[nodiscard]] std::vector<Entity> entities() const;

    // ----- components -----

    /// Adds the components to `e`, or replaces the ones it already has (a replaced value is
    /// marked changed; a new one is stamped added and changed). Several at once make one
    /// archetype move. @throws Error(not_alive), Error(invalid_argument) like `spawn`
    template <class... Ts>
    requires(sizeof...(Ts) > 0) void add(Entity e, Ts&&... components);

    /// Adds a value-initialised `T` (tags, default-constructible components); replaces an
    /// existing `T` with a fresh value. @throws Error(not_alive)
    template <class T>
    void add(Entity e);

    /// Adds a `T` made from `args` to `e`, or replaces the one it has, like `add`, but builds
    /// the value where it lives: in `e`'s table slot when `T` is nothrow-constructible from
    /// `args` and nothing defers or observes the change (then no `T` is moved or copied);
    /// otherwise a `T` is made first and moved in (`add`). Later archetype moves of `e` move
    /// it as usual. Marks added (new) or changed (replaced). O(components of `e`).
    /// @throws Error(not_alive), Error(invalid_argument) like `add`; what `T`'s constructor
    /// throws (nothing changes then).
    template <class T, class... Args>
    void emplace(Entity e, Args&&... args);

    /// Removes the components `e` has among `Ts` in one archetype move. Returns false when `e`
    /// had none of them. @throws Error(not_alive)
    template <class... Ts>
    requires(sizeof...(Ts) > 0) bool remove(Entity e);

    /// Whether `e` is alive and has every one of `Ts`. Never throws: a type whose registration
    /// failed (`type_conflict`, e.g. two plugins disagreeing on a struct) is absent.
    template <class... Ts>
    requires(sizeof...(Ts) > 0) [[nodiscard]] bool has(Entity e) const noexcept;

    /// A copy of `e`'s `T`, or a `std::tuple` of copies for several types.
    /// @throws Error(not_alive), Error(missing_component)
    template <class... Ts>
    requires(sizeof...(Ts) > 0) auto get(Entity e) const;

    /// A pointer to `e`'s `T`, or null when `e` is dead or lacks `T` (tags have no address:
    /// null too). Stamps no tick. Valid until the next structural change.
    template <class T>
    [[nodiscard]] const T* try_get(Entity e) const noexcept;

    /// A reference to `e`'s `T` for writing; marks it changed at the current tick. Valid until
    /// the next structural change. @throws Error(not_alive), Error(missing_component),
    /// Error(invalid_argument) while an add or remove of `T` on `e` is queued (deferral).
    template <class T>
    T& get_mut(Entity e);

    /// A pointer to `e`'s `T` for writing, or null when `e` is dead or lacks `T`, or while an add
    /// or remove of `T` on `e` is queued; when not null, marks it changed at the current tick,
    /// like `get_mut`. One lookup where `has` plus
    /// `get_mut` take two. Valid until the next structural change. O(1).
    template <class T>
    [[nodiscard]] T* try_get_mut(Entity e) noexcept;

    /// An `Accessor<T>` (accessor.hpp): `get`, `try_get`, `get_mut` and `try_get_mut` of `T`
    /// with this world's entity index and `T`'s columns at hand, the fastest lookup by handle.
    /// Valid until the next structural change. Registers `T`. Include
    /// `<tessera/accessor.hpp>` to call it (its body is there).
    template <class T>
    [[nodiscard]] Accessor<T> accessor();

    /// References to several of `e`'s components for writing, in a tuple
    /// (`auto [p, v] = world.get_mut<Position, Velocity>(e);`), each marked changed. Valid
    /// until the next structural change. @throws Error(not_alive), Error(missing_component)
    /// naming the first missing type, Error(invalid_argument) like `get_mut`, before marking any.
    template <class T0, class T1, class... Ts>
    std::tuple<T0&, T1&, Ts&...> get_mut(Entity e);

    /// Overwrites `e`'s existing `T` and marks it changed.
    /// @throws Error(not_alive), Error(missing_component), Error(invalid_argument) while an add
    /// or remove of `T` on `e` is queued (the write would be lost when it applies; nothing is
    /// written), or, for an observed `T`, from the workers of a `par_each`.
    template <class T>
    void set(Entity e, T&& value);
    /// Overwrites several existing components of `e` in one call, in
    /// argument order, each marked changed (`on_set` observers fire after each write). Either
    /// all are present or nothing is written. @throws Error(not_alive),
    /// Error(missing_component) naming the first missing type, Error(invalid_argument) like the
    /// one-component `set`; what a copy throws (copies are made before anything is written).
    template <class T0, class T1, class... Ts>
    void set(Entity e, T0&& first, T1&& second, Ts&&... rest);

    /// Overwrites `e`'s `T` only when the value differs (`==`), marking it changed then.
    /// Returns whether it wrote. Turns on change tracking for `T`.
    /// @throws Error(not_alive), Error(missing_component), Error(invalid_argument) like `set`.
    template <class T>
    bool set_if_changed(Entity e, T&& value);

    /// The tick at which `e`'s `T` was last written (set, get_mut, add). Turns on change
    /// tracking for `T` in this world (existing rows are stamped with the current tick).
    /// @throws Error(not_alive), Error(missing_component)
    template <class T>
    std::uint64_t changed_tick(Entity e);

    /// The tick at which `T` was added to `e`. Turns on tracking like `changed_tick`.
    /// @throws like `changed_tick`.
    template <class T>
    std::uint64_t added_tick(Entity e);

    /// Turns `e`'s `T` on or off. A disabled component stays on the entity (`has` is true, the
    /// archetype is unchanged, its value is kept); `each` skips rows where a component named by
    /// its terms or a `with` filter is disabled; chunk loops see the flags
    /// (`Chunk::enabled<T>()`). Tags can be enableable too. Never moves a row, fires no event.
    /// @throws Error(not_enableable) unless `component_traits<T>::enableable`, Error(not_alive),
    /// Error(missing_component), Error(invalid_argument) while a remove of `T` from `e` is queued
    template <class T>
    void enable(Entity e, bool on = true);

    /// Whether `e`'s `T` is enabled. @throws like `enable`.
    template <class T>
    [[nodiscard]] bool is_enabled(Entity e) const;

    /// Announces that `e`'s `T` was written through `get_mut` (or a query term): fires the
    /// `on_set<T>` observers and marks it changed. @throws Error(not_alive),
    /// Error(missing_component), Error(invalid_argument) like `set`.
    template <class T>
    void modified(Entity e);

    /// Records `T`'s `ComponentInfo` in this world up front (otherwise done on first use) and
    /// returns its id.
    template <class T>
    ComponentId register_component();

    /// @name Runtime components
    /// Include `<tessera/dynamic.hpp>` to call these: their bodies (or the types they return)
    /// are there.
    ///@{

    /// Defines (or finds) the runtime component `name` with fields `schema` (runtime types
    /// `f32` ... `str`; an empty schema makes a tag) and records it in this world; returns its
    /// id, valid in every world. Defining a name again with the same schema and options returns
    /// the same id. @throws Error(type_conflict) when `name` is already defined differently (or
    /// names a C++ component), Error(invalid_argument) for an empty or repeated field name, a
    /// component or field name that is not UTF-8 or holds a control character, a type runtime
    /// schemas can't hold.
    ComponentId component(std::string_view name, std::initializer_list<FieldDef> schema = {});
    /// `component(name, schema)` with options (enableable, track_changes). @throws like it.
    ComponentId component(std::string_view name, std::initializer_list<FieldDef> schema,
                          const ComponentOptions& options);
    /// `component(name, schema, options)` with a schema built at run time. @throws like it.
    ComponentId component(std::string_view name, std::span<const FieldDef> schema,
                          const ComponentOptions& options);
    /// The world's interned strings (`str` fields).
    [[nodiscard]] StringTable& strings();
    /// The world's interned strings, read-only.
    [[nodiscard]] const StringTable& strings() const;
    /// Adds component `id` to `e` value-initialised (runtime components: all fields zero), or
    /// resets it when present. Deferred and observed like `add<T>`. @throws Error(not_alive),
    /// Error(not_registered) for an id no component has, Error(invalid_argument) when the type
    /// is not default constructible.
    void add(Entity e, ComponentId id);
    /// Removes component `id` from `e`; false when it had none. @throws Error(not_alive),
    /// Error(not_registered).
    bool remove(Entity e, ComponentId id);
    /// Whether `e` is alive and has component `id`. Never throws: false for an id no component
    /// has.
    [[nodiscard]] bool has(Entity e, ComponentId id) const noexcept;
    /// Writes field `field` (a name; "a.b" for a nested field, "a[2]" for an array element) of
    /// `e`'s component `id` and marks it changed (firing `on_set` observers). Numbers convert
    /// to the field's type when the value fits, bools go to `boolean` fields only, strings to
    /// `str` (interned) and `std::string` fields. @throws Error(invalid_argument) for an
    /// unknown field, a wrong value type or a value out of range, a component without field
    /// metadata (the message names the entity, component and field), or while an add or remove
    /// of `id` on `e` is queued (like `set`), Error(not_alive), Error(missing_component),
    /// Error(not_registered) for an id no component has.
    template <class V>
    void set_field(Entity e, ComponentId id, std::string_view field, const V& value);
    /// `set_field` by field index (declaration order; an array or struct field can't be named
    /// by index: use a path).
    template <class V>
    void set_field(Entity e, ComponentId id, std::size_t field, const V& value);
    /// Reads field `field` of `e`'s component `id` as `T`: the field's own type (`float` for
    /// f32, `std::int32_t` for i32, `bool` for boolean, ...), `double` for any number,
    /// `std::string_view` / `std::string` for `str` and `std::string` fields, `ts::StringId`
    /// for a `str` field's id. The view of a `str` stays valid until the world's strings are
    /// replaced (`restore`, or the world's destruction); of a `std::string` field, until the
    /// next structural change.
    /// @throws like `set_field`.
    template <class T>
    [[nodiscard]] T get_field(Entity e, ComponentId id, std::string_view field) const;
    /// `get_field` by field index (declaration order). @throws like `set_field`.
    template <class T>
    [[nodiscard]] T get_field(Entity e, ComponentId id, std::size_t field) const;
    /// Turns `e`'s component `id` on or off (like `enable<T>`). @throws Error(not_enableable)
    /// unless the component is enableable, Error(not_alive), Error(missing_component),
    /// Error(not_registered), Error(invalid_argument) as `enable<T>`.
    void enable(Entity e, ComponentId id, bool on = true);
    /// Whether `e`'s component `id` is enabled. @throws like `enable`.
    [[nodiscard]] bool is_enabled(Entity e, ComponentId id) const;
    /// The change / added tick of `e`'s component `id` (like `changed_tick<T>`; turns tracking
    /// on). @throws Error(invalid_argument) when the component has `track_changes = false` or
    /// is a tag, Error(not_alive), Error(missing_component), Error(not_registered).
    std::uint64_t changed_tick(Entity e, ComponentId id);
    /// The tick at which component `id` was added to `e`. @throws like `changed_tick(e, id)`.
    std::uint64_t added_tick(Entity e, ComponentId id);
    /// A cached query from component ids (`.all`, `.any`, `.none`; dynamic.hpp).
    /// @throws Error(not_registered) for an id no component has.
    [[nodiscard]] DynamicQuery query_dynamic(QuerySpec spec);

    ///@}

    /// @name Clone, snapshot and restore
    /// Include `<tessera/snapshot.hpp>` to call these: their bodies (or the types they return)
    /// are there.
    ///@{

    /// A new world with the same entities (ids, generations, free list), components, relations,
    /// enable flags, change ticks, tick and strings, iterating every query in the same order.
    /// Resources and observers are not copied. Values are copied with their copy constructor
    /// (memcpy for trivially copyable types). @throws Error(invalid_argument) naming a component
    /// that can't be copied, or when called while the world iterates.
    [[nodiscard]] World clone() const;
    /// A copy of the world's state (what `clone` copies) to `restore` later. @throws like
    /// `clone`.
    [[nodiscard]] Snapshot snapshot() const;
    /// Puts the world back in the state of `snapshot` (of this world or another): entities,
    /// components, relations, enable flags, change ticks and strings, iteration order included.
    /// Resources and observers stay as they are; no observer fires; cached queries and systems
    /// re-match. The world tick never goes back: it becomes the larger of the current and the
    /// snapshot's, so change filters stay exact. Invalidates every reference into the world.
    /// Strong guarantee. @throws like `clone`.
    void restore(const Snapshot& snapshot);

    ///@}

    /// @name Queries
    /// Include `<tessera/query.hpp>` to call these: their bodies (or the types they return)
    /// are there.
    ///@{

    /// A cached query over `Terms...` (`T&`, `const T&`, `T*`, `const T*`, `Entity`); add
    /// filters with its builder members. Defined in query.hpp.
    template <class... Terms>
    Query<Terms...> query();

    /// Runs `fn` over every entity that has the components its parameters name (`T&`,
    /// `const T&`, optional `T*`; a leading `Entity` receives the entity), like `Query::each`
    /// (structural changes deferred until the loop ends). A one-off query: it matches the
    /// archetypes on every call (O(archetypes)), so keep a `Query` for loops that run each frame.
    template <class F>
    void each(F&& fn);

    /// Clears `out` and fills it with a `Chunk` per non-empty archetype matching `spec`. Once
    /// `out` has grown to the number of matches it allocates nothing. O(archetypes).
    /// @throws Error(not_registered) for an id no component has (`out` unchanged).
    void collect_chunks(const QuerySpec& spec, std::vector<Chunk>& out);

    ///@}

    /// @name Resources
    /// Include `<tessera/resource.hpp>` to call these: their bodies (or the types they return)
    /// are there.
    ///@{

    /// Stores `value` as the world's one resource of its type, replacing (and destroying) a
    /// previous one; returns it. The value is never moved afterwards: references stay valid
    /// until it is replaced or removed. Resources are destroyed with the world.
    template <class T>
    std::remove_cvref_t<T>& insert_resource(T&& value);
    /// The resource of type `T`. O(1) on average (one hash lookup: fine per frame, not per
    /// entity). @throws Error(missing_resource) naming the type.
    template <class T>
    T& resource();
    /// The resource of type `T`, read-only. @throws Error(missing_resource) naming the type.
    template <class T>
    const T& resource() const;
    /// Several resources in one call, as a tuple of references
    /// (`auto [time, input] = world.resource<Time, Input>();`).
    /// @throws Error(missing_resource) naming the first missing type.
    template <class T0, class T1, class... Ts>
    std::tuple<T0&, T1&, Ts&...> resource();
    /// Several resources read-only. @throws like the other form.
    template <class T0, class T1, class... Ts>
    std::tuple<const T0&, const T1&, const Ts&...> resource() const;
    /// The resource of type `T`, or null.
    template <class T>
    T* try_resource() noexcept;
    /// The resource of type `T` read-only, or null.
    template <class T>
    const T* try_resource() const noexcept;
    /// Destroys the resource of type `T` (references to it dangle); false when there was none.
    template <class T>
    bool remove_resource();
    /// Whether a resource of type `T` exists.
    template <class T>
    [[nodiscard]] bool has_resource() const noexcept;

    ///@}

    /// @name Observers
    /// Include `<tessera/observer.hpp>` to call these: their bodies (or the types they return)
    /// are there.
    ///@{
    //
    // Each returns an `Observer` handle that unsubscribes when destroyed or reset. Callbacks
    // take `(World&, Entity)` or, for component events, `(World&, Entity, T&)`.

    /// Calls `fn` after `T` is added to an entity (spawn included), its value in place.
    template <class T, class F>
    [[nodiscard]] Observer on_add(F&& fn);
    /// Calls `fn` before `T` is removed from an entity (despawn included): the value is still
    /// readable.
    template <class T, class F>
    [[nodiscard]] Observer on_remove(F&& fn);
    /// Calls `fn` after `T`'s value is written by `set`, `add` of a present `T`,
    /// `set_if_changed` when it wrote, and `modified<T>`.
    template <class T, class F>
    [[nodiscard]] Observer on_set(F&& fn);
    /// One subscription to several component types: `fn` (a
    /// copy per type) runs as `on_add` of each; it takes `(World&, Entity)` or a generic
    /// `(World&, Entity, auto&)`. The handle ends them all.
    template <class T0, class T1, class... Ts, class F>
    [[nodiscard]] Observer on_add(F&& fn);
    /// `on_remove` of several types in one subscription (like the several-type `on_add`).
    template <class T0, class T1, class... Ts, class F>
    [[nodiscard]] Observer on_remove(F&& fn);
    /// `on_set` of several types in one subscription (like the several-type `on_add`).
    template <class T0, class T1, class... Ts, class F>
    [[nodiscard]] Observer on_set(F&& fn);
    /// Calls `fn(World&, Entity)` after an entity is spawned, with its components in place.
    template <class F>
    [[nodiscard]] Observer on_spawn(F&& fn);
    /// Calls `fn(World&, Entity)` before an entity is despawned: its components are readable.
    template <class F>
    [[nodiscard]] Observer on_despawn(F&& fn);
    /// The switches of the world's observers (per event kind, per event kind and type).
    [[nodiscard]] Observers observers();

    ///@}

    /// @name Relations
    /// Include `<tessera/relation.hpp>` to call these: their bodies (or the types they return)
    /// are there.
    ///@{

    /// Relates `e` to `target` by `R` (a component type; `ChildOf` for the hierarchy), with
    /// `data` as the relation's one value: the first target adds `R` and `Targets<R>` to `e`,
    /// further targets are appended (the data replaced); relating to a present target only
    /// replaces the data. @throws Error(not_alive) for a dead `e` or `target`,
    /// Error(hierarchy_cycle) when a `ChildOf` would close a loop, Error(invalid_argument) when
    /// `R` is a plain component in this world.
    template <class R>
    void relate(Entity e, R&& data, Entity target);
    /// `relate` with a value-initialised `R`.
    template <class R>
    void relate(Entity e, Entity target);
    /// Removes `target` from `e`'s `R` relation (and the relation with its last target). False
    /// when they were not related. @throws Error(not_alive) for a dead `e`.
    template <class R>
    bool unrelate(Entity e, Entity target);
    /// Removes `e`'s `R` relation with all its targets; returns how many there were.
    /// @throws Error(not_alive) for a dead `e`.
    template <class R>
    std::size_t unrelate(Entity e);
    /// Relates `e` to each of `targets` by `R` in one call,
    /// in order, as `relate` one at a time, each with a copy of `data` (which ends as the
    /// relation's value). All or nothing: `not_alive` and `hierarchy_cycle` are checked for
    /// every target and the memory is reserved before anything changes, so a failure
    /// (`std::bad_alloc` included) leaves the world as it was, row order included. Observers
    /// get the events of one `relate` per target, in order, once every target is in place.
    /// While the world defers, one relate per target is queued (a failure queues none).
    template <class R>
    void relate(Entity e, R&& data, std::span<const Entity> targets);
    /// Removes each of `targets` from `e`'s `R` relation as one change (the relation goes when
    /// its last target does); returns how many distinct targets were related. Unrelate observers
    /// fire in the order given. `targets` may be `e`'s own list (`targets<R>(e)`): it is read
    /// before anything changes. Strong guarantee. While the world defers, one unrelate per
    /// target is queued. @throws Error(not_alive) for a dead `e`.
    template <class R>
    std::size_t unrelate(Entity e, std::span<const Entity> targets);
    /// Whether `e` is related to `target` by `R`. Never throws.
    template <class R>
    [[nodiscard]] bool related(Entity e, Entity target) const noexcept;
    /// Whether `e` is related by `R` to every one of `targets` (true for none). Never throws.
    template <class R>
    [[nodiscard]] bool related(Entity e, std::span<const Entity> targets) const noexcept;
    /// Whether `e` is related to `target` by any relation type.
    [[nodiscard]] bool related(Entity e, Entity target) const noexcept;
    /// Whether `e` has an `R` relation (any target). Never throws.
    template <class R>
    [[nodiscard]] bool has_relation(Entity e) const noexcept;
    /// Whether `e` has a relation of any type. O(components of `e`).
    [[nodiscard]] bool has_relation(Entity e) const noexcept;
    /// How many targets `e`'s `R` relation has (0 without one). O(1).
    template <class R>
    [[nodiscard]] std::size_t relation_count(Entity e) const noexcept;
    /// By how many relation types `e` is related to `target`.
    /// O(components of `e` x targets).
    [[nodiscard]] std::size_t relation_count(Entity e, Entity target) const noexcept;
    /// `e`'s `R` targets in relate order (empty when none): valid until the next structural
    /// change. No allocation.
    template <class R>
    [[nodiscard]] std::span<const Entity> targets(Entity e) const noexcept;
    /// The entities related to `target` by `R`, in relate order (reverse lookup): valid until
    /// the next structural change. O(1).
    template <class R>
    [[nodiscard]] std::span<const Entity> sources(Entity target) const noexcept;
    /// `e`'s `R` data (the one value per entity and relation type), or null without an `R`
    /// relation. The mutable form marks it changed and throws like `get_mut` (also while a
    /// relate or unrelate of `e`'s `R` is queued). Valid until the next structural change.
    template <class R>
    R* relation(Entity e);
    /// `e`'s `R` data read-only (marks nothing), or null without an `R` relation.
    template <class R>
    const R* relation(Entity e) const noexcept;
    /// The entities with a `ChildOf` relation to `parent`, in relate order (`sources<ChildOf>`:
    /// valid until the next structural change). O(1).
    [[nodiscard]] std::span<const Entity> children(Entity parent) const noexcept;
    /// `child`'s `ChildOf` targets, in relate order (`targets<ChildOf>`: valid until the next
    /// structural change).
    [[nodiscard]] std::span<const Entity> parents(Entity child) const noexcept;
    /// `child`'s first parent, or `Entity::null()`.
    [[nodiscard]] Entity parent(Entity child) const noexcept;
    /// `parent`'s first child (in relate order), or `Entity::null()`.
    [[nodiscard]] Entity child(Entity parent) const noexcept;
    /// Calls `fn(World&, Entity source, Entity target, R& data)` (the data may be left out)
    /// after a target is added to a source's `R` relation.
    template <class R, class F>
    [[nodiscard]] Observer on_relate(F&& fn);
    /// Calls `fn` like `on_relate` before a target is removed (the data still readable): by
    /// `unrelate`, and by a despawn of the source or of the target.
    template <class R, class F>
    [[nodiscard]] Observer on_unrelate(F&& fn);

    ///@}

    /// @name Events
    /// Include `<tessera/events.hpp>` to call these: their bodies (or the types they return)
    /// are there.
    ///@{

    /// Appends `event` to the world's `Events<T>` queue (made on first use). It can be read for
    /// two `update_events()` calls.
    template <class T>
    void send_event(T&& event);
    /// The event queue of `T`, made on first use. It lives as long as the world (a resource).
    template <class T>
    Events<T>& events();
    /// Calls `update()` on every event queue of the world, in the order they were made: the
    /// older buffer is dropped and the newer becomes the older. `Schedule::run` does this once
    /// at the end of each frame; outside schedules the program calls it.
    void update_events();

    ///@}

    /// @name Prefabs, names and modules
    /// Include `<tessera/prefab.hpp>` for `prefab`, `instantiate`, `instantiate_many` and
    /// `prefab_of`, `<tessera/names.hpp>` for `set_name`, `name` and `lookup`,
    /// `<tessera/module.hpp>` for `import` and `modules` (docs/authoring.md).
    ///@{

    /// Spawns a prefab: an entity with `components` and the tag `ts::Prefab`, which queries
    /// skip unless they name `Prefab`. @throws like `spawn`.
    template <class... Ts>
    Entity prefab(Ts&&... components);
    /// Spawns an instance of `prefab`: a copy of its components (without `Prefab` and its
    /// relations), `overrides` replacing (or adding to) them, a `ts::IsA` relation to `prefab`,
    /// and an instance of each of its child prefabs as its `ChildOf` children (recursively),
    /// in one archetype move per entity. All or nothing. @throws Error(not_alive) for a dead
    /// `prefab`, Error(invalid_argument) when it is no prefab or one of its components can't
    /// be copied.
    template <class... Ts>
    Entity instantiate(Entity prefab, Ts&&... overrides);
    /// `n` instances of `prefab` (with their children) in one table growth and one pass per
    /// column; returns the instances in order (valid until the next structural change or
    /// `spawn_many`). @throws like `instantiate`.
    std::span<const Entity> instantiate_many(Entity prefab, std::size_t n);
    /// The prefab `e` is an instance of (its `IsA` target), or null.
    [[nodiscard]] Entity prefab_of(Entity e) const noexcept;
    /// Names `e` (unique among its `ChildOf` siblings, or among the roots), replacing its old
    /// name. @throws Error(not_alive), Error(invalid_argument) for an empty name, one with '/'
    /// or invalid UTF-8, or one a sibling has (nothing changes then).
    void set_name(Entity e, std::string_view name);
    /// `e`'s name; empty when it has none or is dead. Valid until the name changes.
    [[nodiscard]] std::string_view name(Entity e) const noexcept;
    /// The entity at `path` ("level/room1/door": names through `ChildOf` from a root), or null.
    /// O(segments).
    [[nodiscard]] Entity lookup(std::string_view path) const noexcept;
    /// Imports module `M` (module.hpp: `void build(World&, Schedule&)`) once per world.
    /// @throws Error(invalid_argument) for an import cycle; what `build` throws (M is then not
    /// recorded).
    template <class M>
    void import(Schedule& schedule);
    /// The names of the imported modules, in import order.
    [[nodiscard]] std::span<const std::string_view> modules() const noexcept;

    ///@}

    // ----- ticks and introspection -----

    /// The largest value the world tick takes, 2^63 - 1: the tick never wraps (at one tick per
    /// nanosecond it lasts 292 years), and tick differences keep their sign.
    static constexpr std::uint64_t max_tick = (std::uint64_t{1} << 63) - 1;

    /// The current tick; starts at 1, at most `max_tick`.
    [[nodiscard]] std::uint64_t tick() const noexcept;
    /// Increments the tick and returns the new value; later writes are stamped with it.
    /// @throws Error(limit_exceeded) when the tick is `max_tick` (the tick is unchanged),
    /// Error(invalid_argument) from the workers of a `par_each`.
    std::uint64_t advance_tick();
    /// Archetypes created so far, the empty one included (archetypes are never destroyed).
    [[nodiscard]] std::size_t archetype_count() const noexcept;

    /// The untyped core, for the library's own modules (not API).
    [[nodiscard]] detail::Storage& storage() noexcept { return *storage_; }
    /// The untyped core, read-only (not API).
    [[nodiscard]] const detail::Storage& storage() const noexcept { return *storage_; }

private:
    Entity spawn_deferred(std::uint16_t components = 0);
    std::size_t despawn_tables(std::span<const std::uint32_t> tables);
    ArchetypeInfo archetype_info(std::uint32_t index) const noexcept;
    template <class... Ts>
    std::uint32_t archetype_index(const char* op);
    void reserve_table(std::uint32_t index, std::size_t n);
    bool remove_deferred(Entity e, std::span<const ComponentId> ids);
    template <class... Ts>
    void add_deferred(Entity e, Ts&&... components);
    template <class... Ts>
    void add_notifying(Entity e, std::span<const ComponentId> ids, Ts&&... components);
    template <class... Ts>
    void add_slow(Entity e, Ts&&... components);
    template <class... Ts>
    bool remove_slow(Entity e);
    template <class T>
    std::uint64_t tick_of(Entity e, bool added, const char* op);
    template <class T>
    T& checked(Entity e, const char* op) const;
    // The value writes without, and (out of line) with, the check against queued adds and
    // removes (`Storage::writes_watched`): the common path keeps nothing alive across a call.
    template <class T>
    T& get_mut_value(Entity e);
    template <class T>
    T& get_mut_watched(Entity e);
    template <class T>
    T* try_get_mut_value(Entity e) noexcept;
    template <class T>
    T* try_get_mut_watched(Entity e) noexcept;
    template <class T>
    void set_value(Entity e, T&& value);
    template <class T>
    void set_watched(Entity e, T&& value);

    /// The resource map, made on first use (defined in resource.cpp, which attaches it).
    detail::ResourceMap& resources();
    /// The resource map, or null before the first resource.
    [[nodiscard]] detail::ResourceMap* resource_map() const noexcept {
        return static_cast<detail::ResourceMap*>(resources_.object);
    }
    template <class T>
    T get_field(Entity e, ComponentId id, detail::FieldRef f) const;

    detail::Storage* storage_;
    /// The resources (a `detail::ResourceMap`, made on first insert_resource). World knows it
    /// only as an attachment: resource.cpp gives the function that destroys it.
    detail::Attachment resources_{};
};

/// Defers `world`'s structural changes for a scope (`defer_begin` when made, `defer_end` when
/// closed or destroyed): the outermost level applies them. `close()` applies and may throw;
/// the destructor applies without throwing (a change that fails then stays queued for the next
/// flush, as after a loop).
class Deferral {
public:
    /// Opens a level of deferral on `world`, which must outlive the scope.
    /// @throws Error(invalid_argument) from the workers of a `par_each`, like `defer_begin`.
    explicit Deferral(World& world) : world_(&world) { world.defer_begin(); }
    Deferral(const Deferral&) = delete;
    Deferral& operator=(const Deferral&) = delete;
    /// Ends the scope now (`defer_end`); afterwards the destructor does nothing.
    void close() {
        if (World* w = std::exchange(world_, nullptr)) w->defer_end();
    }
    ~Deferral();

private:
    World* world_;
};

}  // namespace tessera

#include <tessera/detail/world_impl.hpp>

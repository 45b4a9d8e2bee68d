/// @file detail/core.hpp
/// The untyped core: the entity index, the archetype graph (tables in detail/archetype.hpp) and
/// what a world knows of each component. It includes and calls nothing above it: observers,
/// relations, strings, deferral and `World` attach through `Storage` (detail/storage.hpp) and
/// the hooks of detail/hooks.hpp, which the core only flags. Internal, not API.
#pragma once

#include <tessera/assert.hpp>
#include <tessera/component.hpp>
#include <tessera/detail/archetype.hpp>
#include <tessera/detail/sparse_set.hpp>
#include <tessera/entity.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <memory_resource>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera::detail {

/// Where an entity lives. Dead records point at archetype 0 (an empty sentinel table no live
/// entity uses), so a lookup needs only the generation compare: the sentinel has no columns.
/// For dead records `row` is the next index of the free list.
struct EntityRecord {
    std::uint32_t archetype;
    std::uint32_t row;
    std::uint32_t generation;
};

inline constexpr std::uint32_t dead_archetype = 0;     ///< sentinel for free entity records
inline constexpr std::uint32_t empty_archetype = 1;    ///< entities without components
inline constexpr std::uint32_t pending_archetype = 2;  ///< spawned while deferred, not placed
inline constexpr std::uint32_t first_user_archetype = 3;
/// The index a user sees for archetype `index` (`ArchetypeInfo::index`): the sentinels are
/// skipped, so the empty archetype is 0 and the others follow in creation order.
constexpr std::uint32_t shown_archetype(std::uint32_t index) noexcept {
    return index == empty_archetype ? 0 : index - 2;
}
inline constexpr std::uint32_t no_index = 0xFFFFFFFFu;

/// The column `WorldComponent::columns` gives for an archetype without the component.
inline constexpr Column no_column{};

/// Per world, per component: what this world knows of the type.
/// Who asked for row logs of a component (`Core::log_rows`: its columns have a `RowLog`), or
/// null, and the epoch a new column's log starts with. Kept beside `WorldComponent`, not in it,
/// so the typed read path's stride stays the same.
struct RowLogState {
    const void* owner = nullptr;
    std::uint64_t epoch = 0;
};

struct WorldComponent {
    const ComponentInfo* info = nullptr;  ///< null until the world first sees the type
    bool tracked = false;                 ///< tick arrays exist for this type
    bool hooked = false;                  ///< changes of this type go through the world's hooks
    bool reserved = false;  ///< kept by a layer above (a relation's): plain add/remove refuse it
    /// Archetype index -> this component's column there, or `no_column` (whose data is null)
    /// when absent or a tag; entries past `column_count` are neither. The typed read path:
    /// entity record -> archetype index -> this array -> the column, whose `data` is the one
    /// place its base pointer lives.
    const Column** columns = nullptr;
    std::uint32_t column_count = 0;
    std::uint32_t column_capacity = 0;
};

/// The archetypes holding one component (tags too), in ascending index order: a query matches
/// against those of its rarest component, not against every archetype. Kept beside
/// `WorldComponent` (not in it: that one stays 32 bytes, indexed on every typed lookup).
struct TableList {
    std::uint32_t* data = nullptr;
    std::uint32_t count = 0;
    std::uint32_t capacity = 0;
};

/// `n` values of a trivially destructible `T` for one call's scratch work: on the stack up to
/// 16, else from `mr` (may throw bad_alloc). Values start value-initialised.
template <class T>
class ScratchArray {
    static_assert(std::is_trivially_destructible_v<T>);

public:
    ScratchArray(std::size_t n, std::pmr::memory_resource* mr) : n_(n), mr_(mr) {
        if (n > small) {
            data_ = static_cast<T*>(mr->allocate(n * sizeof(T), alignof(T)));
            std::uninitialized_value_construct_n(data_, n);
        }
    }
    ScratchArray(const ScratchArray&) = delete;
    ScratchArray& operator=(const ScratchArray&) = delete;
    ~ScratchArray() {
        if (data_ != local_) mr_->deallocate(data_, n_ * sizeof(T), alignof(T));
    }
    [[nodiscard]] T* data() noexcept { return data_; }
    [[nodiscard]] std::span<T> span() noexcept { return {data_, n_}; }
    T& operator[](std::size_t i) noexcept { return data_[i]; }

private:
    static constexpr std::size_t small = 16;
    T local_[small] = {};
    std::size_t n_;
    std::pmr::memory_resource* mr_;
    T* data_ = local_;
};

/// Where a new row goes before its values are constructed.
struct TableRow {
    Archetype* archetype;
    std::uint32_t row;
};

/// Where a component value of a live entity is.
struct Location {
    Archetype* archetype = nullptr;  ///< null when not found
    std::uint32_t row = 0;
    std::int32_t column = absent_column;
};

class Core;

/// The shared-world system (a schedule's `World&` system with declared access) running on this
/// thread: while `core` is set, that world's tick reads as `tick` on this thread only, so such
/// systems running at the same time stamp their writes with their own ticks and never write the
/// world's. Set and cleared by the schedule (src/schedule_run.cpp), nothing else.
struct ThreadSystem {
    const Core* core = nullptr;
    std::uint64_t tick = 0;
};
inline thread_local ThreadSystem thread_system;

/// Archetype tables plus the entity index: the world's data. Untyped: everything is in terms
/// of `ComponentId`s and bytes. Every mutating member has the strong guarantee.
class Core {
public:
    explicit Core(std::pmr::memory_resource* mr);
    ~Core();
    Core(const Core&) = delete;
    Core& operator=(const Core&) = delete;

    [[nodiscard]] std::pmr::memory_resource* resource() const noexcept { return mr_; }

    // ---- lookup (inline: the hot path) ----
    [[nodiscard]] const EntityRecord* try_record(Entity e) const noexcept {
        if (e.index >= record_count_) return nullptr;
        const EntityRecord& r = record_data_[e.index];
        return r.generation == e.generation && r.archetype != dead_archetype ? &r : nullptr;
    }
    [[nodiscard]] Archetype& archetype(std::uint32_t index) const noexcept {
        return *archetypes_[index];
    }
    /// Address of `id`'s value for `e`, or null when dead, absent or a tag.
    [[nodiscard]] std::byte* try_value(Entity e, ComponentId id) const noexcept {
        if (e.index >= record_count_) return nullptr;
        const EntityRecord& r = record_data_[e.index];
        if (r.generation != e.generation) return nullptr;  // dead records hit the sentinel below
        const Archetype& a = *archetypes_[r.archetype];
        const std::int32_t c = a.column_index(id);
        if (c < 0) [[unlikely]] {  // not in the table: a sparse component's set, if any
            const SparseSet* set = sparse(id);
            return set == nullptr ? nullptr : set->try_value(e);
        }
        const Column& col = a.columns[static_cast<std::uint32_t>(c)];
        return col.data + std::size_t{r.row} * col.size;
    }
    /// The column data holding `e`'s non-tag `id` (its value at `row`), or null when dead,
    /// absent or a tag: the typed read path. Every load comes before the first branch and
    /// those of `id` go through a select, not a branch, so a loop over entities hoists them
    /// out of its body (a load after a conditional exit is not hoisted).
    [[nodiscard]] std::byte* try_column(Entity e, ComponentId id,
                                        std::uint32_t& row) const noexcept {
        const EntityRecord* const records = record_data_;
        const std::uint32_t count = record_count_;
        const WorldComponent* const c =
            id.value < components_.size() ? components_.data() + id.value : &unseen_;
        const Column* const* const columns = c->columns;
        const std::uint32_t column_count = c->column_count;
        if (e.index >= count) return nullptr;
        const EntityRecord& r = records[e.index];
        // A dead record's generation can match, but it points at the sentinel table, whose entry
        // (when there is one) is `no_column`: data null.
        if (r.generation != e.generation || r.archetype >= column_count) return nullptr;
        row = r.row;
        return columns[r.archetype]->data;
    }
    /// Base of `id`'s column in archetype `archetype`, or null when absent, a tag or unknown.
    [[nodiscard]] std::byte* column_data(ComponentId id, std::uint32_t archetype) const noexcept {
        if (id.value >= components_.size()) return nullptr;
        const WorldComponent& c = components_[id.value];
        return archetype < c.column_count ? c.columns[archetype]->data : nullptr;
    }
    /// Where `e`'s non-tag `id` is; `archetype` null when dead or absent (or a tag).
    [[nodiscard]] Location try_location(Entity e, ComponentId id) const noexcept {
        if (e.index >= record_count_) return {};
        const EntityRecord& r = record_data_[e.index];
        if (r.generation != e.generation) return {};
        Archetype* a = archetypes_[r.archetype];
        const std::int32_t c = a->column_index(id);
        if (c < 0) return {};
        return {a, r.row, c};
    }
    [[nodiscard]] bool has(Entity e, ComponentId id) const noexcept {
        const EntityRecord* r = try_record(e);
        if (r == nullptr) return false;
        if (archetypes_[r->archetype]->contains(id)) return true;
        const SparseSet* set = sparse(id);  // a sparse component is in no table
        return set != nullptr && set->contains(e);
    }

    // ---- sparse components (detail/sparse_set.hpp) ----
    /// The sparse set of `id` in this world, or null (a table component, or one this world
    /// has not recorded yet: `ensure_component` makes the set).
    [[nodiscard]] SparseSet* sparse(ComponentId id) const noexcept {
        return id.value < sparse_by_id_.size() ? sparse_by_id_[id.value] : nullptr;
    }
    /// Every sparse set of this world, in the order the world first saw their components.
    [[nodiscard]] std::span<SparseSet* const> sparse_sets() const noexcept { return sparse_sets_; }
    /// Room in the set of each sparse component of `ids` (recorded) for one more entity of
    /// index `index`. @throws std::bad_alloc, changing nothing visible.
    void reserve_sparse(std::span<const ComponentId> ids, std::uint32_t index) {
        for (const ComponentId id : ids) {
            if (SparseSet* set = sparse(id)) set->reserve(index, 1);
        }
    }
    [[nodiscard]] std::size_t count() const noexcept { return alive_; }
    /// Archetypes a user can see: the empty one and every created one (not the two sentinels).
    [[nodiscard]] std::size_t archetype_count() const noexcept { return archetypes_.size() - 2; }
    /// The world's tick, or on a thread running a shared-world system, that system's.
    [[nodiscard]] std::uint64_t tick() const noexcept {
        return thread_system.core == this ? thread_system.tick : tick_;
    }
    /// Advances the world's tick (a shared-world system keeps its own: no change).
    std::uint64_t advance_tick() noexcept {
        if (thread_system.core == this) return thread_system.tick;
        return ++tick_;
    }
    /// Whether this thread runs a shared-world system on this world (see ThreadSystem).
    [[nodiscard]] bool shared_system() const noexcept { return thread_system.core == this; }

    // ---- components ----
    /// Records `id` in this world (first use). May throw bad_alloc.
    const ComponentInfo& ensure_component(ComponentId id);
    [[nodiscard]] const ComponentInfo& info(ComponentId id) const noexcept;
    /// The info of `id` when this world has recorded it, else null.
    [[nodiscard]] const ComponentInfo* known_info(ComponentId id) const noexcept {
        return id.value < components_.size() ? components_[id.value].info : nullptr;
    }
    /// The archetypes holding `id`, ascending (empty when none or unknown).
    [[nodiscard]] std::span<const std::uint32_t> tables_of(ComponentId id) const noexcept {
        if (id.value >= table_lists_.size()) return {};
        const TableList& t = table_lists_[id.value];
        return {t.data, t.count};
    }
    /// What this world knows of `id` (its column per archetype). Precondition: ensured.
    [[nodiscard]] const WorldComponent& world_component(ComponentId id) const noexcept {
        return components_[id.value];
    }
    /// Turns on change tracking for `id`: every existing row is stamped with the current tick.
    void track(ComponentId id);
    [[nodiscard]] bool tracked(ComponentId id) const noexcept {
        return id.value < components_.size() && components_[id.value].tracked;
    }
    /// Row logs (detail/archetype.hpp `RowLog`, src/core_row_log.cpp) for the tracked `id`,
    /// asked for by `owner` (a replicator): every column of `id`, now and later, lists its rows
    /// written after `epoch`. Called again by the owner, rebuilds every log (after a restore).
    /// False, changing nothing, when another owner has them. @throws bad_alloc (nothing
    /// changed then).
    bool log_rows(ComponentId id, const void* owner, std::uint64_t epoch);
    /// Frees `id`'s row logs when `owner` has them.
    void unlog_rows(ComponentId id, const void* owner) noexcept;
    /// Moves the epoch of `id`'s row logs to `epoch` (rows no newer leave them). O(entries).
    void trim_row_logs(ComponentId id, std::uint64_t epoch) noexcept;
    /// The owner of `id`'s row logs, or null.
    [[nodiscard]] const void* row_log_owner(ComponentId id) const noexcept {
        return id.value < row_logs_.size() ? row_logs_[id.value].owner : nullptr;
    }

    // ---- archetypes ----
    /// The archetype of exactly this set (sorted, unique ids), or null when none exists.
    [[nodiscard]] Archetype* find_archetype(std::span<const ComponentId> sorted_ids) const noexcept;
    /// The archetype of exactly this set (sorted, unique ids, all ensured), created if needed.
    Archetype& archetype_for(std::span<const ComponentId> sorted_ids);
    /// The archetype `from` leads to by adding (`adding`) or removing `id`, created if needed;
    /// cached with its move plan on `from`'s edges.
    Archetype& edge_target(Archetype& from, ComponentId id, bool adding);
    /// The archetype of `from`'s set with `ids` added (`adding`) or taken out, created if
    /// needed. The set is built in a buffer the core keeps, so a call allocates nothing when
    /// the archetype exists and the buffer has room (`reserve_set_buffer`).
    Archetype& merged_target(const Archetype& from, std::span<const ComponentId> ids, bool adding);
    /// Room in that buffer for a set of `n` ids. @throws std::bad_alloc.
    void reserve_set_buffer(std::size_t n) { set_buffer_.reserve(n); }
    /// The archetype for a cached bundle (a fixed list of types, e.g. a spawn call's), plus the
    /// column index of each type in bundle order.
    struct Bundle {
        Archetype* archetype;
        const std::int32_t* columns;  ///< column index of each type, in bundle order
    };
    Bundle bundle(std::uint32_t bundle_id, std::span<const ComponentId> ids_in_order) {
        if (bundle_id < bundles_.size()) [[likely]] {
            const BundleEntry& b = bundles_[bundle_id];
            if (b.archetype != no_index) [[likely]] {
                return {archetypes_[b.archetype], bundle_columns_.data() + b.offset};
            }
        }
        return new_bundle(bundle_id, ids_in_order);
    }

    // ---- entities ----
    /// Spawns an entity with no components.
    Entity spawn_empty();
    /// Reserves one row in `a` and one entity record; nothing is visible until `commit_spawn`.
    /// May throw bad_alloc. Nothing may throw between the two calls.
    TableRow prepare_spawn(Archetype& a) {
        if (a.size == a.capacity || (free_count_ == 0 && record_count_ == record_capacity_))
            [[unlikely]] {
            reserve_spawn(a, 1);
        }
        return {&a, a.size};
    }
    Entity commit_spawn(TableRow at) noexcept {
        Archetype& a = *at.archetype;
        const std::uint32_t index = take_index();
        EntityRecord& r = record_data_[index];
        r.archetype = a.index;
        r.row = at.row;
        const Entity e{index, r.generation};
        a.entities[at.row] = e;
        if (a.enableable || a.tracked) [[unlikely]]
            init_row(at);
        ++a.size;
        ++alive_;
        return e;
    }
    /// Gets `e` ready to receive `ids` (one archetype move when any is new): afterwards each
    /// component of `ids` has a place at the returned row, holding the old value when
    /// `existed[i]`, uninitialised otherwise. Throws not_alive (naming `op`) or bad_alloc
    /// before changing anything. Nothing may throw until the slots are filled.
    TableRow prepare_add(Entity e, std::span<const ComponentId> ids, bool* existed, const char* op);
    /// `prepare_add` for one component; `column` is its column at the returned row, or
    /// negative for a tag.
    TableRow prepare_add_one(Entity e, ComponentId id, bool& existed, std::int32_t& column,
                             const char* op);
    /// The fast path of adding one new component: when `e` is alive and lacks `id`, the edge
    /// is cached, the target table has room and neither table's rows need more than their
    /// bytes moved (`slow_rows`), moves the row (the move plan of detail/archetype.hpp) and
    /// returns the new component's uninitialised storage (for a tag, an address not to write);
    /// the caller constructs the value before anything else runs. Otherwise changes nothing
    /// and returns null: the caller takes `prepare_add_one`.
    std::byte* add_bytes(Entity e, ComponentId id) noexcept;
    /// The fast path of removing one component `e` has, under the same conditions as
    /// `add_bytes` (the removed value is trivially destructible there). False when it did
    /// nothing: the caller takes `remove`.
    bool remove_bytes(Entity e, ComponentId id) noexcept;
    /// Removes the components of `ids` that `e` has, in one move. False when it had none.
    bool remove(Entity e, std::span<const ComponentId> ids, const char* op);
    /// The archetype `from` leads to without `ids` (created if needed).
    Archetype& removal_target(Archetype& from, std::span<const ComponentId> ids);
    /// `remove` of one component.
    bool remove_one(Entity e, ComponentId id, const char* op) {
        if (remove_bytes(e, id)) [[likely]]
            return true;
        const ComponentId one[] = {id};
        return remove(e, one, op);
    }
    /// Destroys the values of rows [first, first + n) of `a` (rows not committed yet).
    void destroy_rows(Archetype& a, std::uint32_t first, std::size_t n) noexcept;
    /// Reserves `n` rows and entity slots (storage grows at most once).
    void reserve_spawn(Archetype& a, std::size_t n);
    /// Commits `n` rows whose values are constructed; returns their entities.
    std::span<const Entity> commit_spawn_many(Archetype& a, std::size_t n) noexcept;
    /// Reserves entity slots for `n` more entities (no rows). May throw bad_alloc,
    /// limit_exceeded.
    void reserve_entities(std::size_t n) { reserve_records(n); }
    /// The handles the next `out.size()` spawns will get, in order (the free list first).
    /// Precondition: `reserve_entities(out.size())`. O(out.size()).
    void next_entities(std::span<Entity> out) const noexcept {
        std::uint32_t index = free_head_;
        std::uint32_t fresh = record_count_;
        for (Entity& e : out) {
            if (index != no_index) {
                e = Entity{index, record_data_[index].generation};
                index = record_data_[index].row;
            } else {
                e = Entity{fresh++, 1};
            }
        }
    }
    /// Destroys the entity's values and frees its record. False when `e` is not alive.
    bool despawn(Entity e) noexcept;
    /// Despawns the live entities of `es` (dead, null and repeated handles are skipped):
    /// their slots are freed in the order given, as one `despawn` at a time would, then each
    /// table they were in is compacted once, from its highest freed row down (the last row
    /// fills each hole). Returns how many were despawned. O(n + rows moved). Preconditions: no
    /// hook applies, none is permanent. @throws bad_alloc (scratch) before changing anything.
    std::size_t despawn_many(std::span<const Entity> es);
    /// Despawns every entity of the tables `tables` (archetype indices, each once), rows in
    /// table order. Returns how many. Preconditions as `despawn_many`.
    std::size_t despawn_tables(std::span<const std::uint32_t> tables) noexcept;
    /// Moves `e`'s row to `to`; values of components `to` lacks are destroyed, slots of
    /// components the source lacks are left uninitialised (the caller constructs them before
    /// anything else can run). Ticks travel with the values. Precondition: `reserve_rows(to, 1)`.
    TableRow move_entity(Entity e, const EntityRecord& r, Archetype& to) noexcept;
    /// Ensures room for `n` more rows in `a` (strong guarantee).
    void reserve_rows(Archetype& a, std::size_t n);
    /// Stamps the added+changed ticks of `at` for `id` (when tracked).
    void stamp_added(TableRow at, std::int32_t column) const noexcept {
        const Column& c = at.archetype->columns[static_cast<std::uint32_t>(column)];
        if (c.changed != nullptr) [[unlikely]]
            c.set_added(at.row, tick());
    }
    /// Stamps every tracked column of `at`'s row as added (new row).
    void stamp_row_added(TableRow at) noexcept;

    /// Whether a `par_each` is running: the tables may not change (structural calls and
    /// `track` are refused).
    [[nodiscard]] bool parallel() const noexcept { return parallel_; }
    void set_parallel(bool on) noexcept { parallel_ = on; }

    // ---- entities spawned before they have a table ----
    /// An entity that is alive but in no table yet (spawn while deferred); placed at the flush.
    Entity spawn_pending();
    /// The entity index before a call that may have to take back the entities it spawned.
    struct IndexMark {
        std::uint32_t record_count;
    };
    [[nodiscard]] IndexMark index_mark() const noexcept { return {record_count_}; }
    /// Takes back pending entities (from `spawn_pending`) spawned since `mark`, given in the
    /// order they were spawned, and nothing else spawned since: their indices return to the
    /// free list (or past the end) exactly as before, generations unchanged, so the next spawns
    /// get the ids they would have got had these never been made.
    void release_pending(IndexMark mark, std::span<const Entity> spawned) noexcept;
    /// `release_pending` for entities that may have been placed since: each placed one's row,
    /// which must be among the last rows of its table (nothing but spawns since), goes first.
    void take_back_spawned(IndexMark mark, std::span<const Entity> spawned) noexcept;
    /// The index the next spawn will take.
    [[nodiscard]] std::uint32_t next_index() const noexcept {
        return free_head_ != no_index ? free_head_ : record_count_;
    }
    /// Permanent entities: a bit per entity index, allocated on first use.
    void reserve_permanent(std::uint32_t index);
    void set_permanent(std::uint32_t index) noexcept {
        permanent_[index / 64] |= std::uint64_t{1} << (index % 64);
    }
    [[nodiscard]] bool permanent(std::uint32_t index) const noexcept {
        return index / 64 < permanent_.size() && (permanent_[index / 64] >> (index % 64) & 1u) != 0;
    }
    /// The enable flag of `id` for `e` (checks enableable, alive, present; `op` names the call
    /// in errors).
    std::uint8_t& enable_flag(Entity e, ComponentId id, const char* op) const;
    /// Number of archetypes including the sentinel (indices are below this).
    [[nodiscard]] std::size_t archetype_end() const noexcept { return archetypes_.size(); }
    /// Every live entity, archetype by archetype, row by row.
    [[nodiscard]] std::vector<Entity> entities() const;

    // ---- hooks: which changes the layers above take part in (detail/hooks.hpp) ----
    /// Whether anything is attached. Structural changes go through the hooks only when it is
    /// and the change concerns a hooked component (or every change is hooked): a world with
    /// nothing attached pays one predictable branch per change.
    [[nodiscard]] bool hooked() const noexcept { return hooked_; }
    /// Whether a change of `id` goes through the hooks.
    [[nodiscard]] bool hooked(ComponentId id) const noexcept {
        return hooked_ && id.value < components_.size() && components_[id.value].hooked;
    }
    /// Whether a change of any of `ids` goes through the hooks.
    [[nodiscard]] bool hooked(std::span<const ComponentId> ids) const noexcept {
        if (!hooked_) return false;
        // An id this world has not recorded yet has no observers of its own.
        if (hook_all_) return true;
        for (const ComponentId id : ids)
            if (id.value < components_.size() && components_[id.value].hooked) return true;
        return false;
    }
    /// Whether a change of an entity in `a` (a spawn into it, a despawn from it) goes through
    /// the hooks.
    [[nodiscard]] bool hooked(const Archetype& a) const noexcept { return hooked_ && a.hooked; }
    /// Whether despawning `e` (alive) or removing from it goes through the hooks.
    [[nodiscard]] bool hooked(const EntityRecord& r) const noexcept {
        return hooked_ && archetypes_[r.archetype]->hooked;
    }
    /// Whether every change goes through the hooks (spawns included).
    [[nodiscard]] bool hooked_all() const noexcept { return hook_all_; }
    /// Sets the hook flags: `on` something is attached; `all` every change is hooked; `by_id[id]`
    /// components whose changes are hooked. Reserved components stay hooked.
    void set_hooks(bool on, bool all, std::span<const std::uint8_t> by_id) noexcept;
    /// Turns the hooks on or off, keeping the per-component flags.
    void set_hooked(bool on) noexcept { hooked_ = on; }
    /// Marks `id` reserved (kept by a layer above: plain adds and removes refuse it) and hooked.
    void reserve_component(ComponentId id) noexcept;
    /// Whether `id` is reserved.
    [[nodiscard]] bool reserved(ComponentId id) const noexcept {
        return id.value < components_.size() && components_[id.value].reserved;
    }

    // ---- whole-world copies (clone, snapshot, restore, load) ----
    /// Makes this core, fresh (as constructed), a copy of `src`: entities with their ids,
    /// generations and free list, archetypes in the same order, values (copy constructors;
    /// memcpy for trivially copyable types), ticks, enable flags, permanent bits and reserved
    /// components. Edges and bundle caches start empty. On a throw this core must be discarded.
    /// @throws invalid_argument (naming `op` and the type) for a component with values that
    /// can't be copied.
    void copy_from(const Core& src, const char* op);
    /// Exchanges the world state (everything `copy_from` copies) with `other`, which uses the
    /// same memory resource; the hook switch and the tick stay. Both layout epochs change, so
    /// cached queries re-match.
    void swap_state(Core& other) noexcept;
    /// Changes whenever archetype indices stop meaning what they meant (`swap_state`): caches
    /// of archetype indices compare it.
    [[nodiscard]] std::uint64_t layout_epoch() const noexcept { return epoch_; }
    /// Every component id this world has recorded (`ensure_component`), ascending.
    template <class F>
    void for_each_component(F&& fn) const {
        for (std::size_t i = 0; i < components_.size(); ++i) {
            if (components_[i].info != nullptr) fn(ComponentId{static_cast<std::uint32_t>(i)});
        }
    }
    /// The entity index, for whole-world readers (serialize.cpp): `record_count()` records.
    [[nodiscard]] const EntityRecord* records() const noexcept { return record_data_; }
    [[nodiscard]] std::uint32_t record_count() const noexcept { return record_count_; }
    [[nodiscard]] std::uint32_t free_head() const noexcept { return free_head_; }
    /// The permanent bits by entity index, 64 per word (may be shorter than the index).
    [[nodiscard]] std::span<const std::uint64_t> permanent_words() const noexcept {
        return permanent_;
    }
    /// Stamps the changed tick of every row of `id`'s column in `a` (when tracked) with
    /// `tick` (a system's own tick inside a schedule, else the world's).
    static void stamp_column(Archetype& a, ComponentId id, std::uint64_t tick) noexcept {
        const std::int32_t c = a.column_index(id);
        if (c < 0) return;
        Column& col = a.columns[static_cast<std::uint32_t>(c)];
        if (col.changed != nullptr) col.stamped = tick;
    }
    /// Stamps the changed tick of `id` at `at` when tracked.
    void stamp_changed(const Archetype& a, std::uint32_t row, std::int32_t column) const noexcept {
        const Column& col = a.columns[static_cast<std::uint32_t>(column)];
        if (col.changed != nullptr) [[unlikely]]
            col.set_changed(row, tick());
    }
    static void stamp_changed(const Archetype& a, std::uint32_t row, std::int32_t column,
                              std::uint64_t tick) noexcept {
        const Column& col = a.columns[static_cast<std::uint32_t>(column)];
        if (col.changed != nullptr) col.set_changed(row, tick);
    }
    /// Stamps `e`'s `id` changed now, in its table or its sparse set (an untyped write's
    /// stamp); nothing when `e` lacks it.
    void stamp_changed_of(Entity e, ComponentId id) const noexcept {
        const Location loc = try_location(e, id);
        if (loc.archetype != nullptr) {
            stamp_changed(*loc.archetype, loc.row, loc.column);
        } else if (const SparseSet* set = sparse(id)) {
            const std::uint32_t row = set->find(e);
            if (row != SparseSet::no_row) set->stamp_changed(row, tick());
        }
    }
    /// Sets the tick (a schedule gives each exclusive system its own while it runs).
    void set_tick(std::uint64_t tick) noexcept { tick_ = tick; }

private:
    friend struct StorageAccess;  // serialize.cpp: builds a storage from a saved image
    Archetype& create_archetype(std::span<const ComponentId> sorted_ids);
    void reserve_columns(WorldComponent& wc, std::size_t n);
    void reserve_tables(TableList& t, std::size_t n);
    void grow(Archetype& a, std::size_t min_capacity);
    /// Fills `log`, the row log of `c` for `cap` rows (`ticks` its changed ticks), from `c`'s
    /// old one (of `size` rows), or starts it (core_row_log.cpp).
    void grow_log(const Column& c, RowLog* log, std::uint32_t size, std::size_t cap,
                  const std::uint64_t* ticks) const noexcept;
    void reserve_records(std::size_t n);
    std::uint32_t take_index() noexcept {
        if (free_head_ != no_index) {
            const std::uint32_t index = free_head_;
            free_head_ = record_data_[index].row;
            --free_count_;
            return index;
        }
        record_data_[record_count_] = EntityRecord{dead_archetype, 0, 1};  // capacity reserved
        return record_count_++;
    }
    /// `move_entity` of `e` (at `src` of `from`) along a cached edge between tables whose rows
    /// are only bytes; `to` has the added column (`Adding`) or lacks the removed one at
    /// `pivot` of the larger table, or no column differs (`pivot` is `Edge::no_column`, a tag).
    /// Returns the row in `to`. Precondition: room in `to`. Defined (and used) in core.cpp.
    template <bool Adding>
    std::uint32_t move_bytes(Entity e, std::uint32_t src, Archetype& from, Archetype& to,
                             std::uint32_t pivot) noexcept;
    /// Enable flags on and ticks stamped for a new row.
    void init_row(TableRow at) noexcept;
    Bundle new_bundle(std::uint32_t bundle_id, std::span<const ComponentId> ids_in_order);
    void free_row(Archetype& a, std::uint32_t row) noexcept;
    /// Erases the live entity `e` from every sparse set (despawn): O(sparse components).
    void erase_sparse(Entity e) noexcept {
        for (SparseSet* set : sparse_sets_) set->erase(e);
    }
    /// `prepare_add` of ids (recorded) some of which are sparse.
    TableRow prepare_add_sparse(Entity e, const EntityRecord& r, std::span<const ComponentId> ids,
                                bool* existed);
    /// Marks the record of a live entity dead (generation bumped) and frees its index.
    void free_record(std::uint32_t index) noexcept;
    /// The generation after `g`: it wraps to 1, and 0xFFFFFFFF is never used (it marks
    /// command-buffer placeholders).
    static constexpr std::uint32_t next_generation(std::uint32_t g) noexcept {
        return g + 1 >= 0xFFFFFFFFu ? 1 : g + 1;
    }
    std::byte* allocate(std::size_t bytes, std::size_t align);
    void deallocate(void* p, std::size_t bytes, std::size_t align) noexcept;
    void release_archetype(Archetype& a) noexcept;

    std::pmr::memory_resource* mr_;
    // The entity index: a plain array from mr_ (so large ones get huge pages, and the bounds
    // check needs no division by the record size).
    EntityRecord* record_data_ = nullptr;
    std::uint32_t record_count_ = 0;
    std::uint32_t record_capacity_ = 0;
    std::pmr::vector<Archetype*> archetypes_;
    std::pmr::vector<WorldComponent> components_;
    /// What `try_column` reads for an id this world has never seen: no columns. A member,
    /// not a constant, so the compiler selects it instead of branching around the loads.
    WorldComponent unseen_;
    struct SetKey {
        std::uint64_t hash;
        std::uint32_t archetype;
    };
    /// Archetypes by the hash of their id set (sorted): an open-addressing table (power-of-two
    /// size, linear probing, `archetype == no_index` empty), at most half full, so that finding a
    /// set is O(1) however many archetypes exist.
    std::pmr::vector<SetKey> set_index_;
    std::size_t set_count_ = 0;  ///< entries of set_index_
    struct BundleEntry {
        std::uint32_t archetype = no_index;
        std::uint32_t offset = 0;  ///< into bundle_columns_
    };
    std::pmr::vector<BundleEntry> bundles_;
    std::pmr::vector<std::int32_t> bundle_columns_;
    std::pmr::vector<std::uint64_t> permanent_;
    // The sparse sets (owned), in the order made, and by component id (empty, so `sparse(id)`
    // is one compare, in a world without sparse components).
    std::pmr::vector<SparseSet*> sparse_sets_;
    std::pmr::vector<SparseSet*> sparse_by_id_;
    std::uint64_t epoch_ = 0;
    bool hooked_ = false;    ///< something is attached
    bool hook_all_ = false;  ///< every change is hooked
    bool parallel_ = false;
    std::uint32_t free_head_ = no_index;
    std::size_t free_count_ = 0;
    std::size_t alive_ = 0;
    std::uint64_t tick_ = 1;
    std::pmr::vector<RowLogState> row_logs_{mr_};    ///< by component id (`log_rows`)
    std::pmr::vector<ComponentId> set_buffer_{mr_};  ///< `merged_target`'s
    std::pmr::vector<TableList> table_lists_{mr_};   ///< by component id, as components_
};

/// A process-wide sequence number for a list of component types (used to cache the archetype
/// of a `spawn(components...)` call per world). Thread-safe.
std::uint32_t next_bundle_id() noexcept;

template <class... Ts>
std::uint32_t bundle_id() noexcept {
    static const std::uint32_t id = next_bundle_id();
    return id;
}

}  // namespace tessera::detail

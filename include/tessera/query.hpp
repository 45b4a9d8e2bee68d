/// @file query.hpp
/// Queries: cached archetype matching, typed iteration (`each`, `each_chunk`, `chunks`) and the
/// untyped `QuerySpec` + `World::collect_chunks` path. `Chunk` is in chunk.hpp.
///
/// **Invalidation.** A `Chunk` (chunk.hpp), and every span or reference obtained from one or from
/// an `each` callback, points into an archetype table: it stays valid until the next structural
/// change (spawn, despawn, add, remove) in the world. A query object itself stays valid across
/// structural changes and world moves; archetypes created after it are matched the next time it
/// runs.
#pragma once

#include <tessera/chunk.hpp>
#include <tessera/detail/cascade.hpp>
#include <tessera/detail/cascade_loop.hpp>
#include <tessera/detail/operations.hpp>
#include <tessera/detail/parallel.hpp>
#include <tessera/detail/sparse_query.hpp>
#include <tessera/detail/terms.hpp>
#include <tessera/detail/type_list.hpp>
#include <tessera/error.hpp>
#include <tessera/mut.hpp>
#include <tessera/observer.hpp>
#include <tessera/prefab_tags.hpp>
#include <tessera/query_spec.hpp>
#include <tessera/world.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <memory_resource>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera {

namespace detail {

/// A change filter: rows whose `id` was changed (or added) after a tick.
struct ChangeFilter {
    ComponentId id;
    bool added = false;          ///< test the added tick instead of the changed tick
    bool since_last_run = true;  ///< the tick is the query's previous run; else `tick`
    std::uint64_t tick = 0;
    /// The component is sparse (detail/sparse_query.hpp): the tables' checks (`passes`,
    /// `block_passes`) skip it, the sparse run checks it.
    bool sparse = false;
};

/// The untyped part of a query: what it matches and the archetypes it has matched so far.
class QueryState {
public:
    /// The state of an empty query: it belongs to no world and matches nothing.
    QueryState() noexcept = default;
    explicit QueryState(Storage& storage)
        : storage_(&storage),
          matched_(storage.resource()),
          filters_(storage.resource()),
          gates_(storage.resource()),
          term_ids_(storage.resource()),
          columns_(storage.resource()),
          sparse_all_(storage.resource()),
          sparse_none_(storage.resource()) {}
    QueryState(const QueryState&) = default;
    QueryState(QueryState&&) noexcept = default;
    QueryState& operator=(const QueryState&) = default;
    /// Becomes `other` with its memory resource (a member assignment would keep this one's:
    /// an empty query's is the default resource, not the world's).
    QueryState& operator=(QueryState&& other) noexcept {
        if (this != &other) {
            std::destroy_at(this);
            std::construct_at(this, std::move(other));
        }
        return *this;
    }
    /// Whether the query belongs to a world (false for a default-constructed one).
    [[nodiscard]] bool attached() const noexcept { return storage_ != nullptr; }

    QuerySpec spec;
    /// An optional term names `Prefab` (`const Prefab*`): prefabs match (prefab.hpp).
    bool names_prefab = false;

    /// Matches the archetypes created since the last call (allocates only when there are new
    /// matches), then returns the matched archetype indices (none for an empty query).
    std::span<const std::uint32_t> update() {
        // Inline: in a steady state (no new archetype, no restore) a run only compares.
        if (storage_ != nullptr && seen_ == storage_->archetype_end() &&
            epoch_ == storage_->layout_epoch()) [[likely]] {
            return matched_;
        }
        return match_new();
    }
    /// Adds a change filter (turns tracking on for its component). @throws
    /// Error(invalid_argument) on an empty query (no world to track it in).
    void add_filter(ChangeFilter f);
    [[nodiscard]] std::span<const ChangeFilter> filters() const noexcept { return filters_; }
    /// The component of each term whose column a run reads (an id no component has for the
    /// others: `Entity`, tags); set once by `Query`. Each matched archetype then keeps these
    /// columns (`columns`), so a run finds a table's columns without looking them up.
    void set_terms(std::span<const ComponentId> ids);
    /// The columns of the terms (`set_terms` order) in the `k`-th matched archetype; `no_column`
    /// where it has none. Column objects never move, so this holds across growth.
    [[nodiscard]] const Column* const* columns(std::size_t k) const noexcept {
        return columns_.data() + k * term_ids_.size();
    }
    /// Adds an enableable component of a `with` filter: rows where it is disabled are skipped,
    /// as for a term's (each id once).
    void add_gate(ComponentId id);
    /// The enableable components of `with` filters.
    [[nodiscard]] std::span<const ComponentId> gates() const noexcept { return gates_; }
    /// Adds a sparse component the query requires (`required`: a term or `with`) or excludes
    /// (`without`), each once: kept out of `spec`, whose matcher sees tables only.
    void add_sparse(ComponentId id, bool required) {
        std::pmr::vector<ComponentId>& list = required ? sparse_all_ : sparse_none_;
        for (const ComponentId known : list)
            if (known == id) return;
        list.push_back(id);
        sparse_ = true;
    }
    /// The sparse components required and excluded (`add_sparse`).
    [[nodiscard]] std::span<const ComponentId> sparse_all() const noexcept { return sparse_all_; }
    [[nodiscard]] std::span<const ComponentId> sparse_none() const noexcept { return sparse_none_; }
    /// Whether the query names a sparse component (its runs take the sparse path).
    [[nodiscard]] bool sparse() const noexcept { return sparse_; }
    /// The tick a filter's ticks must be above in this run.
    [[nodiscard]] std::uint64_t since(const ChangeFilter& f) const noexcept {
        return f.since_last_run ? run_since_ : f.tick;
    }
    /// Whether some `with` gate has enable flags in `a`.
    [[nodiscard]] bool gated(const Archetype& a) const noexcept;
    /// Whether every `with` gate that `a` has is enabled at `row`. O(gates).
    [[nodiscard]] bool gates_pass(const Archetype& a, std::uint32_t row) const noexcept;
    /// Whether `row` of `a` passes every change filter, given this run's last-run tick.
    [[nodiscard]] bool passes(const Archetype& a, std::uint32_t row) const noexcept;
    /// False when no row of block `block` (`tick_block` rows) of `a` can pass the change
    /// filters, by the block bounds of their changed ticks.
    [[nodiscard]] bool block_passes(const Archetype& a, std::size_t block) const noexcept;
    /// Called when a run starts and ends: "since the last run" bookkeeping. A run outside
    /// systems with a since-last-run filter advances the world tick at its end, so `begin_run`
    /// throws Error(limit_exceeded) when the tick is at `World::max_tick`, before anything runs.
    void begin_run() {
        if (system_) return;
        if (since_last_run_) check_tick_room();
        run_since_ = last_run_;
    }
    void end_run() noexcept {
        if (system_ || !since_last_run_) return;
        finish_run();
    }
    /// Runs made by a system of a schedule: `since` is the system's previous tick and writes
    /// are stamped with `tick`; the query then neither defers the world nor advances its tick
    /// (other systems run at the same time).
    /// `exclusive`: the system runs alone and may change the world's structure, so the query
    /// defers those changes as usual.
    void enter_system(std::uint64_t since, std::uint64_t tick, bool exclusive) noexcept {
        system_ = true;
        exclusive_ = exclusive;
        run_since_ = since;
        write_tick_ = tick;
    }
    void leave_system() noexcept {
        system_ = false;
        write_tick_ = 0;
    }
    /// Whether a run defers the world's structural changes (and marks it parallel in par_each):
    /// always, except for a system sharing the world with others (a View of a non-exclusive
    /// system, or any query run by a `World&` system with declared access).
    [[nodiscard]] bool owns_world() const noexcept {
        if (system_) return exclusive_;
        return storage_ == nullptr || !storage_->shared_system();
    }
    /// The tick this run stamps writes with.
    [[nodiscard]] std::uint64_t write_tick() const noexcept {
        return write_tick_ != 0 ? write_tick_ : storage_->tick();
    }
    /// Forgets the matches (the spec changed).
    void reset() noexcept {
        matched_.clear();
        columns_.clear();
        seen_ = 0;
    }
    [[nodiscard]] Storage& storage() const noexcept { return *storage_; }

private:
    std::span<const std::uint32_t> match_new();  // update's slow path
    void check_tick_room() const;                // begin_run: throws at World::max_tick
    void finish_run() noexcept;                  // end_run: advances the tick

    Storage* storage_ = nullptr;
    std::pmr::vector<std::uint32_t> matched_;
    std::pmr::vector<ChangeFilter> filters_;
    std::pmr::vector<ComponentId> gates_;       ///< enableable components of `with` filters
    std::pmr::vector<ComponentId> term_ids_;    ///< see `set_terms`
    std::pmr::vector<const Column*> columns_;   ///< per matched archetype, per term
    std::pmr::vector<ComponentId> sparse_all_;  ///< see `add_sparse`
    std::pmr::vector<ComponentId> sparse_none_;
    bool sparse_ = false;           ///< some sparse component is named
    std::size_t seen_ = 0;          ///< archetypes examined so far
    std::uint64_t epoch_ = 0;       ///< the storage's layout epoch `matched_` belongs to
    std::uint64_t last_run_ = 0;    ///< tick at the end of the previous run
    std::uint64_t run_since_ = 0;   ///< last_run_ as of this run's start
    std::uint64_t write_tick_ = 0;  ///< set by a system run; 0 = the world's tick
    bool since_last_run_ = false;   ///< some filter is "since the last run"
    bool system_ = false;           ///< run by a schedule's system
    bool exclusive_ = false;        ///< ... that runs alone
};

/// Throws Error(invalid_argument): `op` needs a world, and the query is empty.
[[noreturn]] void throw_empty_query(const char* op);
/// Checks every id of `spec` (`checked_info`). @throws Error(not_registered) naming `op`.
void check_spec(const QuerySpec& spec, const char* op);
/// Throws Error(invalid_argument): `op` does not take a query that names a sparse component.
[[noreturn]] void throw_sparse_query(const char* op);
/// Throws Error(invalid_argument): `op` was given a query of another world.
[[noreturn]] void throw_foreign_query(const char* op);
/// `world.despawn(doomed)` for `despawn_all`, which began a run of `state`: ends the run once
/// every entity died (also when an observer threw then), not when the despawn failed.
std::size_t despawn_run(World& world, QueryState& state, std::span<const Entity> doomed);

}  // namespace detail

/// A cached query over `Terms...` (`T&`, `const T&`, `T*`, `const T*`, `Mut<T>`, `Entity`).
///
/// Building it matches the existing archetypes once; archetypes created later are matched
/// incrementally when it next runs, so iterating allocates nothing in a steady state. Filters
/// are added with the builder members before the first run. A query belongs to one world and
/// must not outlive it; it stays valid across structural changes and moves of the world.
///
/// **Empty queries.** A default-constructed `Query` belongs to no world, so a class can hold
/// one as a member and assign `world.query<...>()` to it later. Until then it matches nothing:
/// `each`, `par_each`, `each_chunk` and `chunks` visit nothing and `count` is 0 (as a
/// default-constructed EnTT view); `with`/`without`/`any` only record ids; the members that need
/// a world (`changed`, `added`, their `_since` forms, `on_enter`, `on_exit`) throw
/// Error(invalid_argument). `explicit operator bool` tells whether it belongs to a world.
template <class... Terms>
class Query {
public:
    /// An empty query, belonging to no world: it matches nothing until a query is assigned to
    /// it (`q = world.query<...>()`). Allocates nothing.
    Query() noexcept = default;
    /// A query over `storage`'s world (`World::query` makes them). Registers the terms'
    /// components in the world.
    explicit Query(detail::Storage& storage) : state_(storage) {
        (
            [&] {
                using Tr = detail::term_traits<Terms>;
                if constexpr (!Tr::entity) {
                    storage.ensure_component(component_id<typename Tr::component>());
                    if constexpr (Tr::required && detail::sparse_term_v<Terms>) {
                        state_.add_sparse(component_id<typename Tr::component>(), true);
                    } else if constexpr (Tr::required) {
                        state_.spec.all.push_back(component_id<typename Tr::component>());
                    } else if constexpr (std::is_same_v<typename Tr::component, Prefab>) {
                        state_.names_prefab = true;
                    }
                }
            }(),
            ...);
        const ComponentId ids[] = {detail::term_column_id<Terms>()..., ComponentId{}};
        state_.set_terms(std::span<const ComponentId>(ids, sizeof...(Terms)));
    }

    /// Requires every one of `Ts` (not passed to the callback). For an enableable `T` (tags
    /// included), `each` and `par_each` skip rows where it is disabled, as for a term's.
    template <class... Ts>
    Query& with() & {
        (
            [&] {
                if constexpr (detail::enableable_v<Ts>) state_.add_gate(component_id<Ts>());
            }(),
            ...);
        return add_ids<Ts...>(state_.spec.all);
    }
    /// `with` on a temporary query (`world.query<...>().with<T>()`).
    template <class... Ts>
    Query&& with() && {
        return std::move(with<Ts...>());
    }
    /// Excludes entities that have any of `Ts`.
    template <class... Ts>
    Query& without() & {
        return add_ids<Ts...>(state_.spec.none);
    }
    /// `without` on a temporary query.
    template <class... Ts>
    Query&& without() && {
        return std::move(without<Ts...>());
    }
    /// Requires at least one of `Ts` (table components only).
    template <class... Ts>
    Query& any() & {
        static_assert(!detail::any_sparse_v<Ts...>,
                      "tessera: Query::any takes table components only; a sparse component "
                      "(storage_kind::sparse) can't be one of its alternatives");
        return add_ids<Ts...>(state_.spec.any);
    }
    /// `any` on a temporary query.
    template <class... Ts>
    Query&& any() && {
        return std::move(any<Ts...>());
    }
    /// Visits only rows whose `T` changed since this query's previous run (every row on the
    /// first run). A run with such a filter advances the world tick by one when it ends, so a
    /// write made after a run is seen by the next run exactly once. Turns tracking on for `T`.
    template <class T>
    Query& changed() & {
        return filter<T>(false, true, 0);
    }
    /// `changed` on a temporary query.
    template <class T>
    Query&& changed() && {
        return std::move(changed<T>());
    }
    /// Visits only rows whose `T` was added since this query's previous run (like `changed`).
    template <class T>
    Query& added() & {
        return filter<T>(true, true, 0);
    }
    /// `added` on a temporary query.
    template <class T>
    Query&& added() && {
        return std::move(added<T>());
    }
    /// Visits only rows whose `T` changed after `tick` (strictly).
    template <class T>
    Query& changed_since(std::uint64_t tick) & {
        return filter<T>(false, false, tick);
    }
    /// `changed_since` on a temporary query.
    template <class T>
    Query&& changed_since(std::uint64_t tick) && {
        return std::move(changed_since<T>(tick));
    }
    /// Visits only rows whose `T` was added after `tick` (strictly).
    template <class T>
    Query& added_since(std::uint64_t tick) & {
        return filter<T>(true, false, tick);
    }
    /// `added_since` on a temporary query.
    template <class T>
    Query&& added_since(std::uint64_t tick) && {
        return std::move(added_since<T>(tick));
    }

    /// Makes this a cascade query: `each` and `par_each` visit the rows in depth order, every
    /// entity after its first parent (`ChildOf`, relation.hpp), parent's parent and so on up
    /// to its root (an entity outside any hierarchy has depth 0); within a depth, table by
    /// table in creation order, rows in table order. `par_each` runs one depth level at a
    /// time, each level's rows split across the workers. `each_chunk` and `chunks` visit whole
    /// tables as before (no order). The order is kept in the query: a run whose tables and
    /// hierarchy are unchanged reuses it (O(matched tables) to check, no allocation); a
    /// structural change in a matched table or a first-parent change makes the next run
    /// rebuild it, O(rows + levels), where only entities whose ancestry changed walk their
    /// parents again (docs/queries.md, "Traversal: Up and cascade"). With an Up term
    /// (traverse.hpp) the build also groups each run's rows by first parent, so that the term
    /// is resolved once a group. Any depth works (no recursion). @throws
    /// Error(invalid_argument) on an empty query.
    Query& cascade() & {
        check_attached("Query::cascade");
        cascade_.enable(state_.storage().resource(), resolving);
        return *this;
    }
    /// `cascade` on a temporary query.
    Query&& cascade() && { return std::move(cascade()); }
    /// Whether `cascade` was called.
    [[nodiscard]] bool cascading() const noexcept { return cascade_.enabled(); }
    /// How many times the cascade order was built so far (0 until the first run of a cascade
    /// query): runs over an unchanged world add none.
    [[nodiscard]] std::uint64_t cascade_builds() const noexcept { return cascade_.builds(); }

    /// Calls `fn(terms...)` or `fn(entity, terms...)` for every matching row, archetype by
    /// archetype in creation order, rows in table order (depth order after `cascade`). Rows where a
    /// term's enableable component is disabled are skipped. `T&` and `T*` terms stamp the changed
    /// tick of the rows visited (when `T` is tracked); `Mut<T>` terms only the rows written through
    /// them. Structural changes made by `fn` are deferred until the loop ends. O(matched archetypes
    /// + rows); allocates nothing in a steady state.
    template <class F>
    void each(F&& fn) {
        constexpr bool with_entity = detail::takes_entity_v<F, Terms...>;
        static_assert(with_entity || std::is_invocable_v<F&, detail::term_param_t<Terms>...>,
                      "tessera: Query::each's callback must take the query's terms, optionally "
                      "after a leading tessera::Entity");
        if (!state_.attached()) return;  // an empty query matches nothing
        detail::Storage& s = state_.storage();
        if (sparse_run()) [[unlikely]] {
            detail::DeferScope defer(s, state_.owns_world());
            state_.begin_run();
            run_sparse<detail::SparseVisit::call, with_entity>(fn, nullptr);
            state_.end_run();
            defer.close();
            return;
        }
        const std::span<const std::uint32_t> matched = state_.update();
        const std::span<const detail::CascadeRun> runs =
            cascade_.enabled() ? cascade_.update(s, matched)
                               : std::span<const detail::CascadeRun>{};
        detail::DeferScope defer(s, state_.owns_world());
        state_.begin_run();
        const bool filtered = !state_.filters().empty();
        const std::uint64_t tick = state_.write_tick();
        for (std::size_t k = 0; k < matched.size(); ++k) {
            detail::Archetype& a = s.archetype(matched[k]);
            if (a.size == 0) continue;
            // Tables without enable flags on the terms are stamped whole; the others per row.
            const bool gate = gated(a);
            if (!filtered && !gate) detail::stamp_written<Terms...>(a, tick);
            if (!cascade_.enabled())
                run_range<with_entity>(fn, a, state_.columns(k), 0, a.size, filtered, gate, tick);
        }
        // A cascade query: the runs in depth order.
        detail::CascadeLoop<Query>::template each<with_entity>(*this, fn, runs, matched, filtered,
                                                               tick);
        state_.end_run();
        defer.close();
    }

    /// `each`, with the rows split across oneTBB workers (the calling thread helps; inside a
    /// `Schedule(1)` run, the calling thread alone). The result is identical to `each` for
    /// callbacks that write only their own row's components.
    /// Structural changes from the callback are an error (`invalid_argument`): record them in a
    /// `CommandBuffer` per worker instead. So are deferral calls and every other change to what
    /// the workers share (docs/threading.md lists each `World` member); loops of other queries
    /// may run in the callback (they leave the world's deferral and parallel mode alone). The
    /// callback must be safe to call concurrently.
    /// Allocates nothing in a steady state beyond what oneTBB's scheduler does. A query that
    /// names a sparse component runs its rows on the calling thread (as `each`, with the
    /// structural changes of `par_each` refused).
    template <class F>
    void par_each(F&& fn) {
        constexpr bool with_entity = detail::takes_entity_v<F, Terms...>;
        static_assert(with_entity || std::is_invocable_v<F&, detail::term_param_t<Terms>...>,
                      "tessera: Query::par_each's callback must take the query's terms, "
                      "optionally after a leading tessera::Entity");
        if (!state_.attached()) return;  // an empty query matches nothing
        detail::Storage& s = state_.storage();
        if (sparse_run()) [[unlikely]] {
            detail::DeferScope defer(s, state_.owns_world());
            detail::ParallelScope parallel(s, state_.owns_world());
            state_.begin_run();
            run_sparse<detail::SparseVisit::call, with_entity>(fn, nullptr);
            state_.end_run();
            parallel.close();
            defer.close();
            return;
        }
        const std::span<const std::uint32_t> matched = state_.update();
        // Row ranges of the non-empty tables, by prefix sum, so workers split rows evenly
        // across table boundaries.
        starts_.clear();
        tables_.clear();
        std::size_t total = 0;
        for (std::size_t k = 0; k < matched.size(); ++k) {
            detail::Archetype& a = s.archetype(matched[k]);
            if (a.size == 0) continue;
            tables_.push_back({&a, state_.columns(k), gated(a)});
            starts_.push_back(total);
            total += a.size;
        }
        const std::span<const detail::CascadeRun> runs =
            cascade_.enabled() ? cascade_.update(s, matched)
                               : std::span<const detail::CascadeRun>{};
        detail::DeferScope defer(s, state_.owns_world());
        detail::ParallelScope parallel(s, state_.owns_world());
        state_.begin_run();
        const bool filtered = !state_.filters().empty();
        // Taken here: a worker thread doesn't see a shared-world system's own tick.
        const std::uint64_t tick = state_.write_tick();
        if (!filtered) {
            // Tables without enable flags on the terms are stamped whole; the others per row.
            for (const Table& t : tables_) {
                if (!t.gated) detail::stamp_written<Terms...>(*t.archetype, tick);
            }
        }
        if (cascade_.enabled()) {
            detail::CascadeLoop<Query>::template levels<with_entity>(*this, fn, runs, matched,
                                                                     filtered, tick);
            total = 0;  // done, level by level
        }
        detail::parallel_rows(
            total,
            [&](std::size_t begin, std::size_t end) {
                // The table holding row `begin`: the last start at or before it.
                std::size_t lo = 0, hi = starts_.size();
                while (lo < hi) {
                    const std::size_t mid = (lo + hi) / 2;
                    if (starts_[mid] <= begin)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                std::size_t k = lo - 1;
                while (begin < end) {
                    detail::Archetype& a = *tables_[k].archetype;
                    const auto first = static_cast<std::uint32_t>(begin - starts_[k]);
                    const auto last =
                        static_cast<std::uint32_t>(std::min<std::size_t>(end - starts_[k], a.size));
                    run_range<with_entity>(fn, a, tables_[k].columns, first, last, filtered,
                                           tables_[k].gated, tick);
                    begin = starts_[k] + last;
                    ++k;
                }
            },
            s.serial());
        state_.end_run();
        parallel.close();
        defer.close();
    }

    /// Calls `fn(chunk, spans...)` once per non-empty matching archetype, with one span per
    /// term (`std::span<T>` for `T&`/`T*` terms, empty when an optional one is absent;
    /// `std::span<const Entity>` for `Entity`). Change filters and enable flags are not applied
    /// per row here (use `Chunk::changed_since`, `Chunk::enabled`); `T&` and `T*` terms stamp the
    /// whole chunk. Structural changes made by `fn` are deferred until the loop ends.
    template <class F>
    void each_chunk(F&& fn) {
        static_assert(!sparse_terms,
                      "tessera: chunks have table columns only: a query with a sparse term "
                      "(storage_kind::sparse) iterates with each or par_each");
        if (!state_.attached()) return;  // an empty query matches nothing
        check_no_sparse("Query::each_chunk");
        detail::Storage& s = state_.storage();
        const std::span<const std::uint32_t> matched = state_.update();
        detail::DeferScope defer(s, state_.owns_world());
        state_.begin_run();
        const std::uint64_t tick = state_.write_tick();
        for (std::size_t k = 0; k < matched.size(); ++k) {
            detail::Archetype& a = s.archetype(matched[k]);
            if (a.size == 0) continue;
            detail::stamp_written<Terms...>(a, tick);
            Chunk chunk(s, a, tick);
            call_chunk(fn, chunk, a, state_.columns(k), tick, &s,
                       std::index_sequence_for<Terms...>{});
        }
        state_.end_run();
        defer.close();
    }

    /// A range over the non-empty matching archetypes as `Chunk`s. Hold it only for the loop:
    /// `T&` and `T*` terms stamp each chunk when the loop reaches it, and the world defers
    /// structural changes until the range is destroyed (a change that fails then stays queued for
    /// the next flush instead of throwing from a destructor).
    class ChunkRange {
    public:
        /// An input iterator over the range's chunks; it stamps each chunk as it reaches it.
        class iterator {
        public:
            using value_type = Chunk;                ///< what `*it` refers to
            using difference_type = std::ptrdiff_t;  ///< for std::input_iterator
            /// A singular iterator.
            iterator() = default;
            /// The first non-empty archetype at or after `i` of the matches `m` (made by
            /// `ChunkRange::begin`/`end`).
            iterator(Query* q, std::span<const std::uint32_t> m, std::size_t i)
                : query_(q), matched_(m), i_(i) {
                settle();
            }
            /// The current chunk (valid until the iterator moves).
            Chunk& operator*() noexcept { return chunk_; }
            /// The current chunk's members.
            Chunk* operator->() noexcept { return &chunk_; }
            /// Moves to the next non-empty matching archetype.
            iterator& operator++() {
                ++i_;
                settle();
                return *this;
            }
            /// Moves to the next non-empty matching archetype (returns nothing: input iterator).
            void operator++(int) { ++*this; }
            /// Whether both are at the same position of the same range.
            bool operator==(const iterator& o) const noexcept { return i_ == o.i_; }

        private:
            void settle() {
                if (i_ >= matched_.size()) return;  // at the end (an empty query's only place)
                detail::Storage& s = query_->state_.storage();
                while (i_ < matched_.size() && s.archetype(matched_[i_]).size == 0) ++i_;
                if (i_ < matched_.size()) {
                    detail::Archetype& a = s.archetype(matched_[i_]);
                    detail::stamp_written<Terms...>(a, query_->state_.write_tick());
                    chunk_ = Chunk(s, a, query_->state_.write_tick());
                }
            }
            Query* query_ = nullptr;
            std::span<const std::uint32_t> matched_;
            std::size_t i_ = 0;
            Chunk chunk_;
        };
        /// A range over `q`, which must outlive it. The world defers structural changes while
        /// the range lives; they are applied when it is destroyed.
        explicit ChunkRange(Query& q) : query_(&q), matched_(q.state_.update()) { defer(); }
        /// A range that owns a temporary query (`world.query<...>().chunks()` in a range-for).
        explicit ChunkRange(Query&& q) : owned_(std::move(q)) {
            query_ = &*owned_;
            matched_ = query_->state_.update();
            defer();
        }
        ~ChunkRange() {
            if (deferring_) detail::end_defer_noexcept(query_->state_.storage());
        }
        ChunkRange(const ChunkRange&) = delete;
        ChunkRange& operator=(const ChunkRange&) = delete;
        /// The first chunk.
        iterator begin() { return iterator(query_, matched_, 0); }
        /// Past the last chunk.
        iterator end() { return iterator(query_, matched_, matched_.size()); }

    private:
        void defer() noexcept {
            // On a worker of a par_each the world already defers (and the depth isn't ours).
            deferring_ = query_->state_.attached() && query_->state_.owns_world() &&
                         !query_->state_.storage().parallel();
            if (deferring_) query_->state_.storage().begin_defer();
        }
        std::optional<Query> owned_;
        Query* query_ = nullptr;
        std::span<const std::uint32_t> matched_;
        bool deferring_ = false;
    };

    /// The matching archetypes as chunks, for a range-for. A query that names a sparse
    /// component has no chunks: a sparse term is a compile error, a sparse `with`, `without` or
    /// change filter Error(invalid_argument).
    ChunkRange chunks() & {
        static_assert(!sparse_terms,
                      "tessera: chunks have table columns only: a query with a sparse term "
                      "(storage_kind::sparse) iterates with each or par_each");
        check_no_sparse("Query::chunks");
        return ChunkRange(*this);
    }
    /// The same for a temporary query: the range keeps it alive for the loop.
    ChunkRange chunks() && {
        static_assert(!sparse_terms,
                      "tessera: chunks have table columns only: a query with a sparse term "
                      "(storage_kind::sparse) iterates with each or par_each");
        check_no_sparse("Query::chunks");
        return ChunkRange(std::move(*this));
    }

    /// Number of matching entities (change filters and enable flags are not applied).
    /// O(matched archetypes).
    [[nodiscard]] std::size_t count() {
        if (!state_.attached()) return 0;  // an empty query matches nothing
        if (sparse_run()) [[unlikely]] {   // the entities that have its sparse components
            const auto none = [](auto&&...) {};
            return run_sparse<detail::SparseVisit::count, false>(none, nullptr);
        }
        std::size_t n = 0;
        detail::Storage& s = state_.storage();
        for (const std::uint32_t index : state_.update()) n += s.archetype(index).size;
        return n;
    }

    /// Whether the query belongs to a world: false for a default-constructed (empty) one.
    [[nodiscard]] explicit operator bool() const noexcept { return state_.attached(); }

    /// The untyped spec the query matches with (its terms and filters).
    [[nodiscard]] const QuerySpec& spec() const noexcept { return state_.spec; }
    /// The untyped state, for the library's own modules (schedule.hpp runs queries for systems).
    [[nodiscard]] detail::QueryState& state() noexcept { return state_; }

    /// Calls `fn(World&, Entity)` when an entity starts matching the query's terms (spawn, add,
    /// remove; change filters and enable flags don't count). Entities that match when it is
    /// registered don't fire. The subscription copies the terms: it outlives this object.
    /// @throws Error(invalid_argument) on an empty query.
    template <class F>
    [[nodiscard]] Observer on_enter(F&& fn) {
        check_attached("Query::on_enter");
        check_no_sparse("Query::on_enter");
        return detail::subscribe_query(state_.storage(), Event::enter, state_.spec,
                                       std::forward<F>(fn));
    }
    /// Calls `fn(World&, Entity)` when an entity stops matching (before a despawn, after a
    /// remove or add). @throws Error(invalid_argument) on an empty query.
    template <class F>
    [[nodiscard]] Observer on_exit(F&& fn) {
        check_attached("Query::on_exit");
        check_no_sparse("Query::on_exit");
        return detail::subscribe_query(state_.storage(), Event::exit, state_.spec,
                                       std::forward<F>(fn));
    }

private:
    friend class World;  // despawn_all asks which tables are gated
    template <class>
    friend struct detail::CascadeLoop;
    template <class>
    friend struct detail::CascadeUp;

    void check_attached(const char* op) const {
        if (!state_.attached()) detail::throw_empty_query(op);
    }
    /// Throws invalid_argument naming `op` when the query names a sparse component.
    void check_no_sparse(const char* op) const {
        if (sparse_run()) [[unlikely]]
            detail::throw_sparse_query(op);
    }

    template <class... Ts>
    Query& add_ids(std::vector<ComponentId>& list) {
        (
            [&] {
                // Sparse components are matched per entity by the sparse run, not by `spec`.
                if constexpr (detail::sparse_v<Ts>)
                    state_.add_sparse(component_id<Ts>(), &list == &state_.spec.all);
                else
                    list.push_back(component_id<Ts>());
            }(),
            ...);
        state_.reset();  // the spec changed: match again from the first archetype
        return *this;
    }

    // ---- the sparse run (detail/sparse_query.hpp) ----
    /// Whether a term names a sparse component.
    static constexpr bool sparse_terms = (detail::sparse_term_v<Terms> || ...);
    /// Whether runs take the sparse path: a term, `with`, `without` or filter names a sparse
    /// component.
    [[nodiscard]] bool sparse_run() const noexcept { return sparse_terms || state_.sparse(); }
    template <class>
    friend struct detail::SparseRun;
    /// The sparse run (detail/sparse_query.hpp): visits the rows `each` visits (`call`),
    /// counts (`count`) or collects (`collect`) them.
    template <detail::SparseVisit Mode, bool WithEntity, class F>
    std::size_t run_sparse(F& fn, std::pmr::vector<Entity>* out) {
        return detail::SparseRun<Query>::template run<Mode, WithEntity>(*this, fn, out);
    }

    template <class T>
    Query& filter(bool added, bool since_last_run, std::uint64_t tick) {
        static_assert(detail::track_changes_v<T>,
                      "tessera: a change filter on a type with component_traits<T>::"
                      "track_changes = false");
        static_assert(!std::is_empty_v<T>, "tessera: tags carry no change ticks");
        check_attached(added ? "Query::added" : "Query::changed");
        // A row without T has no T to change: the filter implies with<T>().
        state_.add_filter({component_id<T>(), added, since_last_run, tick, detail::sparse_v<T>});
        return add_ids<T>(state_.spec.all);
    }

    template <class F, std::size_t... I>
    static void call_chunk(F& fn, Chunk& chunk, detail::Archetype& a,
                           const detail::Column* const* cols, std::uint64_t tick,
                           const detail::Storage* s, std::index_sequence<I...>) {
        fn(chunk, span_of<Terms>(*cols[I], a, tick, s)...);
    }

    template <class Term>
    static typename detail::term_traits<Term>::span span_of(const detail::Column& col,
                                                            detail::Archetype& a,
                                                            std::uint64_t tick,
                                                            const detail::Storage* s) noexcept {
        using Tr = detail::term_traits<Term>;
        auto base = detail::term_base<Term>(col, a, tick, s);
        if constexpr (Tr::entity || detail::is_mut_term_v<Term> || detail::resolves_v<Term>) {
            return {base, a.size};
        } else {
            if (base == nullptr) return {};
            return {base, std::is_empty_v<typename Tr::component> ? 1u : a.size};
        }
    }

    // Whether rows of `a` need the per-row path: some term's component or `with` gate has
    // enable flags in `a`, or a term skips rows (a required `Up`).
    bool gated(const detail::Archetype& a) const noexcept {
        if constexpr (skips_rows) return true;
        return flag_gated(a);
    }
    // Whether some term's component or `with` gate has enable flags in `a`.
    bool flag_gated(const detail::Archetype& a) const noexcept {
        if (!a.enableable) return false;
        const std::uint8_t* const flags[] = {detail::term_flags<Terms>(a)..., nullptr};
        for (const std::uint8_t* f : flags)
            if (f != nullptr) return true;
        return state_.gated(a);
    }

    static bool enabled_row(const std::uint8_t* const* flags, std::uint32_t row) noexcept {
        for (std::size_t k = 0; k < sizeof...(Terms); ++k) {
            if (flags[k] != nullptr && flags[k][row] == 0) return false;
        }
        return true;
    }

    static void stamp_row(detail::Archetype& a, [[maybe_unused]] std::uint32_t row,
                          [[maybe_unused]] std::uint64_t tick) noexcept {
        if (!a.tracked) return;
        (
            [&] {
                using Tr = detail::term_traits<Terms>;
                if constexpr (Tr::stamps) {
                    const std::int32_t c = a.column_index(component_id<typename Tr::component>());
                    if (c >= 0) detail::Storage::stamp_changed(a, row, c, tick);
                }
            }(),
            ...);
    }

    template <bool WithEntity, class F, class Bases, std::size_t... I>
    static void call(F& fn, const detail::Archetype& a, const Bases& bases, std::uint32_t i,
                     std::index_sequence<I...>) {
        if constexpr (WithEntity) {
            fn(a.entities[i], detail::term_arg<Terms>(std::get<I>(bases), i)...);
        } else {
            fn(detail::term_arg<Terms>(std::get<I>(bases), i)...);
        }
    }

    // Rows [first, last) of `a`, with every per-row rule of `each` (flags, filters, stamps).
    template <bool WithEntity, class F>
    // `gate`: `gated(a)`, worked out once per table by the caller.
    void run_range(F& fn, detail::Archetype& a, const detail::Column* const* cols,
                   std::uint32_t first, std::uint32_t last, bool filtered, bool gate,
                   std::uint64_t tick) {
        const auto bases =
            bases_of(a, cols, tick, &state_.storage(), std::index_sequence_for<Terms...>{});
        if (!gate && !filtered) {
            run_rows<WithEntity>(fn, a, bases, first, last, std::index_sequence_for<Terms...>{});
            return;
        }
        const std::uint8_t* const flags[] = {detail::term_flags<Terms>(a)..., nullptr};
        for (std::uint32_t i = first; i < last;) {
            // With change filters, a block of rows none of which changed is skipped whole.
            const std::uint32_t block_end = (i / detail::tick_block + 1) * detail::tick_block;
            const std::uint32_t end = filtered && block_end < last ? block_end : last;
            if (filtered && !state_.block_passes(a, i / detail::tick_block)) {
                i = end;
                continue;
            }
            for (; i < end; ++i) {
                if (gate && !(enabled_row(flags, i) && state_.gates_pass(a, i))) continue;
                if (filtered && !state_.passes(a, i)) continue;
                if constexpr (skips_rows) {
                    if (!present(bases, i, std::index_sequence_for<Terms...>{})) continue;
                }
                stamp_row(a, i, tick);
                call<WithEntity>(fn, a, bases, i, std::index_sequence_for<Terms...>{});
            }
        }
    }

    template <bool WithEntity, class F, class Bases, std::size_t... I>
    static void run_rows(F& fn, const detail::Archetype& a, const Bases& bases, std::uint32_t first,
                         std::uint32_t last, std::index_sequence<I...> seq) {
        // Column bases live in locals so the compiler keeps them in registers and vectorises.
        const Entity* const entities = a.entities;
        const std::tuple<typename detail::term_traits<Terms>::pointer...> local = bases;
        for (std::uint32_t i = first; i < last; ++i) {
            if constexpr (WithEntity) {
                fn(entities[i], detail::term_arg<Terms>(std::get<I>(local), i)...);
            } else {
                fn(detail::term_arg<Terms>(std::get<I>(local), i)...);
            }
        }
        (void)seq;
    }

    template <std::size_t... I>
    static std::tuple<typename detail::term_traits<Terms>::pointer...> bases_of(
        const detail::Archetype& a, const detail::Column* const* cols, std::uint64_t tick,
        const detail::Storage* s, std::index_sequence<I...>) noexcept {
        return {detail::term_base<Terms>(*cols[I], a, tick, s)...};
    }

    // Whether every skipping term has row `i` (see detail::term_present).
    template <class Bases, std::size_t... I>
    static bool present(const Bases& bases, std::uint32_t i, std::index_sequence<I...>) noexcept {
        return (detail::term_present<Terms>(std::get<I>(bases), i) && ...);
    }

    static constexpr bool skips_rows = (detail::skips_v<Terms> || ...);
    // Whether a term resolves its rows itself (an Up term): a cascade groups its rows.
    static constexpr bool resolving = (detail::resolves_v<Terms> || ...);

    detail::QueryState state_;
    detail::CascadeOrder cascade_;  ///< the depth order of a cascade query
    // par_each's scratch, kept between runs so a steady state allocates nothing.
    struct Table {
        detail::Archetype* archetype;
        const detail::Column* const* columns;
        bool gated;  ///< `gated(*archetype)`
    };
    std::vector<Table> tables_;
    std::vector<std::size_t> starts_;
    std::vector<std::int32_t> slots_;  ///< the sparse run's matched position per archetype
};

namespace detail {
/// The query terms a callback's parameters name: `T&`, `const T&`, `T*`, `const T*`; a leading
/// `Entity` is the entity, not a term.
template <class Args>
struct terms_of;
template <class... A>
struct terms_of<std::tuple<A...>> {
    using type = Query<A...>;
};
template <class... A>
struct terms_of<std::tuple<Entity, A...>> {
    using type = Query<A...>;
};
}  // namespace detail

template <class... Terms>
Query<Terms...> World::query() {
    detail::check_not_parallel(*storage_, "World::query");  // it registers the components
    return Query<Terms...>(*storage_);
}

template <class... Terms>
std::size_t World::despawn_all(Query<Terms...>& query) {
    detail::check_not_parallel(*storage_, "World::despawn_all");
    if (!query) return 0;
    detail::QueryState& state = query.state();
    if (&state.storage() != storage_) [[unlikely]]
        detail::throw_foreign_query("World::despawn_all");
    if (query.sparse_run()) [[unlikely]] {
        // The rows a sparse run visits, read without a run (no stamps or tick).
        std::pmr::vector<Entity> doomed(storage_->resource());
        state.begin_run();
        const auto none = [](auto&&...) {};
        query.template run_sparse<detail::SparseVisit::collect, false>(none, &doomed);
        return detail::despawn_run(*this, state, doomed);
    }
    const std::span<const std::uint32_t> matched = state.update();
    bool whole = state.filters().empty();
    for (const std::uint32_t index : matched)
        whole = whole && !query.gated(storage_->archetype(index));
    if (whole) {
        std::pmr::vector<std::uint32_t> tables(storage_->resource());
        for (const std::uint32_t index : matched) {
            if (storage_->archetype(index).size != 0) tables.push_back(index);
        }
        return despawn_tables(tables);
    }
    // The rows `each` visits, read without a run (no stamps or tick): a failure changes nothing.
    std::pmr::vector<Entity> doomed(storage_->resource());
    state.begin_run();
    for (std::size_t k = 0; k < matched.size(); ++k) {
        const detail::Archetype& a = storage_->archetype(matched[k]);
        const std::uint8_t* const flags[] = {detail::term_flags<Terms>(a)..., nullptr};
        const bool gate = query.gated(a);
        [[maybe_unused]] const auto bases = Query<Terms...>::bases_of(
            a, state.columns(k), 0, storage_, std::index_sequence_for<Terms...>{});
        for (std::uint32_t i = 0; i < a.size; ++i) {
            if (gate && !(Query<Terms...>::enabled_row(flags, i) && state.gates_pass(a, i)))
                continue;
            if constexpr (Query<Terms...>::skips_rows) {
                if (!Query<Terms...>::present(bases, i, std::index_sequence_for<Terms...>{}))
                    continue;
            }
            if (state.filters().empty() || state.passes(a, i)) doomed.push_back(a.entities[i]);
        }
    }
    return detail::despawn_run(*this, state, doomed);
}

template <class F>
void World::each(F&& fn) {
    using Q = typename detail::terms_of<detail::callable_args_t<F>>::type;
    detail::check_not_parallel(*storage_, "World::each");  // it makes a query
    Q q(*storage_);
    q.each(fn);
}

}  // namespace tessera

/// @file detail/sparse_query.hpp
/// Query terms over sparse components (detail/sparse_set.hpp): what a `T&`, `const T&`, `T*`,
/// `const T*` or `Mut<T>` term passes when `T` lives in a sparse set. Used by query.hpp's sparse
/// run (`Query::run_sparse`). Internal, not API.
///
/// A query that names a sparse component (a term, `with`, `without`, a change filter) matches
/// tables by its table components only (`QuerySpec`), and each row of those tables by its sparse
/// ones. A run is driven by the smaller side: when the smallest set of a required sparse
/// component holds no more entities than the matched tables hold rows, the run walks that set's
/// dense rows (in set order) and looks each entity's table up; otherwise it walks the tables (in
/// table order) and probes the sets. Per visited row it costs a set lookup per sparse
/// component, never a hash or a virtual call, and allocates nothing in a steady state.
#pragma once

#include <tessera/detail/storage.hpp>
#include <tessera/detail/terms.hpp>
#include <tessera/mut.hpp>

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera {
template <class... Terms>
class Query;
}  // namespace tessera

namespace tessera::detail {

/// Whether term `Term` reads a sparse component.
template <class Term>
constexpr bool sparse_term_v = [] {
    if constexpr (term_traits<Term>::entity || resolves_v<Term>)
        return false;
    else
        return sparse_v<typename term_traits<Term>::component>;
}();

/// The set a term reads (null for a table term, or a sparse one the world has no set of).
template <class Term>
[[nodiscard]] SparseSet* term_set(const Storage& s) noexcept {
    if constexpr (sparse_term_v<Term>)
        return s.sparse(component_id<typename term_traits<Term>::component>());
    else
        return nullptr;
}

/// The argument a sparse term passes for the entity at dense row `row` of `set` (`no_row`: an
/// optional term's absent value). `tick` stamps `Mut<T>` writes.
template <class Term>
decltype(auto) sparse_term_arg(SparseSet* set, std::uint32_t row,
                               [[maybe_unused]] std::uint64_t tick) noexcept {
    using Tr = term_traits<Term>;
    using C = typename Tr::component;
    if constexpr (is_mut_term_v<Term>) {
        std::uint64_t* changed = set->changed() == nullptr ? nullptr : set->changed() + row;
        return Term(MutBase<C>{reinterpret_cast<C*>(set->value(row)), changed, set->bound_sink(),
                               tick, set->bound_sink()},
                    0);
    } else if constexpr (std::is_empty_v<C>) {
        static C tag{};
        if constexpr (Tr::required)
            return static_cast<typename Tr::pointer>(&tag)[0];
        else
            return row == SparseSet::no_row ? nullptr : static_cast<typename Tr::pointer>(&tag);
    } else if constexpr (Tr::required) {
        return reinterpret_cast<typename Tr::pointer>(set->value(row))[0];
    } else {
        return row == SparseSet::no_row ? nullptr
                                        : reinterpret_cast<typename Tr::pointer>(set->value(row));
    }
}

/// Whether a sparse term's component is disabled at dense row `row`.
template <class Term>
[[nodiscard]] bool sparse_disabled(const SparseSet* set, std::uint32_t row) noexcept {
    if constexpr (sparse_term_v<Term> && enableable_v<typename term_traits<Term>::component>)
        return row != SparseSet::no_row && set->enabled()[row] == 0;
    else
        return false;
}

/// What a sparse run does with the rows it visits: call the callback (`each`), count them
/// (`count`: no filters or flags), collect their entities (`despawn_all`).
enum class SparseVisit { call, count, collect };

template <class Q>
struct SparseRun;

/// The sparse run of a `Query<Terms...>` (its friend: it reads the query's state and helpers).
template <class... Terms>
struct SparseRun<Query<Terms...>> {
    using Q = Query<Terms...>;
    using Seq = std::index_sequence_for<Terms...>;
    static constexpr std::uint32_t absent = SparseSet::no_row;

    /// Whether the query is one required sparse term (not enableable), perhaps with `Entity`.
    static constexpr bool set_walk = ((term_traits<Terms>::entity ? 0 : 1) + ... + 0) == 1 &&
                                     ((sparse_term_v<Terms> && term_traits<Terms>::required &&
                                       !enableable_v<typename term_traits<Terms>::component>) ||
                                      ...);

    /// Visits the matching rows as `each` does (`SparseVisit::call`; the caller begins and
    /// ends the run), counts the entities that have the sparse components (`count`: no
    /// filters, no flags), or appends the rows `each` would visit to `out` (`collect`).
    /// Driven by the smaller side: the smallest required set, when it holds no more entities
    /// than the matched tables hold rows, else the tables. Returns the rows visited.
    template <SparseVisit Mode, bool WithEntity, class F>
    static std::size_t run(Q& q, F& fn, std::pmr::vector<Entity>* out) {
        auto& state = q.state_;  // QueryState (dependent: it is complete only later)
        Storage& s = state.storage();
        const std::span<const std::uint32_t> matched = state.update();
        const std::uint64_t tick = state.write_tick();
        SparseSet* const sets[] = {term_set<Terms>(s)..., nullptr};
        const SparseSet* driver = nullptr;
        for (const ComponentId id : state.sparse_all()) {
            const SparseSet* set = s.sparse(id);
            if (set == nullptr) return 0;  // the world never had it: no entity has it
            if (driver == nullptr || set->size() < driver->size()) driver = set;
        }
        if constexpr (set_walk) {
            // One sparse term and nothing else to check, every table matched: its dense arrays.
            if (state.sparse_all().size() == 1 && state.sparse_none().empty() &&
                state.filters().empty() && state.gates().empty() &&
                matched.size() + 2 == s.archetype_end()) {
                return walk_set<Mode, WithEntity>(fn, sets, tick, out, Seq{});
            }
        }
        std::size_t table_rows = 0;
        for (const std::uint32_t index : matched) table_rows += s.archetype(index).size;
        std::size_t visited = 0;
        if (driver != nullptr && driver->size() <= table_rows) {
            // The set's dense rows, each entity's table looked up (its position in `matched`).
            std::vector<std::int32_t>& slots = q.slots_;
            slots.assign(s.archetype_end(), -1);
            for (std::size_t k = 0; k < matched.size(); ++k)
                slots[matched[k]] = static_cast<std::int32_t>(k);
            const EntityRecord* records = s.records();
            for (std::uint32_t d = 0; d < driver->size(); ++d) {
                const Entity e = driver->entities()[d];
                const EntityRecord& r = records[e.index];  // sets hold live entities
                const std::int32_t k = slots[r.archetype];
                if (k < 0) continue;
                if (visit_row<Mode, WithEntity>(q, fn, sets, driver, d, e, s.archetype(r.archetype),
                                                r.row, state.columns(static_cast<std::size_t>(k)),
                                                tick, out))
                    ++visited;
            }
        } else {
            for (std::size_t k = 0; k < matched.size(); ++k) {
                Archetype& a = s.archetype(matched[k]);
                for (std::uint32_t row = 0; row < a.size; ++row) {
                    if (visit_row<Mode, WithEntity>(q, fn, sets, driver, absent, a.entities[row], a,
                                                    row, state.columns(k), tick, out))
                        ++visited;
                }
            }
        }
        return visited;
    }

private:
    /// One row of a sparse run (see `run`); false when it does not match.
    template <SparseVisit Mode, bool WithEntity, class F>
    static bool visit_row(Q& q, F& fn, SparseSet* const* sets, const SparseSet* driver,
                          std::uint32_t driver_row, Entity e, Archetype& a, std::uint32_t row,
                          const Column* const* cols, std::uint64_t tick,
                          std::pmr::vector<Entity>* out) {
        auto& state = q.state_;  // QueryState (dependent: it is complete only later)
        Storage& s = state.storage();
        std::uint32_t rows[sizeof...(Terms) + 1] = {};
        const bool terms_found = [&]<std::size_t... I>(std::index_sequence<I...>) {
            return (
                (rows[I] = sets[I] == nullptr                          ? absent
                           : sets[I] == driver && driver_row != absent ? driver_row
                                                                       : sets[I]->find(e),
                 !(sparse_term_v<Terms> && term_traits<Terms>::required && rows[I] == absent)) &&
                ...);
        }
        (Seq{});
        if (!terms_found) return false;
        for (const ComponentId id : state.sparse_all()) {
            const SparseSet* set = s.sparse(id);
            if (set == driver && driver_row != absent) continue;
            if (!set->contains(e)) return false;
        }
        for (const ComponentId id : state.sparse_none()) {
            const SparseSet* set = s.sparse(id);
            if (set != nullptr && set->contains(e)) return false;
        }
        // The table terms' bases (an `Up` term reads the storage).
        [[maybe_unused]] const auto bases = [&]<std::size_t... I>(std::index_sequence<I...>) {
            return std::tuple<typename term_traits<Terms>::pointer...>{
                table_base<Terms>(*cols[I], a, tick, &s)...};
        }
        (Seq{});
        if constexpr (Q::skips_rows) {
            const bool present = [&]<std::size_t... I>(std::index_sequence<I...>) {
                return (term_present<Terms>(std::get<I>(bases), row) && ...);
            }
            (Seq{});
            if (!present) return false;
        }
        if constexpr (Mode != SparseVisit::count) {
            if (a.enableable) {
                const std::uint8_t* const flags[] = {term_flags<Terms>(a)..., nullptr};
                if (!(Q::enabled_row(flags, row) && state.gates_pass(a, row))) return false;
            }
            const bool off = [&]<std::size_t... I>(std::index_sequence<I...>) {
                return (sparse_disabled<Terms>(sets[I], rows[I]) || ...);
            }
            (Seq{});
            if (off) return false;
            for (const ComponentId id : state.gates()) {
                const SparseSet* set = s.sparse(id);
                if (set == nullptr || set->enabled() == nullptr) continue;
                const std::uint32_t r = set->find(e);
                if (r != absent && set->enabled()[r] == 0) return false;
            }
            if (!state.filters().empty()) {
                if (!state.passes(a, row)) return false;  // the table components' filters
                for (const auto& f : state.filters()) {
                    if (!f.sparse) continue;
                    const SparseSet* set = s.sparse(f.id);
                    const std::uint32_t r = set->find(e);
                    if (r == absent || set->changed() == nullptr) return false;
                    const std::uint64_t t = f.added ? set->added()[r] : set->changed_at(r);
                    if (t <= state.since(f)) return false;
                }
            }
        }
        if constexpr (Mode == SparseVisit::collect) out->push_back(e);
        if constexpr (Mode == SparseVisit::call) {
            Q::stamp_row(a, row, tick);  // the table terms
            [&]<std::size_t... I>(std::index_sequence<I...>) {
                (
                    [&] {
                        if constexpr (sparse_term_v<Terms> && term_traits<Terms>::stamps) {
                            if (rows[I] != absent) sets[I]->stamp_changed(rows[I], tick);
                        }
                    }(),
                    ...);
                if constexpr (WithEntity) {
                    fn(e, arg<Terms>(sets[I], rows[I], std::get<I>(bases), row, tick)...);
                } else {
                    fn(arg<Terms>(sets[I], rows[I], std::get<I>(bases), row, tick)...);
                }
            }
            (Seq{});
        }
        return true;
    }

    /// `run` of a `set_walk` query whose tables all match: the set's dense rows in order, the
    /// values as a plain array (a written term's ticks stamped in one fill).
    template <SparseVisit Mode, bool WithEntity, class F, std::size_t... I>
    static std::size_t walk_set(F& fn, SparseSet* const* sets, std::uint64_t tick,
                                std::pmr::vector<Entity>* out, std::index_sequence<I...>) {
        SparseSet* set = nullptr;
        ((set = sparse_term_v<Terms> ? sets[I] : set), ...);
        const std::uint32_t n = set->size();
        const Entity* const entities = set->entities();
        if constexpr (Mode == SparseVisit::collect) out->insert(out->end(), entities, entities + n);
        if constexpr (Mode == SparseVisit::call) {
            constexpr bool stamps = ((sparse_term_v<Terms> && term_traits<Terms>::stamps) || ...);
            if constexpr (stamps) set->stamp_all(tick);  // O(1): the set's floor
            std::byte* const data = set->data();
            for (std::uint32_t d = 0; d < n; ++d) {
                if constexpr (WithEntity)
                    fn(entities[d], walk_arg<Terms>(set, data, entities, d, tick)...);
                else
                    fn(walk_arg<Terms>(set, data, entities, d, tick)...);
            }
        }
        return n;
    }
    template <class Term>
    static decltype(auto) walk_arg(SparseSet* set, std::byte* data, const Entity* entities,
                                   std::uint32_t d, std::uint64_t tick) noexcept {
        using Tr = term_traits<Term>;
        if constexpr (Tr::entity) {
            return entities[d];
        } else if constexpr (is_mut_term_v<Term> || std::is_empty_v<typename Tr::component>) {
            return sparse_term_arg<Term>(set, d, tick);
        } else {
            return reinterpret_cast<typename Tr::pointer>(data)[d];
        }
    }

    /// A table term's base in `a` (a sparse term's: unused, null).
    template <class Term>
    static typename term_traits<Term>::pointer table_base(const Column& col, const Archetype& a,
                                                          std::uint64_t tick,
                                                          const Storage* s) noexcept {
        if constexpr (sparse_term_v<Term>)
            return {};
        else
            return term_base<Term>(col, a, tick, s);
    }
    template <class Term>
    static decltype(auto) arg(SparseSet* set, std::uint32_t set_row,
                              const typename term_traits<Term>::pointer& base, std::uint32_t row,
                              std::uint64_t tick) noexcept {
        if constexpr (sparse_term_v<Term>) {
            return sparse_term_arg<Term>(set, set_row, tick);
        } else {
            return term_arg<Term>(base, row);
        }
    }
};

}  // namespace tessera::detail

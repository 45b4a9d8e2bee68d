/// @file traverse.hpp
/// Hierarchy traversal terms: `ts::Up<const T&>` and `ts::Up<const T*>` read `T` from the
/// nearest `ChildOf` ancestor (relation.hpp) that has it. Opt-in: include this header where a
/// query names `Up` (tessera.hpp does not; this one includes query.hpp and relation.hpp). The
/// depth order of `Query::cascade` is in query.hpp.
///
/// ```cpp
/// auto q = world.query<const Local&, ts::Up<const Armor*>>();
/// q.each([](const Local& l, const Armor* inherited) { ... });  // null: no ancestor has Armor
/// ```
#pragma once

#include <tessera/detail/cascade.hpp>
#include <tessera/detail/entity_list.hpp>
#include <tessera/detail/storage.hpp>
#include <tessera/detail/terms.hpp>
#include <tessera/entity.hpp>
#include <tessera/query.hpp>
#include <tessera/relation.hpp>

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tessera {

/// A query term that reads `T` from the nearest `ChildOf` ancestor that has it: the first
/// parent (`World::parent`), else its first parent, and so on up to a root. The entity's own
/// `T` does not count, and the entity itself needn't have `T` to match.
///
/// - `Up<const T&>`: the callback takes `const T&`; rows with no such ancestor are skipped.
/// - `Up<const T*>`: the callback takes `const T*`, null when there is none.
///
/// Read-only (a system declaring one reads `T`). In `each_chunk` the term's span is an
/// `UpColumn<T>`: a pointer per row, null where no ancestor has `T` (for both forms).
/// Each row costs one load of its first parent; consecutive rows with the same parent share
/// one lookup, and a parent without `T` costs a walk up (a loop, any depth). In a cascade
/// query the rows are grouped by first parent when the order is built, and a group's answer
/// is worked out once (`detail::CascadeUp`), where no enable flag or change filter applies
/// to its table. The pointer
/// stays valid until the next structural change, as a reference from any term: in a cascade
/// query (`Query::cascade`) it reads what the ancestor's row wrote earlier in the same run.
template <class Term>
struct Up {
    static_assert(std::is_reference_v<Term> || std::is_pointer_v<Term>,
                  "tessera: an Up term is Up<const T&> or Up<const T*>");
};

/// The span an `Up` term gives in `each_chunk`: the ancestor's `T` for each row of the chunk,
/// or null. Resolved when read (consecutive rows with the same parent share one lookup).
template <class T>
class UpColumn;

namespace detail {

/// Where the nearest ancestor of `parent` (included) with component `id` keeps it, walking
/// first parents (`targets`: the id of `Targets<ChildOf>`); null when none has it. A tag's
/// address is that of a shared stand-in byte.
inline const std::byte* up_find(const Storage& s, Entity parent, ComponentId id,
                                ComponentId targets) noexcept {
    static constexpr std::byte tag{};
    for (;;) {
        const EntityRecord* r = s.try_record(parent);
        if (r == nullptr) return nullptr;  // a parent is alive while related: never taken
        const Archetype& a = s.archetype(r->archetype);
        const std::int32_t c = a.column_index(id);
        if (c >= 0) {
            const Column& col = a.columns[static_cast<std::uint32_t>(c)];
            return col.data + std::size_t{r->row} * col.size;
        }
        if (c == tag_column) return &tag;
        const std::int32_t t = a.column_index(targets);
        if (t < 0) return nullptr;  // a root
        const Column& tc = a.columns[static_cast<std::uint32_t>(t)];
        // Targets<ChildOf> adds no member to EntityList: the two are pointer-interconvertible.
        parent =
            reinterpret_cast<const EntityList*>(tc.data + std::size_t{r->row} * tc.size)->front();
    }
}

/// What an `Up` term keeps per table: the table's `Targets<ChildOf>` column (null when its
/// rows have no parent), the last parent looked up with its answer, and the last table where a
/// parent had `T` itself with `T`'s column there (so the next parent in that table costs one
/// record load).
template <class T>
struct UpBase {
    const Targets<ChildOf>* targets = nullptr;
    const Storage* storage = nullptr;
    ComponentId id{};
    ComponentId targets_id{};
    mutable Entity parent{};
    mutable const T* found = nullptr;
    mutable std::uint32_t table = no_index;
    mutable const std::byte* column = nullptr;

    /// The ancestor's `T` for row `i`, or null.
    const T* at(std::size_t i) const noexcept {
        if (targets == nullptr) return nullptr;
        return of(targets[i].front());
    }
    /// `at`, out of line: the slow path of a cascade group (`up_traits::resolve`), kept out of
    /// its row loop.
    [[gnu::noinline]] const T* at_outlined(std::size_t i) const noexcept { return at(i); }
    /// The `T` of `p` or its nearest ancestor with one, or null; `p`: a row's first parent,
    /// alive (`targets` is not null).
    const T* of(Entity p) const noexcept {
        if (p == parent) return found;
        parent = p;
        if constexpr (std::is_empty_v<T>) {
            static const T tag{};
            found = up_find(*storage, p, id, targets_id) == nullptr ? nullptr : &tag;
        } else {
            // A parent is alive while related: its record is current. The entity index may
            // grow during the run (spawns deferred by the callback): read it each time.
            const EntityRecord& r = storage->records()[p.index];
            if (r.archetype == table) {
                found = reinterpret_cast<const T*>(column + std::size_t{r.row} * sizeof(T));
                return found;
            }
            const Archetype& a = storage->archetype(r.archetype);
            const std::int32_t c = a.column_index(id);
            if (c >= 0) {
                table = r.archetype;
                column = a.columns[static_cast<std::uint32_t>(c)].data;
                found = reinterpret_cast<const T*>(column + std::size_t{r.row} * sizeof(T));
            } else {
                found = reinterpret_cast<const T*>(up_find(*storage, p, id, targets_id));
            }
        }
        return found;
    }
};

template <class T, bool Required>
struct up_traits {
    using component = T;                     ///< what the walk reads (a system reads it)
    static constexpr bool required = false;  ///< the entity itself needn't have T
    static constexpr bool writes = false;
    static constexpr bool stamps = false;
    static constexpr bool entity = false;
    static constexpr bool resolves = true;
    static constexpr bool skips = Required;  ///< rows without such an ancestor are skipped
    using param = std::conditional_t<Required, const T&, const T*>;
    using pointer = UpBase<T>;
    using span = UpColumn<T>;

    static ComponentId column_id() noexcept { return component_id<Targets<ChildOf>>(); }
    static pointer base(const Column& targets, const Archetype&, const Storage& s) noexcept {
        return {reinterpret_cast<const Targets<ChildOf>*>(targets.data), &s, component_id<T>(),
                component_id<Targets<ChildOf>>()};
    }
    static bool present(const pointer& b, std::size_t i) noexcept { return b.at(i) != nullptr; }
    /// The answer for the rows of cascade group `g` (their first parent's), `i` one of them.
    static const T* resolve(const pointer& b, const CascadeGroup& g, std::size_t i) noexcept {
        if constexpr (!std::is_empty_v<T>) {
            // The parent in the table of the last parent that had T: no record to load. Kept
            // on the fall-through path: taken branches bound the row loop, not instructions.
            if (g.table == b.table) [[likely]]
                return reinterpret_cast<const T*>(b.column + std::size_t{g.row} * sizeof(T));
        }
        return b.at_outlined(i);
    }
    static param arg(const pointer& b, std::size_t i) noexcept {
        if constexpr (Required)
            return *b.at(i);  // present(b, i) was true
        else
            return b.at(i);
    }
};

template <class T>
inline constexpr bool up_readable_v = std::is_const_v<T> && !is_mut_term_v<std::remove_cv_t<T>> &&
                                      !std::is_same_v<std::remove_cv_t<T>, Entity>;

template <class T>
struct term_traits<Up<T&>> : up_traits<std::remove_const_t<T>, true> {
    static_assert(std::is_const_v<T>,
                  "tessera: an Up term is read-only: write Up<const T&> (or Up<const T*>); a "
                  "query can't write an ancestor's component");
    static_assert(up_readable_v<T> || !std::is_const_v<T>,
                  "tessera: Up<const T&> needs a component type T (not Mut<T> or Entity)");
};
template <class T>
struct term_traits<Up<T*>> : up_traits<std::remove_const_t<T>, false> {
    static_assert(std::is_const_v<T>,
                  "tessera: an Up term is read-only: write Up<const T*> (or Up<const T&>); a "
                  "query can't write an ancestor's component");
    static_assert(up_readable_v<T> || !std::is_const_v<T>,
                  "tessera: Up<const T*> needs a component type T (not Mut<T> or Entity)");
};

/// What a term passes for every row of a cascade group (`CascadeGroup`): a resolving term its
/// answer for the group's parent (`fix`, given the group and one of its rows), the others
/// their column base.
template <class Term>
struct GroupTerm {
    using base = typename term_traits<Term>::pointer;
    static base fix(const base& b, const CascadeGroup&, std::size_t) noexcept { return b; }
    static bool present(const base&) noexcept { return true; }
    static decltype(auto) arg(const base& b, std::size_t i) noexcept {
        return term_arg<Term>(b, i);
    }
};
template <class Term>
requires resolves_v<Term>
struct GroupTerm<Term> {
    using Tr = term_traits<Term>;
    using base = const typename Tr::component*;
    static base fix(const typename Tr::pointer& b, const CascadeGroup& g, std::size_t i) noexcept {
        return Tr::resolve(b, g, i);
    }
    static bool present(base b) noexcept { return !Tr::skips || b != nullptr; }
    static typename Tr::param arg(base b, std::size_t) noexcept {
        if constexpr (Tr::skips)
            return *b;
        else
            return b;
    }
};

/// The cascade loop of a query with Up terms, where no row is filtered (no change filter,
/// no enable flags): a run's rows group by group, the Up terms resolved once per group, so a
/// row costs what it costs in a query without them. The `&` form skips a group whose answer
/// is null, and stamps the rows it visits (its tables are not stamped whole).
template <class... Terms>
struct CascadeUp<Query<Terms...>> {
    using Q = Query<Terms...>;

    /// Rows [first, last) of `a` (one run's, or part of it), `g` the group holding `first`.
    template <bool WithEntity, class F>
    static void run(Q& q, F& fn, Archetype& a, const Column* const* cols, std::uint32_t first,
                    std::uint32_t last, const CascadeGroup* g, std::uint64_t tick) {
        rows<WithEntity>(q, fn, a, cols, first, last, g, tick, std::index_sequence_for<Terms...>{});
    }

private:
    template <bool WithEntity, class F, std::size_t... I>
    static void rows(Q& q, F& fn, Archetype& a, const Column* const* cols, std::uint32_t first,
                     std::uint32_t last, const CascadeGroup* g, std::uint64_t tick,
                     std::index_sequence<I...> seq) {
        if (first >= last) return;
        const Entity* const entities = a.entities;
        const std::tuple<typename term_traits<Terms>::pointer...> bases =
            Q::bases_of(a, cols, tick, &q.state_.storage(), seq);
        std::tuple<typename GroupTerm<Terms>::base...> fixed{
            GroupTerm<Terms>::fix(std::get<I>(bases), *g, first)...};
        // One loop over the rows (a loop per group would be vectorised with a prologue that
        // costs more than a few rows). The last group may end after `last`: never reached.
        std::size_t end = g->end;
        for (std::size_t i = first; i < last; ++i) {
            if (i == end) {
                ++g;
                fixed = {GroupTerm<Terms>::fix(std::get<I>(bases), *g, i)...};
                end = g->end;
            }
            if constexpr (Q::skips_rows) {
                if (!(GroupTerm<Terms>::present(std::get<I>(fixed)) && ...)) {
                    i = end - 1;  // the group has no answer: skip it
                    continue;
                }
                Q::stamp_row(a, i, tick);
            }
            if constexpr (WithEntity)
                fn(entities[i], GroupTerm<Terms>::arg(std::get<I>(fixed), i)...);
            else
                fn(GroupTerm<Terms>::arg(std::get<I>(fixed), i)...);
        }
    }
};

}  // namespace detail

template <class T>
class UpColumn {
public:
    /// An empty column.
    UpColumn() = default;
    /// The rows [0, n) of the table `base` was made for (made by `Query::each_chunk`).
    UpColumn(detail::UpBase<T> base, std::size_t n) noexcept : base_(base), size_(n) {}
    /// Number of rows.
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    /// Whether the chunk has no rows.
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    /// The nearest ancestor's `T` of row `i` (`i < size()`), or null.
    const T* operator[](std::size_t i) const noexcept { return base_.at(i); }

private:
    detail::UpBase<T> base_;
    std::size_t size_ = 0;
};

}  // namespace tessera

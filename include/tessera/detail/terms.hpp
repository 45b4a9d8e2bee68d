/// @file detail/terms.hpp
/// Query terms: what each term type (`T&`, `const T&`, `T*`, `const T*`, `Mut<T>`, `Entity`)
/// reads from a table, passes per row and stamps. Used by query.hpp and system.hpp. Internal.
#pragma once

#include <tessera/component.hpp>
#include <tessera/detail/storage.hpp>
#include <tessera/entity.hpp>
#include <tessera/mut.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

namespace tessera::detail {

/// What a query term is: `T&` (write), `const T&` (read), `T*`/`const T*` (optional), `Mut<T>`
/// (write, row by row), `Entity`. `stamps`: a visit stamps the whole table's rows as changed.
template <class Term>
struct term_traits {
    static_assert(std::is_reference_v<Term> || std::is_pointer_v<Term>,
                  "tessera: a query term is T&, const T&, T*, const T*, tessera::Mut<T> or "
                  "tessera::Entity");
};
template <class Term>
inline constexpr bool is_mut_term_v = false;
template <class T>
inline constexpr bool is_mut_term_v<Mut<T>> = true;

/// `T&` (required) and `T*` (optional): the row's value, written unless `T` is const.
template <class T, bool Required>
struct value_term {
    static_assert(!is_mut_term_v<std::remove_const_t<T>>,
                  "tessera: take a Mut<T> term by value (ts::Mut<T>, not a reference or a "
                  "pointer; there is no optional Mut<T>)");
    using component = std::remove_const_t<T>;
    static constexpr bool required = Required;
    static constexpr bool writes = !std::is_const_v<T>;
    static constexpr bool stamps = writes && !std::is_empty_v<component>;
    static constexpr bool entity = false;
    using pointer = T*;
    using span = std::span<T>;
};
template <class T>
struct term_traits<T&> : value_term<T, true> {};
template <class T>
struct term_traits<T*> : value_term<T, false> {};
template <class T>
struct term_traits<Mut<T>> {
    using component = T;
    static constexpr bool required = true;
    static constexpr bool writes = true;
    static constexpr bool stamps = false;  // Mut<T>::write stamps its own row
    static constexpr bool entity = false;
    using pointer = MutBase<T>;
    using span = MutColumn<T>;
};
template <>
struct term_traits<Entity> {
    using component = void;
    static constexpr bool required = false;
    static constexpr bool writes = false;
    static constexpr bool stamps = false;
    static constexpr bool entity = true;
    using pointer = const Entity*;
    using span = std::span<const Entity>;
};

/// Whether `Term` resolves its rows itself (traverse.hpp's `Up`): its traits then give `param`
/// (what the callback takes), `column_id()` (the column it reads in the row's own table),
/// `base(col, a, storage)`, `arg(base, i)`, `present(base, i)` and `skips` (a row for which
/// `present` is false is not visited), and `pointer` and `span` as the others do.
template <class Term>
inline constexpr bool resolves_v = requires {
    requires term_traits<Term>::resolves;
};
/// Whether `Term` skips rows (a required resolving term).
template <class Term>
inline constexpr bool skips_v = [] {
    if constexpr (resolves_v<Term>)
        return term_traits<Term>::skips;
    else
        return false;
}();
/// What a callback takes for `Term`: the term itself, or a resolving term's `param`.
template <class Term>
struct term_param_of {
    using type = Term;
};
template <class Term>
requires resolves_v<Term>
struct term_param_of<Term> {
    using type = typename term_traits<Term>::param;
};
template <class Term>
using term_param_t = typename term_param_of<Term>::type;

/// The component whose column a term reads (`QueryState::set_terms`): an id no component has
/// for `Entity` and tags (they read none).
template <class Term>
ComponentId term_column_id() noexcept {
    using Tr = term_traits<Term>;
    if constexpr (resolves_v<Term>) {
        return Tr::column_id();
    } else if constexpr (Tr::entity) {
        return ComponentId{};
    } else if constexpr (std::is_empty_v<typename Tr::component>) {
        return ComponentId{};
    } else {
        return component_id<typename Tr::component>();
    }
}

/// What a term reads from `a`, whose column of the term's component is `col` (`no_column`
/// when absent): the column's base pointer (null for an absent optional term), or for
/// `Mut<T>` the column and its ticks, with `tick` for the writes (a resolving term: its base,
/// given `storage`).
template <class Term>
typename term_traits<Term>::pointer term_base([[maybe_unused]] const Column& col,
                                              const Archetype& a,
                                              [[maybe_unused]] std::uint64_t tick,
                                              [[maybe_unused]] const Storage* storage) noexcept {
    using Tr = term_traits<Term>;
    if constexpr (resolves_v<Term>) {
        return Tr::base(col, a, *storage);
    } else if constexpr (Tr::entity) {
        return a.entities;
    } else if constexpr (std::is_empty_v<typename Tr::component>) {
        // A tag has no values: every row refers to one shared stand-in value.
        static typename Tr::component tag{};
        return a.contains(component_id<typename Tr::component>()) ? &tag : nullptr;
    } else if constexpr (is_mut_term_v<Term>) {
        typename Tr::pointer base{reinterpret_cast<typename Tr::component*>(col.data), col.changed,
                                  col.changed_max, tick, &col.changed_last};
        base.log = col.log;
        return base;
    } else {
        return reinterpret_cast<typename Tr::pointer>(col.data);
    }
}

/// The argument a term passes for row `i`.
template <class Term>
decltype(auto) term_arg(const typename term_traits<Term>::pointer& base, std::size_t i) noexcept {
    using Tr = term_traits<Term>;
    if constexpr (resolves_v<Term>) {
        return Tr::arg(base, i);
    } else if constexpr (Tr::entity) {
        return base[i];
    } else if constexpr (is_mut_term_v<Term>) {
        return Term(base, i);
    } else if constexpr (std::is_empty_v<typename Tr::component>) {
        if constexpr (Tr::required)
            return *base;
        else
            return base;
    } else if constexpr (Tr::required) {
        return base[i];
    } else {
        return base == nullptr ? base : base + i;
    }
}

/// Whether row `i` is visited as far as `Term` goes (false only for a skipping term's row).
template <class Term>
bool term_present([[maybe_unused]] const typename term_traits<Term>::pointer& base,
                  [[maybe_unused]] std::size_t i) noexcept {
    if constexpr (skips_v<Term>)
        return term_traits<Term>::present(base, i);
    else
        return true;
}

/// Stamps the changed ticks of every row of `a` for each `T&`/`T*` term (not `Mut<T>`).
template <class... Terms>
void stamp_written(Archetype& a, std::uint64_t tick) noexcept {
    if (!a.tracked) return;
    (
        [&] {
            using Tr = term_traits<Terms>;
            if constexpr (Tr::stamps) {
                Storage::stamp_column(a, component_id<typename Tr::component>(), tick);
            }
        }(),
        ...);
}

/// The enable flags of a term's column in `a`, or null when the term's component is not
/// enableable, absent, or the term is an entity.
template <class Term>
const std::uint8_t* term_flags(const Archetype& a) noexcept {
    using Tr = term_traits<Term>;
    if constexpr (Tr::entity || resolves_v<Term>) {
        return nullptr;
    } else if constexpr (!enableable_v<typename Tr::component>) {
        return nullptr;
    } else {
        const std::int32_t c = a.column_index(component_id<typename Tr::component>());
        return c < 0 ? nullptr : a.columns[static_cast<std::uint32_t>(c)].enabled;
    }
}

/// Whether `F` takes a leading `Entity` before the terms.
template <class F, class... Terms>
inline constexpr bool takes_entity_v = std::is_invocable_v<F&, Entity, term_param_t<Terms>...>;

}  // namespace tessera::detail

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

#include <cstdint>
#include <type_traits>

namespace tessera::detail {

/// Whether term `Term` reads a sparse component.
template <class Term>
constexpr bool sparse_term_v = [] {
    if constexpr (term_traits<Term>::entity)
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

}  // namespace tessera::detail

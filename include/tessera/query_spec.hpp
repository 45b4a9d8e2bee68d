/// @file query_spec.hpp
/// `QuerySpec`, the untyped description of which archetypes a query matches, and the one
/// archetype matcher that queries (query.hpp) and query observers (observer.hpp) share, so a
/// new kind of term changes one place.
#pragma once

#include <tessera/component.hpp>

#include <span>
#include <vector>

namespace tessera {

namespace detail {
struct Archetype;
}  // namespace detail

/// An untyped description of which archetypes match: every component of `all`, none of `none`,
/// and at least one of `any` (when not empty). Archetypes of prefabs (`ts::Prefab`) match only
/// when `all` or `any` names `Prefab`. Cheap to keep in a system's state; aggregate, so
/// `QuerySpec{.all = {...}, .none = {...}}` works too.
struct QuerySpec {
    std::vector<ComponentId> all{};   ///< required components
    std::vector<ComponentId> any{};   ///< at least one of these, when not empty
    std::vector<ComponentId> none{};  ///< excluded components

    /// Requires every one of `Ts`.
    template <class... Ts>
    QuerySpec& with() {
        (all.push_back(component_id<Ts>()), ...);
        return *this;
    }
    /// Excludes archetypes with any of `Ts`.
    template <class... Ts>
    QuerySpec& without() {
        (none.push_back(component_id<Ts>()), ...);
        return *this;
    }
    /// Requires at least one of `Ts`.
    template <class... Ts>
    QuerySpec& any_of() {
        (any.push_back(component_id<Ts>()), ...);
        return *this;
    }
    /// Whether archetype `a` matches.
    [[nodiscard]] bool matches(const detail::Archetype& a) const noexcept;
};

namespace detail {

/// The one archetype matcher: whether `a` has every component of `all`, none of `none` and,
/// when `any` is not empty, at least one of `any`. An archetype holding `Prefab`
/// (prefab_tags.hpp) matches only when `Prefab` is in `all`, `any` or `named` (a query's other
/// terms: optional ones). `QuerySpec::matches` and the query observers (`Query::on_enter`,
/// `on_exit`) both use it.
[[nodiscard]] bool archetype_matches(const Archetype& a, std::span<const ComponentId> all,
                                     std::span<const ComponentId> any,
                                     std::span<const ComponentId> none,
                                     std::span<const ComponentId> named = {}) noexcept;

}  // namespace detail

}  // namespace tessera

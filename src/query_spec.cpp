// The archetype matcher of queries and query observers.
#include <tessera/detail/archetype.hpp>
#include <tessera/prefab_tags.hpp>
#include <tessera/query_spec.hpp>

#include <algorithm>

namespace tessera {

bool QuerySpec::matches(const detail::Archetype& a) const noexcept {
    return detail::archetype_matches(a, all, any, none);
}

namespace detail {

bool archetype_matches(const Archetype& a, std::span<const ComponentId> all,
                       std::span<const ComponentId> any, std::span<const ComponentId> none,
                       std::span<const ComponentId> named) noexcept {
    // Prefabs are templates: only a query that names Prefab sees them.
    const ComponentId prefab = lookup_id<Prefab>();
    if (a.contains(prefab)) {
        auto names = [prefab](std::span<const ComponentId> ids) {
            return std::find(ids.begin(), ids.end(), prefab) != ids.end();
        };
        if (!names(all) && !names(any) && !names(named)) return false;
    }
    for (const ComponentId id : all) {
        if (!a.contains(id)) return false;
    }
    for (const ComponentId id : none) {
        if (a.contains(id)) return false;
    }
    if (any.empty()) return true;
    return std::any_of(any.begin(), any.end(), [&](ComponentId id) { return a.contains(id); });
}

}  // namespace detail

}  // namespace tessera

// The archetype matcher of queries and query observers.
#include <tessera/detail/archetype.hpp>
#include <tessera/query_spec.hpp>

#include <algorithm>

namespace tessera {

bool QuerySpec::matches(const detail::Archetype& a) const noexcept {
    return detail::archetype_matches(a, all, any, none);
}

namespace detail {

bool archetype_matches(const Archetype& a, std::span<const ComponentId> all,
                       std::span<const ComponentId> any,
                       std::span<const ComponentId> none) noexcept {
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

// The archetype matcher of queries and query observers.
#include <tessera/detail/archetype.hpp>
#include <tessera/query_spec.hpp>

#include <algorithm>

namespace tessera {

bool QuerySpec::matches(const detail::Archetype& a) const noexcept {
    for (ComponentId id : all) {
        if (!a.contains(id)) return false;
    }
    for (ComponentId id : none) {
        if (a.contains(id)) return false;
    }
    if (any.empty()) return true;
    return std::any_of(any.begin(), any.end(), [&](ComponentId id) { return a.contains(id); });
}

}  // namespace tessera

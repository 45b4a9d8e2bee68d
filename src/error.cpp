#include <tessera/assert.hpp>
#include <tessera/error.hpp>

#include <cstdio>
#include <cstdlib>

namespace tessera {

std::string_view to_string(errc code) noexcept {
    switch (code) {
        case errc::not_alive: return "not_alive";
        case errc::missing_component: return "missing_component";
        case errc::not_registered: return "not_registered";
        case errc::type_conflict: return "type_conflict";
        case errc::not_enableable: return "not_enableable";
        case errc::permanent_entity: return "permanent_entity";
        case errc::missing_resource: return "missing_resource";
        case errc::ambiguous_order: return "ambiguous_order";
        case errc::schedule_cycle: return "schedule_cycle";
        case errc::unknown_system: return "unknown_system";
        case errc::system_failed: return "system_failed";
        case errc::hierarchy_cycle: return "hierarchy_cycle";
        case errc::limit_exceeded: return "limit_exceeded";
        case errc::invalid_argument: return "invalid_argument";
        case errc::network: return "network";
    }
    return "unknown";
}

}  // namespace tessera

namespace tessera::detail {

void assertion_failed(const char* condition, const char* message, const char* file,
                      int line) noexcept {
    std::fprintf(stderr, "tessera: assertion failed: %s (%s) at %s:%d\n", message, condition, file,
                 line);
    std::fflush(stderr);
    std::abort();
}

}  // namespace tessera::detail

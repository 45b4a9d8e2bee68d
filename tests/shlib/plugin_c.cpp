// Plugin C of the shared-library test: built with hidden visibility, so its template
// instantiations are its own, and it defines a `Conflicting` unlike the host's. Its
// registration of that name fails (type_conflict) when it is loaded; the lookups that cannot
// throw must then answer "absent" instead of terminating.
#include "shared_component.hpp"

/// The host's `Conflicting` is one int: same name, another layout. Default visibility, so its
/// name is exported (a hidden type's typeid name is private, and it would get its own id).
struct __attribute__((visibility("default"))) Conflicting {
    double a;
    double b;
    double c;
};

TESSERA_PLUGIN_EXPORT std::uint32_t tessera_plugin_c_probe(const tessera::World* world,
                                                           tessera::Entity e) {
    std::uint32_t seen = 0;
    if (world->has<Conflicting>(e)) seen |= 1u;
    if (world->try_get<Conflicting>(e) != nullptr) seen |= 2u;
    if (!world->targets<Conflicting>(e).empty()) seen |= 4u;
    if (world->related<Conflicting>(e, e)) seen |= 8u;
    if (!world->sources<Conflicting>(e).empty()) seen |= 16u;
    if (world->relation<Conflicting>(e) != nullptr) seen |= 32u;
    try {
        // (The id is used: component_id is declared pure, so a discarded call may be dropped.)
        if (tessera::component_id<Conflicting>().valid()) seen |= 64u;  // registered after all
    } catch (const tessera::Error& err) {
        if (err.code() != tessera::errc::type_conflict) seen |= 128u;
    }
    return seen;
}

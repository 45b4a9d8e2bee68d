// Plugin B of the shared-library test: reads the SharedPos plugin A wrote, and has its own
// {anonymous}::Label.
#include "shared_component.hpp"

namespace {

/// Not the Label of plugin_a.cpp: different size, no linkage, so a different component.
struct Label {
    double weight;
    int rank;
};

}  // namespace

TESSERA_PLUGIN_EXPORT std::uint32_t tessera_plugin_b_read(const tessera::World* world,
                                                          tessera::Entity e, SharedPos* out) {
    *out = world->get<SharedPos>(e);
    return tessera::component_id<SharedPos>().value;
}

TESSERA_PLUGIN_EXPORT std::uint32_t tessera_plugin_b_label_id() {
    return tessera::component_id<Label>().value;
}

// Plugin A of the shared-library test: writes SharedPos, and has its own {anonymous}::Label.
#include "shared_component.hpp"

namespace {

/// Not the Label of plugin_b.cpp: different size, no linkage, so a different component.
struct Label {
    char text[8];
};

}  // namespace

TESSERA_PLUGIN_EXPORT std::uint32_t tessera_plugin_a_add(tessera::World* world, tessera::Entity e,
                                                         float x, float y) {
    world->add(e, SharedPos{x, y});
    return tessera::component_id<SharedPos>().value;
}

TESSERA_PLUGIN_EXPORT std::uint32_t tessera_plugin_a_label_id() {
    return tessera::component_id<Label>().value;
}

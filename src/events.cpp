// Events: the world-wide update of every event queue.
#include <tessera/events.hpp>

namespace tessera {

void World::update_events() {
    detail::check_not_parallel(*storage_, "World::update_events");
    // A world that never made a resource has no queue: nothing to allocate or update.
    if (detail::ResourceMap* map = resource_map()) map->update_events();
}

}  // namespace tessera

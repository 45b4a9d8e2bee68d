// Must not compile: an event type that cannot be moved.
// expect: not move constructible
#include <tessera/events.hpp>

struct Pinned {
    Pinned() = default;
    Pinned(Pinned&&) = delete;
};

int main() {
    tessera::World world;
    world.send_event(Pinned{});
}

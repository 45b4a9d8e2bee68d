// Must not compile: a required component that can't be value-initialised.
// expect: a required component must be default constructible
#include <tessera/world.hpp>

struct Handle {
    explicit Handle(int v) : value(v) {}
    int value;
};
struct Door {};
template <>
struct tessera::component_traits<Door> {
    using required = tessera::type_list<Handle>;
};

int main() {
    tessera::World world;
    world.spawn(Door{});
}

// A downstream program using an installed tessera::inspect (find_package(tessera COMPONENTS
// inspect), or pkg-config tessera-inspect).
#include <tessera/inspect.hpp>
#include <tessera/tessera.hpp>

#include <cstdio>

namespace {

struct Health {
    int hp;
};

}  // namespace

int main() {
    tessera::World world;
    world.spawn(Health{10});
    tessera::Inspector inspector(0);  // any free port on 127.0.0.1
    inspector.update(world);
    if (inspector.port() == 0 || inspector.frames() != 1) {
        std::fprintf(stderr, "inspect consumer: port %u, %llu frames\n", unsigned(inspector.port()),
                     static_cast<unsigned long long>(inspector.frames()));
        return 1;
    }
    std::printf("inspect consumer: ok, served at %s\n", inspector.url().c_str());
    return 0;
}

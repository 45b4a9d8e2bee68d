// A downstream program using an installed tessera through find_package(tessera).
#include <tessera/tessera.hpp>

#include <cstdio>

namespace {

struct Position {
    float x;
    float y;
};

}  // namespace

int main() {
    tessera::World world;
    const tessera::Entity e = world.spawn(Position{1.0f, 2.0f});
    const Position p = world.get<Position>(e);
    if (!world.is_alive(e) || p.x != 1.0f || p.y != 2.0f) {
        std::fprintf(stderr, "consumer: unexpected value (%g, %g)\n", double(p.x), double(p.y));
        return 1;
    }
    std::printf("consumer: ok, entity has Position (%g, %g)\n", double(p.x), double(p.y));
    return 0;
}

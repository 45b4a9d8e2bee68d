// The compile-time probe of docs/performance.md ("Compile time"): a one-system translation unit
// (a world, ten spawns, one cached query, one Schedule system, run), as issue 21 defines it.
// tools/compile_time.sh times `g++ -O2 -c` of it; the tests build and run it so it keeps
// compiling.
#include <tessera/tessera.hpp>

namespace ts = tessera;

struct Position {
    float x, y;
};
struct Velocity {
    float dx, dy;
};

int main() {
    ts::World world;
    for (int i = 0; i < 10; ++i)
        world.spawn(Position{static_cast<float>(i), 0.0f}, Velocity{1.0f, 1.0f});
    auto moving = world.query<Position&, const Velocity&>();
    moving.each([](Position& p, const Velocity& v) {
        p.x += v.dx;
        p.y += v.dy;
    });
    ts::Schedule schedule(1);
    schedule.add("move", [](ts::View<Position&, const Velocity&> view, float dt) {
        view.each([dt](Position& p, const Velocity& v) {
            p.x += v.dx * dt;
            p.y += v.dy * dt;
        });
    });
    schedule.run(world, 1.0f / 60.0f);
    float sum = 0;
    moving.each([&](Position& p, const Velocity&) { sum += p.x; });
    // 0 + ... + 9 = 45, then +10 from `each` and +10/60 from the system.
    return sum > 55.1f && sum < 55.2f ? 0 : 1;
}

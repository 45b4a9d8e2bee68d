// A consumer of the installed tessera::gpu: one kernel system on the CPU backend.
#include <tessera/gpu.hpp>
#include <tessera/tessera.hpp>

struct Position {
    float x;
};
struct Speed {
    float v;
};

int main() {
    tessera::World world;
    world.spawn(Position{0.0f}, Speed{2.0f});
    tessera::Schedule schedule(1);
    auto move = tessera::gpu::kernel_system<Position, const Speed>(
        schedule, "move", Speed{1.0f},
        [](Position& p, const Speed& s, float dt, const Speed& scale) {
            p.x += s.v * dt * scale.v;
        },
        {.target = tessera::gpu::target::cpu});
    schedule.run(world, 0.5f);
    float x = -1.0f;
    world.each([&](const Position& p) { x = p.x; });
    return x == 1.0f && move.backend() == tessera::gpu::backend::cpu ? 0 : 1;
}

// Must not compile: a kernel that captures; outside values go through the uniforms.
// expect: pass outside values through the uniforms
#include <tessera/gpu.hpp>

struct Position {
    float x;
};
struct Uniforms {
    float g;
};

int main() {
    tessera::Schedule schedule;
    float gravity = -9.8f;
    tessera::gpu::kernel_system<Position>(
        schedule, "fall", Uniforms{},
        [gravity](Position& p, float dt, const Uniforms&) { p.x += gravity * dt; });
}

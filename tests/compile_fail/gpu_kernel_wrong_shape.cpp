// Must not compile: a kernel whose parameters are not (components..., float dt, uniforms).
// expect: a kernel takes (Cs&... components, float dt, const U& uniforms)
#include <tessera/gpu.hpp>

struct Position {
    float x;
};
struct Uniforms {
    float g;
};

int main() {
    tessera::Schedule schedule;
    tessera::gpu::kernel_system<Position>(schedule, "fall", Uniforms{},
                                          [](Position& p, const Uniforms&) { p.x += 1.0f; });
}

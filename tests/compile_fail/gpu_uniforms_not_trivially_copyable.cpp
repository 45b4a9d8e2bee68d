// Must not compile: uniforms that are not trivially copyable.
// expect: the uniforms must be trivially copyable
#include <tessera/gpu.hpp>

#include <string>

struct Position {
    float x;
};
struct Uniforms {
    std::string name;
};

int main() {
    tessera::Schedule schedule;
    tessera::gpu::kernel_system<Position>(
        schedule, "fall", Uniforms{}, [](Position& p, float dt, const Uniforms&) { p.x += dt; });
}

// A/B harness for the CPU backend of GPU kernel systems against `each` (docs/gpu.md, "The CPU
// backend against each"): one world, the simple or gravity kernel, 41 rounds that each time
// `each`, the CPU backend in a Schedule(1) and on every core, back to back; prints the median
// of the per-round ratios, which cancels the drift of a shared machine. Build (Release tree):
//   g++ -std=c++20 -O3 -DNDEBUG -Iinclude tools/gpu_cpu_ab.cpp
//   build/release/src/gpu/libtessera_gpu.a
//       build/release/libtessera.a -ltbb [/usr/local/cuda/lib64/libcudart_static.a -lrt -ldl]
//       -lpthread -o gpu_cpu_ab
// Run: ./gpu_cpu_ab <entities> [gravity]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <tessera/gpu.hpp>
#include <tessera/tessera.hpp>
#include <vector>
struct Position {
    float x, y;
};
struct Velocity {
    float dx, dy;
};
struct Gravity {
    float g;
};
struct SimpleKernel {
    void operator()(Position& p, const Velocity& v, float dt, const Gravity&) const {
        p.x += v.dx * dt;
        p.y += v.dy * dt;
    }
};
struct GravityKernel {
    void operator()(Position& p, Velocity& v, float dt, const Gravity& u) const {
        v.dy += u.g * dt;
        p.x += v.dx * dt;
        p.y += v.dy * dt;
        if (p.y < 0.0f) {
            p.y = 0.0f;
            v.dy = -v.dy * 0.5f;
        }
    }
};
float rdt = 1.0f / 60.0f;
Gravity rg{-9.8f};
template <class F>
double time_ns(F&& f, int reps) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) f();
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
           reps;
}
int main(int argc, char** argv) {
    const std::size_t n = std::strtoul(argv[1], nullptr, 10);
    const bool grav = argc > 2;
    tessera::gpu::set_warning_handler([](std::string_view, std::string_view) {});
    tessera::World w;
    w.spawn_many(n, [](std::size_t i, Position& p, Velocity& v) {
        p = {float(i % 1024), float(i % 512)};
        v = {float(i % 7) + 1, float(i % 5) - 2};
    });
    auto qs = w.query<Position&, const Velocity&>();
    auto qg = w.query<Position&, Velocity&>();
    tessera::Schedule s1(1), sp;
    if (grav) {
        tessera::gpu::kernel_system<Position, Velocity>(s1, "k", rg, GravityKernel{},
                                                        {.target = tessera::gpu::target::cpu});
        tessera::gpu::kernel_system<Position, Velocity>(sp, "k", rg, GravityKernel{},
                                                        {.target = tessera::gpu::target::cpu});
    } else {
        tessera::gpu::kernel_system<Position, const Velocity>(
            s1, "k", rg, SimpleKernel{}, {.target = tessera::gpu::target::cpu});
        tessera::gpu::kernel_system<Position, const Velocity>(
            sp, "k", rg, SimpleKernel{}, {.target = tessera::gpu::target::cpu});
    }
    auto each = [&] {
        const float dt = rdt;
        const Gravity u = rg;
        if (grav)
            qg.each([dt, u](Position& p, Velocity& v) { GravityKernel{}(p, v, dt, u); });
        else
            qs.each([dt, u](Position& p, const Velocity& v) { SimpleKernel{}(p, v, dt, u); });
    };
    auto one = [&] { s1.run(w, rdt); };
    auto par = [&] { sp.run(w, rdt); };
    const int reps = std::max<int>(1, int(20'000'000 / n));
    std::vector<double> a, b, c;
    for (int t = 0; t < 41; ++t) {
        a.push_back(time_ns(each, reps));
        b.push_back(time_ns(one, reps));
        c.push_back(time_ns(par, reps));
    }
    auto med = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    std::vector<double> r1, rp;
    for (int t = 0; t < 41; ++t) {
        r1.push_back(b[t] / a[t]);
        rp.push_back(c[t] / a[t]);
    }
    std::printf(
        "%s n=%zu: each %.1f us, cpu_backend(1 worker) %.1f us, cpu_backend(all) %.1f us; median "
        "of paired ratios: 1w %.3f, all %.3f\n",
        grav ? "gravity" : "simple", n, med(a) / 1e3, med(b) / 1e3, med(c) / 1e3, med(r1), med(rp));
}

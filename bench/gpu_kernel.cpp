// gpu_kernel: GPU kernel systems (gpu.hpp) against tessera's own `each` on the same kernel.
// Kernels: `simple` (p += v * dt) and `gravity` (v.dy += g * dt, p += v * dt, bounce off y = 0).
// Variants, per entity count (10K, 100K, 1M; 4M and 16M too with TESSERA_GPU_BENCH_LARGE=1):
//   each           a cached Query, `each` calling the kernel (the baseline of the ratios)
//   each_system    the same `each` inside a system of a Schedule(1): the schedule's own cost
//   cpu_backend    kernel_system with target::cpu in a Schedule on every core (par_each)
//   cpu_backend_1w the same in a Schedule(1) (one worker: the loop's own cost against `each`)
//   cuda_async / cuda_sync / cuda_none   target::gpu with that readback mode; skipped (with an
//                  error saying why) without a device or when this file was not built by nvcc
// Time is per frame (one schedule run, or one `each`), items = entities. Every variant checks
// one untimed frame against `each` first and reports an error instead of a figure on a mismatch.
// With the CUDA backend, bench/CMakeLists.txt compiles this file with nvcc.
#include "common.hpp"

#include <tessera/gpu.hpp>
#include <tessera/tessera.hpp>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace tessera_bench {
namespace {

namespace gpu = tessera::gpu;

struct Gravity {
    float g;
};

struct SimpleKernel {
    TESSERA_KERNEL void operator()(Position& p, const Velocity& v, float dt, const Gravity&) const {
        p.x += v.dx * dt;
        p.y += v.dy * dt;
    }
};

struct GravityKernel {
    TESSERA_KERNEL void operator()(Position& p, Velocity& v, float dt, const Gravity& u) const {
        v.dy += u.g * dt;
        p.x += v.dx * dt;
        p.y += v.dy * dt;
        if (p.y < 0.0f) {
            p.y = 0.0f;
            v.dy = -v.dy * 0.5f;
        }
    }
};

constexpr Gravity kGravity{-9.8f};
// dt and the uniforms as a program has them: values known at run time, not constants.
float runtime_dt = kDt;
Gravity runtime_gravity = kGravity;

void populate(tessera::World& w, std::size_t n) {
    w.spawn_many(n, [](std::size_t i, Position& p, Velocity& v) {
        p = {static_cast<float>(i % 1024), static_cast<float>(i % 512)};
        v = {static_cast<float>(i % 7) + 1.0f, static_cast<float>(i % 5) - 2.0f};
    });
}

enum class Kernel { simple, gravity };
enum class Variant { each, each_system, cpu, cpu_one, cuda_async, cuda_sync, cuda_none };

// `each` with the kernel, on the query the kernel system would make (const Velocity for the
// simple kernel, which only reads it).
struct EachLoop {
    tessera::Query<Position&, const Velocity&> simple;
    tessera::Query<Position&, Velocity&> gravity;
    Kernel kernel;
    EachLoop(tessera::World& w, Kernel k)
        : simple(w.query<Position&, const Velocity&>()),
          gravity(w.query<Position&, Velocity&>()),
          kernel(k) {}
    void frame() {
        const float dt = runtime_dt;
        const Gravity u = runtime_gravity;
        if (kernel == Kernel::simple) {
            simple.each([dt, u](Position& p, const Velocity& v) { SimpleKernel{}(p, v, dt, u); });
        } else {
            gravity.each([dt, u](Position& p, Velocity& v) { GravityKernel{}(p, v, dt, u); });
        }
    }
};

bool near(float a, float b) {
    return std::fabs(a - b) <= 1e-4f * (1.0f + std::fabs(b));
}

// Whether every Position and Velocity of `a` is within rounding of `b`'s.
bool same(tessera::World& a, tessera::World& b) {
    std::vector<float> va, vb;
    for (tessera::World* w : {&a, &b}) {
        std::vector<float>& out = w == &a ? va : vb;
        w->each([&](const Position& p, const Velocity& v) {
            out.insert(out.end(), {p.x, p.y, v.dx, v.dy});
        });
    }
    if (va.size() != vb.size()) return false;
    for (std::size_t i = 0; i < va.size(); ++i) {
        if (!near(va[i], vb[i])) return false;
    }
    return true;
}

gpu::KernelSystem<Gravity> add(tessera::Schedule& s, Kernel k, gpu::Options o) {
    if (k == Kernel::simple)
        return gpu::kernel_system<Position, const Velocity>(s, "kernel", kGravity, SimpleKernel{},
                                                            o);
    return gpu::kernel_system<Position, Velocity>(s, "kernel", kGravity, GravityKernel{}, o);
}

void gpu_kernel(benchmark::State& state, Kernel kernel, Variant variant) {
    const auto n = static_cast<std::size_t>(state.range(0));
    tessera::World world;
    populate(world, n);
    tessera::World reference;
    populate(reference, n);
    EachLoop(reference, kernel).frame();

    if (variant == Variant::each) {
        EachLoop q(world, kernel);
        q.frame();
        if (!same(world, reference)) {
            state.SkipWithError("gpu_kernel/each: the check frame differs");
            return;
        }
        for (auto _ : state) {
            q.frame();
            benchmark::ClobberMemory();
        }
        set_items(state, n);
        return;
    }

    if (variant == Variant::each_system) {  // `each` in a system of a Schedule(1)
        tessera::Schedule schedule(1);
        if (kernel == Kernel::simple) {
            schedule.add("each", [](tessera::View<Position&, const Velocity&> v, float dt) {
                const Gravity u = runtime_gravity;
                v.each(
                    [dt, u](Position& p, const Velocity& vel) { SimpleKernel{}(p, vel, dt, u); });
            });
        } else {
            schedule.add("each", [](tessera::View<Position&, Velocity&> v, float dt) {
                const Gravity u = runtime_gravity;
                v.each([dt, u](Position& p, Velocity& vel) { GravityKernel{}(p, vel, dt, u); });
            });
        }
        schedule.run(world, kDt);
        if (!same(world, reference)) {
            state.SkipWithError("gpu_kernel/each_system: the check frame differs");
            return;
        }
        for (auto _ : state) {
            schedule.run(world, kDt);
            benchmark::ClobberMemory();
        }
        set_items(state, n);
        return;
    }

    const bool cuda = variant == Variant::cuda_async || variant == Variant::cuda_sync ||
                      variant == Variant::cuda_none;
    if (cuda && !gpu::device_available()) {
        state.SkipWithError(gpu::cuda_compiled() ? "no CUDA device"
                                                 : "tessera_gpu built without the CUDA toolkit");
        return;
    }
#if !defined(__CUDACC__)
    if (cuda) {
        state.SkipWithError("bench/gpu_kernel.cpp was not compiled by nvcc");
        return;
    }
#endif
    gpu::Options options{.target = cuda ? gpu::target::gpu : gpu::target::cpu};
    if (variant == Variant::cuda_sync) options.readback = gpu::readback::sync;
    if (variant == Variant::cuda_none) options.readback = gpu::readback::none;
    tessera::Schedule schedule(variant == Variant::cpu_one ? 1 : 0);
    schedule.set_parallel_threshold(std::chrono::nanoseconds::max());  // one system: inline
    gpu::KernelSystem<Gravity> k = add(schedule, kernel, options);
    schedule.run(world, kDt);
    if (options.readback == gpu::readback::none) {
        k.sync();  // the check frame stays on the device: compare after reading it back once
    } else {
        k.sync();
        if (!same(world, reference)) {
            state.SkipWithError("gpu_kernel: the check frame differs from each");
            return;
        }
    }
    for (auto _ : state) {
        schedule.run(world, kDt);
        benchmark::ClobberMemory();
    }
    k.sync();
    set_items(state, n);
    state.counters["uploaded_MB"] = static_cast<double>(k.uploaded_bytes()) / 1e6;
    state.counters["downloaded_MB"] = static_cast<double>(k.downloaded_bytes()) / 1e6;
}

void register_all() {
    std::vector<std::int64_t> sizes = {10'000, 100'000, 1'000'000};
    if (const char* large = std::getenv("TESSERA_GPU_BENCH_LARGE"); large && *large == '1') {
        sizes.push_back(4'000'000);
        sizes.push_back(16'000'000);
    }
    const std::pair<const char*, Kernel> kernels[] = {{"simple", Kernel::simple},
                                                      {"gravity", Kernel::gravity}};
    const std::pair<const char*, Variant> variants[] = {{"each", Variant::each},
                                                        {"each_system", Variant::each_system},
                                                        {"cpu_backend", Variant::cpu},
                                                        {"cpu_backend_1w", Variant::cpu_one},
                                                        {"cuda_async", Variant::cuda_async},
                                                        {"cuda_sync", Variant::cuda_sync},
                                                        {"cuda_none", Variant::cuda_none}};
    for (const auto& [kname, kernel] : kernels) {
        for (const auto& [vname, variant] : variants) {
            const std::string name = std::string("gpu_") + kname + "/" + vname;
            auto* b = benchmark::RegisterBenchmark(name.c_str(), gpu_kernel, kernel, variant);
            for (const std::int64_t n : sizes) b->Arg(n);
            b->Unit(benchmark::kMicrosecond);
        }
    }
}

const bool registered = (register_all(), true);

}  // namespace
}  // namespace tessera_bench

// gpu::calibrate(): the break-even points of target::automatic measured on this machine.
// Compiled by nvcc as calibrate.cu when the CUDA backend is built (so the sweep can launch the
// baseline kernel on the device), by the C++ compiler otherwise (the CPU baseline only).
#include <tessera/gpu.hpp>
#include <tessera/schedule.hpp>
#include <tessera/world.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace tessera::gpu {

namespace detail {

struct CalibratePosition {
    float x, y;
};
struct CalibrateVelocity {
    float dx, dy;
};
struct CalibrateUniforms {
    float scale;
};
/// The baseline kernel: p += v * dt (the "simple" kernel of docs/gpu.md).
struct CalibrateKernel {
    TESSERA_KERNEL void operator()(CalibratePosition& p, const CalibrateVelocity& v, float dt,
                                   const CalibrateUniforms& u) const {
        p.x += v.dx * dt * u.scale;
        p.y += v.dy * dt * u.scale;
    }
};

/// Median nanoseconds per frame of the baseline kernel over `n` entities on `options`.
double calibrate_frame_ns(std::size_t n, const Options& options) {
    World world;
    world.spawn_many(n, [](std::size_t i, CalibratePosition& p, CalibrateVelocity& v) {
        p = {static_cast<float>(i), 0.0f};
        v = {1.0f, 0.5f};
    });
    Schedule schedule;
    auto k = kernel_system<CalibratePosition, const CalibrateVelocity>(
        schedule, "gpu::calibrate", CalibrateUniforms{1.0f}, CalibrateKernel{}, options);
    schedule.run(world, 0.016f);  // warm-up: uploads, first-touch
    k.sync();
    constexpr int frames = 9;
    double times[frames];
    for (double& t : times) {
        const auto start = std::chrono::steady_clock::now();
        schedule.run(world, 0.016f);
        if (options.readback != readback::async) k.sync();
        t = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start)
                .count();
    }
    k.sync();
    std::sort(times, times + frames);
    return times[frames / 2];
}

}  // namespace detail

Thresholds calibrate() {
    Thresholds t = thresholds();
    constexpr std::size_t baseline_n = 1'000'000;
    t.baseline_ns =
        detail::calibrate_frame_ns(baseline_n, {.target = target::cpu}) / double(baseline_n);
#if defined(__CUDACC__)
    if (device_available()) {
        const std::size_t sizes[] = {10'000,  20'000,    50'000,    100'000,  200'000,
                                     500'000, 1'000'000, 2'000'000, 4'000'000};
        const readback modes[] = {readback::none, readback::async, readback::sync};
        std::size_t* slots[] = {&t.none, &t.async, &t.sync};
        for (int m = 0; m < 3; ++m) {
            *slots[m] = std::numeric_limits<std::size_t>::max();  // never, unless measured
            for (const std::size_t n : sizes) {
                const double cpu = detail::calibrate_frame_ns(n, {.target = target::cpu});
                const double gpu =
                    detail::calibrate_frame_ns(n, {.target = target::gpu, .readback = modes[m]});
                if (gpu < cpu) {
                    *slots[m] = n;
                    break;
                }
            }
        }
    }
#endif
    set_thresholds(t);
    return t;
}

}  // namespace tessera::gpu

// heavy_compute: 1,000 entities with Transform, Position, Rotation and Velocity; per entity
// invert the 4x4 matrix 100 times (Gauss-Jordan with partial pivoting: invert4x4 in matrix.hpp,
// out of line and shared by every variant), then transform the position by the matrix. Raw
// baseline: the same over four vectors (only Transform and Position are touched, as in the
// tessera variants; Rotation and Velocity make the entity the scenario's size). Item = one
// entity.
//
// The matrices are rotations about z (angles differ per entity) so that the pivoting swaps rows
// and the values stay bounded: an even number of inversions gives the matrix back (up to
// rounding), and each pass rotates the position, keeping its length. One untimed pass is checked
// first against the rotation computed directly.
//
// `heavy_compute/tessera_par` is the same query through `par_each` on oneTBB's default arena
// (2 workers here); docs/benchmarks.md judges it by its speedup over `tessera` in the same run.
#include "common.hpp"
#include "matrix.hpp"

#include <tessera/tessera.hpp>

#include <cmath>
#include <vector>

namespace tessera_bench {
namespace {

inline constexpr std::size_t kHeavyN = 1'000;
inline constexpr int kInversions = 100;

/// The per-entity work of every variant.
struct HeavyStep {
    void operator()(Transform& t, Position& p) const noexcept {
        for (int k = 0; k < kInversions; ++k) (void)invert4x4(t.m, t.m);
        // The position as the point (x, y, 0, 1); column-major m.
        const float x = p.x;
        const float y = p.y;
        p.x = t.m[0] * x + t.m[4] * y + t.m[12];
        p.y = t.m[1] * x + t.m[5] * y + t.m[13];
    }
};

float angle_of(std::size_t i) {
    return 0.3f + 0.1f * static_cast<float>(i % 10);
}
Transform initial_transform(std::size_t i) {
    const float c = std::cos(angle_of(i));
    const float s = std::sin(angle_of(i));
    return Transform{{c, s, 0, 0, -s, c, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}};
}
Position initial_position(std::size_t i) {
    return Position{1.0f + static_cast<float>(i % 3), static_cast<float>(i % 5)};
}

/// Whether `p` is entity `i`'s initial position rotated once by its angle.
bool rotated_once(std::size_t i, const Position& p) {
    const double a = angle_of(i);
    const Position p0 = initial_position(i);
    const double x = std::cos(a) * p0.x - std::sin(a) * p0.y;
    const double y = std::sin(a) * p0.x + std::cos(a) * p0.y;
    return std::fabs(p.x - x) <= 1e-3 && std::fabs(p.y - y) <= 1e-3;
}

void heavy_compute_raw(benchmark::State& state) {
    AlignedVector<Transform> transform(kHeavyN);
    AlignedVector<Position> pos(kHeavyN);
    AlignedVector<Rotation> rot(kHeavyN, Rotation{0, 0, 0});
    AlignedVector<Velocity> vel(kHeavyN, Velocity{1, 1});
    for (std::size_t i = 0; i < kHeavyN; ++i) {
        transform[i] = initial_transform(i);
        pos[i] = initial_position(i);
    }
    auto pass = [&] {
        Transform* const t = transform.data();
        Position* const p = pos.data();
        for (std::size_t i = 0; i < kHeavyN; ++i) HeavyStep{}(t[i], p[i]);
    };
    pass();
    for (std::size_t i = 0; i < kHeavyN; ++i) {
        if (!rotated_once(i, pos[i])) {
            state.SkipWithError("heavy_compute/raw: positions not rotated by the matrix");
            return;
        }
    }
    for (auto _ : state) {
        pass();
        benchmark::DoNotOptimize(pos.data());
        benchmark::DoNotOptimize(rot.data());
        benchmark::DoNotOptimize(vel.data());
        benchmark::ClobberMemory();
    }
    set_items(state, kHeavyN);
}

void heavy_compute_run(benchmark::State& state, bool parallel) {
    tessera::World world;
    std::vector<tessera::Entity> handles;
    handles.reserve(kHeavyN);
    for (std::size_t i = 0; i < kHeavyN; ++i) {
        handles.push_back(world.spawn(initial_transform(i), initial_position(i), Rotation{0, 0, 0},
                                      Velocity{1, 1}));
    }
    auto query = world.query<Transform&, Position&>();  // built once, reused every pass
    const auto pass = [&] {
        if (parallel)
            query.par_each(HeavyStep{});
        else
            query.each(HeavyStep{});
    };
    pass();
    for (std::size_t i = 0; i < kHeavyN; ++i) {
        if (!rotated_once(i, world.get<Position>(handles[i]))) {
            state.SkipWithError("heavy_compute/tessera: positions not rotated by the matrix");
            return;
        }
    }
    for (auto _ : state) {
        pass();
        benchmark::ClobberMemory();
    }
    set_items(state, kHeavyN);
}

void heavy_compute_tessera(benchmark::State& state) {
    heavy_compute_run(state, false);
}
void heavy_compute_tessera_par(benchmark::State& state) {
    heavy_compute_run(state, true);
}

BENCHMARK(heavy_compute_raw)->Name("heavy_compute/raw")->Apply(steady);
BENCHMARK(heavy_compute_tessera)->Name("heavy_compute/tessera")->Apply(steady);
BENCHMARK(heavy_compute_tessera_par)->Name("heavy_compute/tessera_par")->Apply(steady);

}  // namespace
}  // namespace tessera_bench

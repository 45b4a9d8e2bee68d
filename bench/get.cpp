// get_seq / get_random: N entities with Position; sum get<Position>(e).x over the handles, in
// creation order and shuffled with std::mt19937(42). Raw baseline: sum pos[idx[i]].x with idx =
// 0..N-1, or idx shuffled the same way. Variants: `get`, `try_get`, and an `Accessor<Position>`'s
// `get` and `try_get` (the fastest path by handle).
//
// The sum uses four independent accumulators in every variant: with a single float accumulator
// the 4-cycle latency of each addition (about 1.3 ns) would be the floor of get_seq for both
// variants, hiding the cost of the lookup that the scenario measures. Values are small integers,
// so every partial sum is exact and the check is an equality.
#include "common.hpp"

#include <tessera/tessera.hpp>

#include <algorithm>
#include <numeric>
#include <random>
#include <span>
#include <vector>

namespace tessera_bench {
namespace {

/// x of entity i: small integers, so each partial sum stays exact in float.
float x_of(std::size_t i) {
    return static_cast<float>(i % 4);
}

/// Sum of x_of(i) over 0..n-1: n / 4 cycles of 0+1+2+3, then the tail's 0, 0+1 or 0+1+2.
double expected_sum(std::size_t n) {
    constexpr double kTail[] = {0, 0, 1, 3};
    return static_cast<double>(n / 4) * 6.0 + kTail[n % 4];
}

/// Sum of get(i) for i in 0..n-1, in four interleaved accumulators.
template <class Get>
float sum4(std::size_t n, Get&& get) {
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    const std::size_t whole = n - n % 4;
    for (std::size_t i = 0; i < whole; i += 4) {
        s0 += get(i);
        s1 += get(i + 1);
        s2 += get(i + 2);
        s3 += get(i + 3);
    }
    for (std::size_t i = whole; i < n; ++i) s0 += get(i);
    return (s0 + s1) + (s2 + s3);
}

std::vector<std::uint32_t> indices(std::size_t n, bool shuffled) {
    std::vector<std::uint32_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0u);
    if (shuffled) std::shuffle(idx.begin(), idx.end(), std::mt19937(kSeed));
    return idx;
}

void get_raw(benchmark::State& state, bool shuffled) {
    const std::size_t n = entity_count();
    AlignedVector<Position> pos(n);
    for (std::size_t i = 0; i < n; ++i) pos[i] = Position{x_of(i), 0.0f};
    const std::vector<std::uint32_t> idx = indices(n, shuffled);
    float sum = 0;
    for (auto _ : state) {
        sum = sum4(n, [&](std::size_t i) { return pos[idx[i]].x; });
        benchmark::DoNotOptimize(sum);
    }
    if (static_cast<double>(sum) != expected_sum(n)) state.SkipWithError("get/raw: wrong sum");
    set_items(state, n);
}

/// Which lookup the tessera variants time.
enum class Path { get, try_get, accessor_get, accessor_try_get };

void get_tessera(benchmark::State& state, bool shuffled, Path path = Path::get) {
    const std::size_t n = entity_count();
    tessera::World world;
    std::span<const tessera::Entity> spawned = world.spawn_many(n, [](std::size_t i, Position& p) {
        p = Position{x_of(i), 0.0f};
    });
    std::vector<tessera::Entity> handles(spawned.begin(), spawned.end());
    if (shuffled) std::shuffle(handles.begin(), handles.end(), std::mt19937(kSeed));
    float sum = 0;
    const tessera::Accessor<Position> pos = world.accessor<Position>();
    for (auto _ : state) {
        switch (path) {
            case Path::get:
                sum = sum4(n, [&](std::size_t i) { return world.get<Position>(handles[i]).x; });
                break;
            case Path::try_get:
                sum =
                    sum4(n, [&](std::size_t i) { return world.try_get<Position>(handles[i])->x; });
                break;
            case Path::accessor_get:
                sum = sum4(n, [&](std::size_t i) { return pos.get(handles[i]).x; });
                break;
            case Path::accessor_try_get:
                sum = sum4(n, [&](std::size_t i) { return pos.try_get(handles[i])->x; });
                break;
        }
        benchmark::DoNotOptimize(sum);
    }
    if (static_cast<double>(sum) != expected_sum(n)) state.SkipWithError("get/tessera: wrong sum");
    set_items(state, n);
}

void get_seq_raw(benchmark::State& state) {
    get_raw(state, false);
}
void get_seq_tessera(benchmark::State& state) {
    get_tessera(state, false);
}
void get_seq_try_get(benchmark::State& state) {
    get_tessera(state, false, Path::try_get);
}
void get_seq_accessor(benchmark::State& state) {
    get_tessera(state, false, Path::accessor_get);
}
void get_seq_accessor_try_get(benchmark::State& state) {
    get_tessera(state, false, Path::accessor_try_get);
}
void get_random_try_get(benchmark::State& state) {
    get_tessera(state, true, Path::try_get);
}
void get_random_accessor(benchmark::State& state) {
    get_tessera(state, true, Path::accessor_get);
}
void get_random_accessor_try_get(benchmark::State& state) {
    get_tessera(state, true, Path::accessor_try_get);
}
void get_random_raw(benchmark::State& state) {
    get_raw(state, true);
}
void get_random_tessera(benchmark::State& state) {
    get_tessera(state, true);
}

BENCHMARK(get_seq_raw)->Name("get_seq/raw")->Apply(steady);
BENCHMARK(get_seq_tessera)->Name("get_seq/tessera")->Apply(steady);
BENCHMARK(get_seq_try_get)->Name("get_seq/tessera_try_get")->Apply(steady);
BENCHMARK(get_seq_accessor)->Name("get_seq/tessera_accessor")->Apply(steady);
BENCHMARK(get_seq_accessor_try_get)->Name("get_seq/tessera_accessor_try_get")->Apply(steady);
BENCHMARK(get_random_raw)->Name("get_random/raw")->Apply(steady);
BENCHMARK(get_random_tessera)->Name("get_random/tessera")->Apply(steady);
BENCHMARK(get_random_try_get)->Name("get_random/tessera_try_get")->Apply(steady);
BENCHMARK(get_random_accessor)->Name("get_random/tessera_accessor")->Apply(steady);
BENCHMARK(get_random_accessor_try_get)->Name("get_random/tessera_accessor_try_get")->Apply(steady);

}  // namespace
}  // namespace tessera_bench

// create: spawn N entities one at a time, each with Position{i, 0} and Velocity{1, 1}, into a
// fresh world. Raw baseline: two vectors, push_back one at a time, no reserve.
#include "common.hpp"

#include <tessera/tessera.hpp>

namespace tessera_bench {
namespace {

void create_raw(benchmark::State& state) {
    bool checked = false;
    for (auto _ : state) {
        AlignedVector<Position> pos;
        AlignedVector<Velocity> vel;
        Stopwatch watch;
        for (std::size_t i = 0; i < kN; ++i) {
            pos.push_back(Position{static_cast<float>(i), 0.0f});
            vel.push_back(Velocity{1.0f, 1.0f});
        }
        benchmark::DoNotOptimize(pos.data());
        benchmark::DoNotOptimize(vel.data());
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        if (!checked) {
            checked = true;
            if (pos.size() != kN || vel.size() != kN || pos[kN - 1].x != float(kN - 1)) {
                state.SkipWithError("create/raw: wrong contents");
                break;
            }
        }
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kN));
}

void create_tessera(benchmark::State& state) {
    bool checked = false;
    for (auto _ : state) {
        tessera::World world;  // constructed and destroyed outside the timed region
        tessera::Entity last{};
        Stopwatch watch;
        for (std::size_t i = 0; i < kN; ++i) {
            last = world.spawn(Position{static_cast<float>(i), 0.0f}, Velocity{1.0f, 1.0f});
        }
        benchmark::DoNotOptimize(last);
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        if (!checked) {
            checked = true;
            if (world.count() != kN || world.get<Position>(last).x != float(kN - 1) ||
                world.get<Velocity>(last).dy != 1.0f) {
                state.SkipWithError("create/tessera: wrong count or values");
                break;
            }
        }
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kN));
}

BENCHMARK(create_raw)->Name("create/raw")->Apply(setup_heavy);
BENCHMARK(create_tessera)->Name("create/tessera")->Apply(setup_heavy);

}  // namespace
}  // namespace tessera_bench

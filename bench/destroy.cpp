// destroy: a world with N entities of Position+Velocity (built untimed); despawn all, one at a
// time, in creation order. Raw baseline: pop_back one at a time (a floor, not an equivalent).
#include "common.hpp"

#include <tessera/tessera.hpp>

#include <span>
#include <vector>

namespace tessera_bench {
namespace {

void destroy_raw(benchmark::State& state) {
    bool checked = false;
    for (auto _ : state) {
        AlignedVector<Position> pos(kN, Position{0.0f, 0.0f});
        AlignedVector<Velocity> vel(kN, Velocity{1.0f, 1.0f});
        Stopwatch watch;
        for (std::size_t i = 0; i < kN; ++i) {
            pos.pop_back();
            vel.pop_back();
            benchmark::DoNotOptimize(pos.size());
        }
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        if (!checked) {
            checked = true;
            if (!pos.empty() || !vel.empty()) {
                state.SkipWithError("destroy/raw: vectors not empty");
                break;
            }
        }
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kN));
}

void destroy_tessera(benchmark::State& state) {
    bool checked = false;
    for (auto _ : state) {
        tessera::World world;  // constructed and destroyed outside the timed region
        std::span<const tessera::Entity> spawned =
            world.spawn_many(kN, [](std::size_t i, Position& p, Velocity& v) {
                p = Position{static_cast<float>(i), 0.0f};
                v = Velocity{1.0f, 1.0f};
            });
        // The span dies with the first despawn: keep a copy of the handles.
        const std::vector<tessera::Entity> handles(spawned.begin(), spawned.end());
        std::size_t despawned = 0;
        Stopwatch watch;
        for (const tessera::Entity e : handles) despawned += world.despawn(e) ? 1 : 0;
        benchmark::DoNotOptimize(despawned);
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        if (!checked) {
            checked = true;
            if (despawned != kN || world.count() != 0 || world.is_alive(handles[kN / 2])) {
                state.SkipWithError("destroy/tessera: entities left alive");
                break;
            }
        }
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kN));
}

BENCHMARK(destroy_raw)->Name("destroy/raw")->Apply(setup_heavy);
BENCHMARK(destroy_tessera)->Name("destroy/tessera")->Apply(setup_heavy);

}  // namespace
}  // namespace tessera_bench

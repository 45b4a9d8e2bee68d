// create: spawn N entities one at a time, each with Position{i, 0} and Velocity{1, 1}, into a
// fresh world. Raw baseline: two vectors, push_back one at a time, no reserve. Also on a world
// with an observer of an unrelated type, and with an on_spawn observer counting the spawns.
#include "common.hpp"

#include <tessera/observer.hpp>
#include <tessera/tessera.hpp>

#include <string>

namespace tessera_bench {
namespace {

void create_raw(benchmark::State& state) {
    const std::size_t n = entity_count();
    bool checked = false;
    for (auto _ : state) {
        AlignedVector<Position> pos;
        AlignedVector<Velocity> vel;
        Stopwatch watch;
        for (std::size_t i = 0; i < n; ++i) {
            pos.push_back(Position{static_cast<float>(i), 0.0f});
            vel.push_back(Velocity{1.0f, 1.0f});
        }
        benchmark::DoNotOptimize(pos.data());
        benchmark::DoNotOptimize(vel.data());
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        if (!checked) {
            checked = true;
            if (pos.size() != n || vel.size() != n || pos[n - 1].x != float(n - 1)) {
                state.SkipWithError("create/raw: wrong contents");
                break;
            }
        }
    }
    set_items(state, n);
}

/// The tessera scenario on a world with `observed` observers (see Observed): `every` counts
/// the spawns with on_spawn, subscribed before the timed region like the others.
void create_tessera_with(benchmark::State& state, Observed observed, const std::string& name) {
    const std::size_t n = entity_count();
    bool checked = false;
    for (auto _ : state) {
        tessera::World world;  // constructed and destroyed outside the timed region
        std::size_t spawned = 0;
        tessera::Observer keep;
        if (observed == Observed::unrelated)
            keep = world.on_add<Unrelated>([](tessera::World&, tessera::Entity) {});
        if (observed == Observed::every)
            keep = world.on_spawn([&spawned](tessera::World&, tessera::Entity) { ++spawned; });
        tessera::Entity last{};
        Stopwatch watch;
        for (std::size_t i = 0; i < n; ++i) {
            last = world.spawn(Position{static_cast<float>(i), 0.0f}, Velocity{1.0f, 1.0f});
        }
        benchmark::DoNotOptimize(last);
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        if (!checked) {
            checked = true;
            if (world.count() != n || world.get<Position>(last).x != float(n - 1) ||
                world.get<Velocity>(last).dy != 1.0f) {
                state.SkipWithError((name + ": wrong count or values").c_str());
                break;
            }
            if (spawned != (observed == Observed::every ? n : 0)) {
                state.SkipWithError((name + ": wrong on_spawn count").c_str());
                break;
            }
        }
    }
    set_items(state, n);
}

void create_tessera(benchmark::State& state) {
    create_tessera_with(state, Observed::none, "create/tessera");
}
void create_tessera_unrelated_observer(benchmark::State& state) {
    create_tessera_with(state, Observed::unrelated, "create/tessera_unrelated_observer");
}
void create_tessera_observed(benchmark::State& state) {
    create_tessera_with(state, Observed::every, "create/tessera_observed");
}

BENCHMARK(create_raw)->Name("create/raw")->Apply(setup_heavy);
BENCHMARK(create_tessera)->Name("create/tessera")->Apply(setup_heavy);
BENCHMARK(create_tessera_unrelated_observer)
    ->Name("create/tessera_unrelated_observer")
    ->Apply(setup_heavy);
BENCHMARK(create_tessera_observed)->Name("create/tessera_observed")->Apply(setup_heavy);

}  // namespace
}  // namespace tessera_bench

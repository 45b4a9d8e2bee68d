// destroy: a world with N entities of Position+Velocity (built untimed); despawn all, one at a
// time, in creation order. Raw baseline: pop_back one at a time (a floor, not an equivalent).
// Also on a world with an observer of an unrelated type, and with an on_despawn observer
// counting the despawns; and in bulk: `despawn(span)` of every handle in creation order
// (`tessera_span`), and `despawn_all(query)` of the query of both components (`tessera_query`).
#include "common.hpp"

#include <tessera/observer.hpp>
#include <tessera/tessera.hpp>

#include <span>
#include <string>
#include <vector>

namespace tessera_bench {
namespace {

void destroy_raw(benchmark::State& state) {
    const std::size_t n = entity_count();
    bool checked = false;
    for (auto _ : state) {
        AlignedVector<Position> pos(n, Position{0.0f, 0.0f});
        AlignedVector<Velocity> vel(n, Velocity{1.0f, 1.0f});
        Stopwatch watch;
        for (std::size_t i = 0; i < n; ++i) {
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
    set_items(state, n);
}

/// How the timed region despawns: one call per handle, one call with every handle, one call
/// with a query.
enum class Calls { one_at_a_time, span, query };

/// The tessera scenario on a world with `observed` observers (see Observed), subscribed after
/// the untimed spawn: `every` counts the despawns with on_despawn.
void destroy_tessera_with(benchmark::State& state, Observed observed, const std::string& name,
                          Calls calls = Calls::one_at_a_time) {
    const std::size_t n = entity_count();
    bool checked = false;
    for (auto _ : state) {
        tessera::World world;  // constructed and destroyed outside the timed region
        std::span<const tessera::Entity> spawned =
            world.spawn_many(n, [](std::size_t i, Position& p, Velocity& v) {
                p = Position{static_cast<float>(i), 0.0f};
                v = Velocity{1.0f, 1.0f};
            });
        // The span dies with the first despawn: keep a copy of the handles.
        const std::vector<tessera::Entity> handles(spawned.begin(), spawned.end());
        std::size_t observed_despawns = 0;
        tessera::Observer keep;
        if (observed == Observed::unrelated)
            keep = world.on_add<Unrelated>([](tessera::World&, tessera::Entity) {});
        if (observed == Observed::every) {
            keep = world.on_despawn(
                [&observed_despawns](tessera::World&, tessera::Entity) { ++observed_despawns; });
        }
        std::size_t despawned = 0;
        auto both = world.query<const Position&, const Velocity&>();
        Stopwatch watch;
        if (calls == Calls::span) {
            despawned = world.despawn(std::span<const tessera::Entity>(handles));
        } else if (calls == Calls::query) {
            despawned = world.despawn_all(both);
        } else {
            for (const tessera::Entity e : handles) despawned += world.despawn(e) ? 1 : 0;
        }
        benchmark::DoNotOptimize(despawned);
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        if (!checked) {
            checked = true;
            if (despawned != n || world.count() != 0 || world.is_alive(handles[n / 2])) {
                state.SkipWithError((name + ": entities left alive").c_str());
                break;
            }
            if (observed_despawns != (observed == Observed::every ? n : 0)) {
                state.SkipWithError((name + ": wrong on_despawn count").c_str());
                break;
            }
        }
    }
    set_items(state, n);
}

void destroy_tessera(benchmark::State& state) {
    destroy_tessera_with(state, Observed::none, "destroy/tessera");
}
void destroy_tessera_unrelated_observer(benchmark::State& state) {
    destroy_tessera_with(state, Observed::unrelated, "destroy/tessera_unrelated_observer");
}
void destroy_tessera_observed(benchmark::State& state) {
    destroy_tessera_with(state, Observed::every, "destroy/tessera_observed");
}
void destroy_tessera_span(benchmark::State& state) {
    destroy_tessera_with(state, Observed::none, "destroy/tessera_span", Calls::span);
}
void destroy_tessera_query(benchmark::State& state) {
    destroy_tessera_with(state, Observed::none, "destroy/tessera_query", Calls::query);
}

BENCHMARK(destroy_raw)->Name("destroy/raw")->Apply(setup_heavy);
BENCHMARK(destroy_tessera)->Name("destroy/tessera")->Apply(setup_heavy);
BENCHMARK(destroy_tessera_unrelated_observer)
    ->Name("destroy/tessera_unrelated_observer")
    ->Apply(setup_heavy);
BENCHMARK(destroy_tessera_observed)->Name("destroy/tessera_observed")->Apply(setup_heavy);
BENCHMARK(destroy_tessera_span)->Name("destroy/tessera_span")->Apply(setup_heavy);
BENCHMARK(destroy_tessera_query)->Name("destroy/tessera_query")->Apply(setup_heavy);

}  // namespace
}  // namespace tessera_bench

// Cost by the number of archetypes alive: the operations that touch one table, with 10, 1,000
// and 10,000 archetypes in the world (docs/benchmarks.md, "Archetype count"). The world: one
// entity per archetype, each with Position and its own combination of 14 runtime tags, and one
// entity (in its own archetype) with Position and Velocity.
//
// archetypes/query_first/<A>: make a new query<Position&, const Velocity&> and run it once (the
//   first run matches the query against the tables); it visits the one entity with Velocity.
// archetypes/move/<A>: add a Data to an entity and remove it again (one structural change
//   each way, the edges cached after the first iteration); item = one add+remove pair.
// archetypes/move_pair/<A>: the same with Data and Velocity added in one call and removed in
//   one call (a two-component move finds its table by its id set, not by an edge).
// No raw baseline: the figure is how each cost changes with the archetype count.
#include "common.hpp"

#include <tessera/tessera.hpp>

#include <string>
#include <vector>

namespace tessera_bench {
namespace {

constexpr std::size_t kTags = 14;  // 2^14 = 16,384 combinations: enough for 10,000 archetypes

struct Crowd {
    tessera::World world;
    tessera::Entity mover;
    tessera::Entity target;
};

/// `archetypes` distinct tables (one entity each) besides the mover's and the empty one.
void populate(Crowd& c, std::size_t archetypes) {
    tessera::World& w = c.world;
    std::vector<tessera::ComponentId> tags;
    for (std::size_t b = 0; b < kTags; ++b) tags.push_back(w.component("Bit" + std::to_string(b)));
    for (std::size_t i = 0; i < archetypes; ++i) {
        const tessera::Entity e = w.spawn(Position{static_cast<float>(i), 0.0f});
        for (std::size_t b = 0; b < kTags; ++b) {
            if ((i >> b & 1) != 0) w.add(e, tags[b]);
        }
        if (i == archetypes / 2) c.target = e;
    }
    c.mover = w.spawn(Position{1.0f, 2.0f}, Velocity{0.5f, 0.5f});
}

void query_first(benchmark::State& state) {
    Crowd c;
    populate(c, static_cast<std::size_t>(state.range(0)));
    for (auto _ : state) {
        float sum = 0.0f;
        c.world.query<Position&, const Velocity&>().each(
            [&](Position& p, const Velocity& v) { sum += p.x + v.dx; });
        benchmark::DoNotOptimize(sum);
    }
    state.counters["archetypes"] = static_cast<double>(c.world.archetype_count());
    state.SetItemsProcessed(state.iterations());
}

void move(benchmark::State& state) {
    Crowd c;
    populate(c, static_cast<std::size_t>(state.range(0)));
    const tessera::Entity e = c.target;
    for (auto _ : state) {
        c.world.add(e, Data{1.0f});
        benchmark::DoNotOptimize(c.world.remove<Data>(e));
    }
    if (c.world.has<Data>(e) || !c.world.has<Position>(e))
        state.SkipWithError("archetypes/move: Data left after remove, or Position lost");
    state.counters["archetypes"] = static_cast<double>(c.world.archetype_count());
    state.SetItemsProcessed(state.iterations());
}

void move_pair(benchmark::State& state) {
    Crowd c;
    populate(c, static_cast<std::size_t>(state.range(0)));
    const tessera::Entity e = c.target;
    for (auto _ : state) {
        c.world.add(e, Data{1.0f}, Velocity{1.0f, 1.0f});
        benchmark::DoNotOptimize(c.world.remove<Data, Velocity>(e));
    }
    if (c.world.has<Data>(e) || c.world.has<Velocity>(e) || !c.world.has<Position>(e))
        state.SkipWithError("archetypes/move_pair: Data or Velocity left, or Position lost");
    state.counters["archetypes"] = static_cast<double>(c.world.archetype_count());
    state.SetItemsProcessed(state.iterations());
}

void counts(benchmark::internal::Benchmark* b) {
    b->Arg(10)->Arg(1000)->Arg(10000)->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(query_first)->Name("archetypes/query_first")->Apply(counts);
BENCHMARK(move)->Name("archetypes/move")->Apply(counts);
BENCHMARK(move_pair)->Name("archetypes/move_pair")->Apply(counts);

}  // namespace
}  // namespace tessera_bench

// add_remove: 10,000 entities with A; add B{0} to each, then remove B from each. One item = one
// add+remove pair. Raw baseline: a presence flag per entity (a floor, not an equivalent).
#include "common.hpp"

#include <tessera/tessera.hpp>

#include <span>
#include <vector>

namespace tessera_bench {
namespace {

void add_remove_raw(benchmark::State& state) {
    AlignedVector<A> values(kAddRemoveN, A{1.0f});
    AlignedVector<std::uint8_t> has_b(kAddRemoveN, 0);
    benchmark::DoNotOptimize(values.data());
    for (auto _ : state) {
        for (std::size_t i = 0; i < kAddRemoveN; ++i) has_b[i] = 1;
        benchmark::DoNotOptimize(has_b.data());
        benchmark::ClobberMemory();
        for (std::size_t i = 0; i < kAddRemoveN; ++i) has_b[i] = 0;
        benchmark::DoNotOptimize(has_b.data());
        benchmark::ClobberMemory();
    }
    for (const std::uint8_t flag : has_b) {
        if (flag != 0) {
            state.SkipWithError("add_remove/raw: a B flag is left");
            break;
        }
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kAddRemoveN));
}

void add_remove_tessera(benchmark::State& state) {
    tessera::World world;
    std::span<const tessera::Entity> spawned =
        world.spawn_many(kAddRemoveN, [](std::size_t, A& a) { a = A{1.0f}; });
    const std::vector<tessera::Entity> handles(spawned.begin(), spawned.end());
    bool checked = false;
    for (auto _ : state) {
        for (const tessera::Entity e : handles) world.add(e, B{0.0f});
        if (!checked) {
            checked = true;
            // Not timed separately: one lookup per run is noise next to 10,000 adds.
            if (!world.has<B>(handles.front()) || !world.has<B>(handles.back())) {
                state.SkipWithError("add_remove/tessera: B missing after add");
                break;
            }
        }
        std::size_t removed = 0;
        for (const tessera::Entity e : handles) removed += world.remove<B>(e) ? 1 : 0;
        benchmark::DoNotOptimize(removed);
    }
    if (!state.error_occurred()) {
        for (const tessera::Entity e : handles) {
            if (world.has<B>(e) || !world.has<A>(e)) {
                state.SkipWithError("add_remove/tessera: B left after remove, or A lost");
                break;
            }
        }
        if (world.count() != kAddRemoveN) {
            state.SkipWithError("add_remove/tessera: wrong entity count");
        }
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kAddRemoveN));
}

BENCHMARK(add_remove_raw)->Name("add_remove/raw")->Apply(steady);
BENCHMARK(add_remove_tessera)->Name("add_remove/tessera")->Apply(steady);

}  // namespace
}  // namespace tessera_bench

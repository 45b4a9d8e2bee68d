// add_remove: 10,000 entities with A (the --tessera-n count in a size sweep); add B{0} to each,
// then remove B from each. One item = one add+remove pair. Raw baseline: a presence flag per
// entity (a floor, not an equivalent). Also on a world with an observer of an unrelated type,
// and with on_add<B> and on_remove<B> observers counting every add and remove.
#include "common.hpp"

#include <tessera/observer.hpp>
#include <tessera/tessera.hpp>

#include <span>
#include <string>
#include <vector>

namespace tessera_bench {
namespace {

void add_remove_raw(benchmark::State& state) {
    const std::size_t n = entity_count(kAddRemoveN);
    AlignedVector<A> values(n, A{1.0f});
    AlignedVector<std::uint8_t> has_b(n, 0);
    benchmark::DoNotOptimize(values.data());
    for (auto _ : state) {
        for (std::size_t i = 0; i < n; ++i) has_b[i] = 1;
        benchmark::DoNotOptimize(has_b.data());
        benchmark::ClobberMemory();
        for (std::size_t i = 0; i < n; ++i) has_b[i] = 0;
        benchmark::DoNotOptimize(has_b.data());
        benchmark::ClobberMemory();
    }
    for (const std::uint8_t flag : has_b) {
        if (flag != 0) {
            state.SkipWithError("add_remove/raw: a B flag is left");
            break;
        }
    }
    set_items(state, n);
}

/// The tessera scenario on a world with `observed` observers (see Observed), subscribed after
/// the spawn: `every` counts the adds and removes of B with on_add<B> and on_remove<B>.
void add_remove_tessera_with(benchmark::State& state, Observed observed, const std::string& name) {
    const std::size_t n = entity_count(kAddRemoveN);
    tessera::World world;
    std::span<const tessera::Entity> spawned =
        world.spawn_many(n, [](std::size_t, A& a) { a = A{1.0f}; });
    const std::vector<tessera::Entity> handles(spawned.begin(), spawned.end());
    std::int64_t added = 0;
    std::int64_t removed_seen = 0;
    tessera::Observer keep_add;
    tessera::Observer keep_remove;
    if (observed == Observed::unrelated)
        keep_add = world.on_add<Unrelated>([](tessera::World&, tessera::Entity) {});
    if (observed == Observed::every) {
        keep_add = world.on_add<B>([&added](tessera::World&, tessera::Entity) { ++added; });
        keep_remove = world.on_remove<B>(
            [&removed_seen](tessera::World&, tessera::Entity) { ++removed_seen; });
    }
    bool checked = false;
    for (auto _ : state) {
        for (const tessera::Entity e : handles) world.add(e, B{0.0f});
        if (!checked) {
            checked = true;
            // Not timed separately: one lookup per run is noise next to 10,000 adds.
            if (!world.has<B>(handles.front()) || !world.has<B>(handles.back())) {
                state.SkipWithError((name + ": B missing after add").c_str());
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
                state.SkipWithError((name + ": B left after remove, or A lost").c_str());
                break;
            }
        }
        if (world.count() != n) {
            state.SkipWithError((name + ": wrong entity count").c_str());
        }
        const std::int64_t expected =
            observed == Observed::every ? state.iterations() * static_cast<std::int64_t>(n) : 0;
        if (!state.error_occurred() && (added != expected || removed_seen != expected)) {
            state.SkipWithError((name + ": wrong on_add / on_remove count").c_str());
        }
    }
    set_items(state, n);
}

void add_remove_tessera(benchmark::State& state) {
    add_remove_tessera_with(state, Observed::none, "add_remove/tessera");
}
void add_remove_tessera_unrelated_observer(benchmark::State& state) {
    add_remove_tessera_with(state, Observed::unrelated, "add_remove/tessera_unrelated_observer");
}
void add_remove_tessera_observed(benchmark::State& state) {
    add_remove_tessera_with(state, Observed::every, "add_remove/tessera_observed");
}

BENCHMARK(add_remove_raw)->Name("add_remove/raw")->Apply(steady);
BENCHMARK(add_remove_tessera)->Name("add_remove/tessera")->Apply(steady);
BENCHMARK(add_remove_tessera_unrelated_observer)
    ->Name("add_remove/tessera_unrelated_observer")
    ->Apply(steady);
BENCHMARK(add_remove_tessera_observed)->Name("add_remove/tessera_observed")->Apply(steady);

}  // namespace
}  // namespace tessera_bench

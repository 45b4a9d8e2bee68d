// sparse: components with storage_kind::sparse (docs/sparse.md).
//   sparse_add_remove: 10,000 entities with A; add a sparse SB{0} to each, then remove it from
//     each (one item = one add+remove pair). `table` is the same with the table component B
//     (add_remove/tessera's loop, in this file so one run gives both); `raw` sets and clears a
//     presence flag per entity (a floor, as add_remove/raw).
//   sparse_query: 1,000,000 entities with A, every tenth with a sparse SB; a query<SB&> adds
//     1 to each SB (one item = one SB). `raw` is the same loop over a dense std::vector of the
//     100,000 values (the set's dense array without the set).
#include "common.hpp"

#include <tessera/tessera.hpp>

#include <span>
#include <vector>

namespace tessera_bench {
struct SB {
    float v;
};
}  // namespace tessera_bench

template <>
struct tessera::component_traits<tessera_bench::SB> {
    static constexpr auto storage = tessera::storage_kind::sparse;
};

namespace tessera_bench {
namespace {

constexpr std::size_t kSparseQueryN = 1'000'000;
constexpr std::size_t kSparseEvery = 10;

void sparse_add_remove_raw(benchmark::State& state) {
    const std::size_t n = entity_count(kAddRemoveN);
    AlignedVector<std::uint8_t> has(n, 0);
    for (auto _ : state) {
        for (std::size_t i = 0; i < n; ++i) has[i] = 1;
        benchmark::DoNotOptimize(has.data());
        benchmark::ClobberMemory();
        for (std::size_t i = 0; i < n; ++i) has[i] = 0;
        benchmark::DoNotOptimize(has.data());
        benchmark::ClobberMemory();
    }
    set_items(state, n);
}

template <class C>
void sparse_add_remove_with(benchmark::State& state, const char* name) {
    const std::size_t n = entity_count(kAddRemoveN);
    tessera::World world;
    std::span<const tessera::Entity> spawned =
        world.spawn_many(n, [](std::size_t, A& a) { a = A{1.0f}; });
    const std::vector<tessera::Entity> handles(spawned.begin(), spawned.end());
    const std::size_t archetypes = world.archetype_count();
    for (auto _ : state) {
        for (const tessera::Entity e : handles) world.add(e, C{0.0f});
        std::size_t removed = 0;
        for (const tessera::Entity e : handles) removed += world.remove<C>(e) ? 1 : 0;
        benchmark::DoNotOptimize(removed);
        if (removed != n) {
            state.SkipWithError(name);
            break;
        }
    }
    if (tessera::detail::sparse_v<C> && world.archetype_count() != archetypes)
        state.SkipWithError("sparse_add_remove/tessera: an archetype was made");
    set_items(state, n);
}

void sparse_add_remove_tessera(benchmark::State& state) {
    sparse_add_remove_with<SB>(state, "sparse_add_remove/tessera: an add or remove failed");
}
void sparse_add_remove_table(benchmark::State& state) {
    sparse_add_remove_with<B>(state, "sparse_add_remove/table: an add or remove failed");
}

void sparse_query_raw(benchmark::State& state) {
    const std::size_t n = entity_count(kSparseQueryN) / kSparseEvery;
    AlignedVector<SB> values(n, SB{0.0f});
    for (auto _ : state) {
        for (SB& v : values) v.v += 1.0f;
        benchmark::DoNotOptimize(values.data());
        benchmark::ClobberMemory();
    }
    if (values[n / 2].v != static_cast<float>(state.iterations()))
        state.SkipWithError("sparse_query/raw: wrong value");
    set_items(state, n);
}

void sparse_query_tessera(benchmark::State& state) {
    const std::size_t total = entity_count(kSparseQueryN);
    tessera::World world;
    std::span<const tessera::Entity> spawned =
        world.spawn_many(total, [](std::size_t, A& a) { a = A{1.0f}; });
    const std::vector<tessera::Entity> handles(spawned.begin(), spawned.end());
    for (std::size_t i = 0; i < total; i += kSparseEvery) world.add(handles[i], SB{0.0f});
    auto q = world.query<SB&>();
    for (auto _ : state) {
        q.each([](SB& v) { v.v += 1.0f; });
        benchmark::ClobberMemory();
    }
    if (world.get<SB>(handles[0]).v != static_cast<float>(state.iterations()))
        state.SkipWithError("sparse_query/tessera: wrong value");
    set_items(state, total / kSparseEvery);
}

/// The same with a table term beside the sparse one (the set drives, each entity's table is
/// looked up): query<const A&, SB&>.
void sparse_query_tessera_joined(benchmark::State& state) {
    const std::size_t total = entity_count(kSparseQueryN);
    tessera::World world;
    std::span<const tessera::Entity> spawned =
        world.spawn_many(total, [](std::size_t, A& a) { a = A{1.0f}; });
    const std::vector<tessera::Entity> handles(spawned.begin(), spawned.end());
    for (std::size_t i = 0; i < total; i += kSparseEvery) world.add(handles[i], SB{0.0f});
    auto q = world.query<const A&, SB&>();
    for (auto _ : state) {
        q.each([](const A& a, SB& v) { v.v += a.v; });
        benchmark::ClobberMemory();
    }
    if (world.get<SB>(handles[0]).v != static_cast<float>(state.iterations()))
        state.SkipWithError("sparse_query/tessera_joined: wrong value");
    set_items(state, total / kSparseEvery);
}

BENCHMARK(sparse_add_remove_raw)->Name("sparse_add_remove/raw")->Apply(steady);
BENCHMARK(sparse_add_remove_tessera)->Name("sparse_add_remove/tessera")->Apply(steady);
BENCHMARK(sparse_add_remove_table)->Name("sparse_add_remove/table")->Apply(steady);
BENCHMARK(sparse_query_raw)->Name("sparse_query/raw")->Apply(steady);
BENCHMARK(sparse_query_tessera)->Name("sparse_query/tessera")->Apply(steady);
BENCHMARK(sparse_query_tessera_joined)->Name("sparse_query/tessera_joined")->Apply(steady);

}  // namespace
}  // namespace tessera_bench

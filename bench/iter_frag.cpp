// iter_frag: 26 archetypes x 20 entities, one per component type Data0..Data25 (each {float v}),
// every entity also with Data; one pass over Data `v *= 2` through a cached Query<Data&> (Data
// not tracked). Raw baseline: 26 separate std::vector<Data> of 20, looped in turn. Item = one
// entity (520 per pass).
//
// Overflow: repeated doubling would reach inf after ~128 passes, so both variants multiply by a
// runtime factor that alternates 2 and 0.5 from pass to pass (one multiply per entity either
// way, the same work as `v *= 2`). Values are powers of two times small integers, so every
// product is exact: after an even number of passes each value is back to its initial one, after
// an odd number it is twice that, and the check after the timed loop is an equality. A first
// untimed pass (factor 2) is checked the same way before timing.
#include "common.hpp"

#include <tessera/tessera.hpp>

#include <array>
#include <cstddef>
#include <utility>
#include <vector>

namespace tessera_bench {
namespace {

/// DataK<0>..DataK<25> are the scenario's Data0..Data25: one archetype each, with Data.
template <std::size_t K>
struct DataK {
    float v;
};

inline constexpr std::size_t kFragTypes = 26;
inline constexpr std::size_t kFragPerType = 20;
inline constexpr std::size_t kFragN = kFragTypes * kFragPerType;

/// Initial Data value of entity `i` of archetype `k`.
float initial_value(std::size_t k, std::size_t i) {
    return static_cast<float>(k * kFragPerType + i + 1);
}

/// The factor of pass number `pass` (0-based): 2, 0.5, 2, 0.5, ...
float factor_of(std::uint64_t pass) {
    return (pass & 1) == 0 ? 2.0f : 0.5f;
}

/// Expected value of entity `i` of archetype `k` after `passes` passes.
float expected(std::size_t k, std::size_t i, std::uint64_t passes) {
    return initial_value(k, i) * ((passes & 1) == 0 ? 1.0f : 2.0f);
}

void iter_frag_raw(benchmark::State& state) {
    std::vector<std::vector<Data>> tables(kFragTypes);
    for (std::size_t k = 0; k < kFragTypes; ++k) {
        tables[k].resize(kFragPerType);
        for (std::size_t i = 0; i < kFragPerType; ++i) tables[k][i] = Data{initial_value(k, i)};
    }
    auto check = [&](std::uint64_t passes) {
        for (std::size_t k = 0; k < kFragTypes; ++k) {
            for (std::size_t i = 0; i < kFragPerType; ++i) {
                if (tables[k][i].v != expected(k, i, passes)) return false;
            }
        }
        return true;
    };
    // No benchmark::DoNotOptimize(factor): GCC 12.2 at -O2 miscompiles Google Benchmark 1.7.1's
    // "+m,r" asm on a float lvalue holding a constant (the store and the asm vanish; 2.0f read
    // back as 0.0f; compare google/benchmark#903). The factor is a runtime value anyway: from
    // the first timed pass on it depends on the pass count.
    float factor = 2.0f;
    auto pass = [&] {
        for (std::vector<Data>& t : tables) {
            for (Data& d : t) d.v *= factor;
        }
    };
    std::uint64_t passes = 0;
    pass();
    ++passes;
    if (!check(passes)) {
        state.SkipWithError("iter_frag/raw: wrong values after one pass");
        return;
    }
    for (auto _ : state) {
        factor = factor_of(passes++);
        pass();
        benchmark::ClobberMemory();
    }
    if (!check(passes)) state.SkipWithError("iter_frag/raw: wrong values after the passes");
    set_items(state, kFragN);
}

template <std::size_t... K>
std::vector<std::vector<tessera::Entity>> spawn_frag(tessera::World& world,
                                                     std::index_sequence<K...>) {
    std::vector<std::vector<tessera::Entity>> handles(kFragTypes);
    (
        [&] {
            for (std::size_t i = 0; i < kFragPerType; ++i) {
                handles[K].push_back(world.spawn(DataK<K>{0.0f}, Data{initial_value(K, i)}));
            }
        }(),
        ...);
    return handles;
}

void iter_frag_tessera(benchmark::State& state) {
    tessera::World world;
    const std::vector<std::vector<tessera::Entity>> handles =
        spawn_frag(world, std::make_index_sequence<kFragTypes>{});
    auto check = [&](std::uint64_t passes) {
        for (std::size_t k = 0; k < kFragTypes; ++k) {
            for (std::size_t i = 0; i < kFragPerType; ++i) {
                if (world.get<Data>(handles[k][i]).v != expected(k, i, passes)) return false;
            }
        }
        return true;
    };
    auto query = world.query<Data&>();  // built once, reused every pass
    if (query.count() != kFragN) {
        state.SkipWithError("iter_frag/tessera: the query does not match 520 entities");
        return;
    }
    float factor = 2.0f;
    auto pass = [&] { query.each([f = factor](Data& d) { d.v *= f; }); };
    std::uint64_t passes = 0;
    pass();
    ++passes;
    if (!check(passes)) {
        state.SkipWithError("iter_frag/tessera: wrong values after one pass");
        return;
    }
    for (auto _ : state) {
        factor = factor_of(passes++);
        pass();
        benchmark::ClobberMemory();
    }
    if (!check(passes)) state.SkipWithError("iter_frag/tessera: wrong values after the passes");
    set_items(state, kFragN);
}

BENCHMARK(iter_frag_raw)->Name("iter_frag/raw")->Apply(steady)->Unit(benchmark::kNanosecond);
BENCHMARK(iter_frag_tessera)
    ->Name("iter_frag/tessera")
    ->Apply(steady)
    ->Unit(benchmark::kNanosecond);

}  // namespace
}  // namespace tessera_bench

// propagate: a forest of 100,000 entities (the --tessera-n count in a size sweep), 8 levels deep
// at 100,000 (8 roots, each node with 4 children, filled level by level: parent(i) = (i - 8) / 4
// for i >= 8, so parent index < child index), each with a LocalTransform; per iteration the
// world matrices are recomputed. Item = one entity of the forest.
//   raw            world[i] = world[parent[i]] * local[i] over arrays in topological order (roots:
//                  world = local), with the library's column alignment (AlignedVector);
//   tessera        the same forest in a world (ChildOf, LocalTransform, WorldTransform);
//                  `propagate_transforms` after every LocalTransform changed (a full pass);
//   tessera_1pct   the same world, 1% of the LocalTransforms changed (a fixed random subset):
//                  `propagate_transforms` recomputes their subtrees only; per item = per entity
//                  of the whole forest, so it compares with `tessera` directly;
//   tessera_none   nothing changed: the cost of finding that out (no target).
// The local writes of every variant (all of them, or the 1%) are made outside the timed part:
// each iteration times only the propagation, with a Stopwatch (manual time; see steady_manual
// in common.hpp for why not PauseTiming). Values alternate between two sets,
// so the world matrices really change on every iteration. Each variant first checks one
// untimed step against the raw recurrence and reports an error instead of a figure on a
// mismatch (and tessera the returned count).
#include "common.hpp"

#include <tessera/relation.hpp>
#include <tessera/tessera.hpp>
#include <tessera/transform.hpp>

#include <glm/gtc/matrix_transform.hpp>
#include <glm/mat4x4.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace tessera_bench {
namespace {

inline constexpr std::size_t kForestN = 100'000;
inline constexpr std::size_t kForestRoots = 8;
inline constexpr std::size_t kBranching = 4;
inline constexpr std::size_t kNoParent = static_cast<std::size_t>(-1);

std::size_t parent_of(std::size_t i) {
    return i < kForestRoots ? kNoParent : (i - kForestRoots) / kBranching;
}

/// Local matrix of entity `i` in value set `k` (0 or 1): a small rotation and translation.
glm::mat4 local_of(std::size_t i, int k) {
    const float a = 0.01f * static_cast<float>(i % 31) + 0.05f * static_cast<float>(k);
    glm::mat4 m = glm::translate(
        glm::mat4(1.0f),
        glm::vec3(1.0f + 0.001f * static_cast<float>(i % 7), 0.5f * static_cast<float>(k), 0.25f));
    return glm::rotate(m, a, glm::vec3(0.0f, 0.0f, 1.0f));
}

/// The fixed 1% subset of tessera_1pct.
std::vector<std::size_t> one_percent(std::size_t n) {
    std::vector<std::size_t> all(n);
    for (std::size_t i = 0; i < n; ++i) all[i] = i;
    std::mt19937 rng(kSeed);
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(n / 100);
    std::sort(all.begin(), all.end());
    return all;
}

/// The raw recurrence over arrays in topological order.
void propagate_raw(std::size_t n, const std::size_t* parent, const glm::mat4* local,
                   glm::mat4* world) {
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t p = parent[i];
        world[i] = p == kNoParent ? local[i] : world[p] * local[i];
    }
}

/// World matrices of the forest when the locals of `changed` are in set `k` and the others in
/// set 0 (every local in set `k` when `changed` is null).
std::vector<glm::mat4> expected_worlds(std::size_t n, const std::vector<std::size_t>* changed,
                                       int k) {
    std::vector<std::size_t> parent(n);
    std::vector<glm::mat4> local(n);
    std::vector<glm::mat4> world(n);
    for (std::size_t i = 0; i < n; ++i) {
        parent[i] = parent_of(i);
        local[i] = local_of(i, changed == nullptr ? k : 0);
    }
    if (changed != nullptr) {
        for (const std::size_t i : *changed) local[i] = local_of(i, k);
    }
    propagate_raw(n, parent.data(), local.data(), world.data());
    return world;
}

bool near(const glm::mat4& a, const glm::mat4& b) {
    for (int c = 0; c < 4; ++c) {
        for (int r = 0; r < 4; ++r) {
            if (std::fabs(a[c][r] - b[c][r]) > 1e-3f * (1.0f + std::fabs(b[c][r]))) return false;
        }
    }
    return true;
}

void propagate_raw_bench(benchmark::State& state) {
    const std::size_t n = entity_count(kForestN);
    AlignedVector<std::size_t> parent(n);
    AlignedVector<glm::mat4> local(n);
    AlignedVector<glm::mat4> world(n);
    for (std::size_t i = 0; i < n; ++i) {
        parent[i] = parent_of(i);
        local[i] = local_of(i, 0);
    }
    auto set_locals = [&](int k) {
        for (std::size_t i = 0; i < n; ++i) local[i] = local_of(i, k);
    };
    set_locals(1);
    propagate_raw(n, parent.data(), local.data(), world.data());
    const std::vector<glm::mat4> want = expected_worlds(n, nullptr, 1);
    for (std::size_t i = 0; i < n; ++i) {
        if (!near(world[i], want[i])) {
            state.SkipWithError("propagate/raw: wrong world matrix");
            return;
        }
    }
    int k = 0;
    for (auto _ : state) {
        set_locals(k);
        k ^= 1;
        const Stopwatch watch;
        propagate_raw(n, parent.data(), local.data(), world.data());
        benchmark::DoNotOptimize(world.data());
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
    }
    set_items(state, n);
}

enum class Change { all, one_percent, none };

void propagate_tessera_bench(benchmark::State& state, Change change) {
    const char* name = change == Change::all           ? "propagate/tessera"
                       : change == Change::one_percent ? "propagate/tessera_1pct"
                                                       : "propagate/tessera_none";
    const std::size_t n = entity_count(kForestN);
    tessera::World world;
    std::vector<tessera::Entity> ent(n);
    for (std::size_t i = 0; i < n; ++i) {
        ent[i] = world.spawn(tessera::LocalTransform{local_of(i, 0)});
        if (parent_of(i) != kNoParent) world.relate(ent[i], tessera::ChildOf{}, ent[parent_of(i)]);
    }
    tessera::propagate_transforms(world);  // adds every WorldTransform
    const std::vector<std::size_t> subset = one_percent(n);
    auto set_locals = [&](int k) {
        if (change == Change::all) {
            for (std::size_t i = 0; i < n; ++i)
                world.get_mut<tessera::LocalTransform>(ent[i]).matrix = local_of(i, k);
        } else if (change == Change::one_percent) {
            for (const std::size_t i : subset)
                world.get_mut<tessera::LocalTransform>(ent[i]).matrix = local_of(i, k);
        }
    };
    // One untimed step, checked.
    set_locals(1);
    const std::size_t written = tessera::propagate_transforms(world);
    const std::vector<glm::mat4> want = expected_worlds(
        n, change == Change::all ? nullptr : &subset, change == Change::none ? 0 : 1);
    for (std::size_t i = 0; i < n; ++i) {
        if (!near(world.get<tessera::WorldTransform>(ent[i]).matrix, want[i])) {
            state.SkipWithError((std::string(name) + ": wrong world matrix").c_str());
            return;
        }
    }
    const bool count_ok = change == Change::all ? written == n
                          : change == Change::one_percent
                              ? written >= subset.size() && written < n / 4
                              : written == 0;
    if (!count_ok) {
        state.SkipWithError(
            (std::string(name) + ": unexpected written count " + std::to_string(written)).c_str());
        return;
    }
    int k = 0;
    for (auto _ : state) {
        set_locals(k);
        k ^= 1;
        const Stopwatch watch;
        benchmark::DoNotOptimize(tessera::propagate_transforms(world));
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
    }
    set_items(state, n);
    state.counters["written"] = static_cast<double>(written);
}

void propagate_tessera(benchmark::State& state) {
    propagate_tessera_bench(state, Change::all);
}
void propagate_tessera_1pct(benchmark::State& state) {
    propagate_tessera_bench(state, Change::one_percent);
}
void propagate_tessera_none(benchmark::State& state) {
    propagate_tessera_bench(state, Change::none);
}

BENCHMARK(propagate_raw_bench)->Name("propagate/raw")->Apply(steady_manual);
BENCHMARK(propagate_tessera)->Name("propagate/tessera")->Apply(steady_manual);
BENCHMARK(propagate_tessera_1pct)->Name("propagate/tessera_1pct")->Apply(steady_manual);
BENCHMARK(propagate_tessera_none)->Name("propagate/tessera_none")->Apply(steady_manual);

}  // namespace
}  // namespace tessera_bench

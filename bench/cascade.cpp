// cascade and up: hierarchy traversal in queries (traverse.hpp, Query::cascade).
//
// The hierarchy: 100,000 entities in 8 levels (depth 0 to 7): 5 roots, every entity 4
// children, the last level cut at 100,000; spawned level by level, each parent's children
// together (as a scene is loaded). Every entity has Local and Total; children are ChildOf
// their parent.
//
// cascade: one pass total = local + parent's total, parents first, so each entity's total is
// the sum of the locals on its path to the root.
//   raw             plain arrays in depth order (local, total, parent index), one loop;
//   tessera         a cached Query<Total&, const Local&, Up<const Total*>>, cascade(), each;
//   tessera_par     the same with par_each (one parallel loop per depth level).
// up: total = local + the nearest ancestor's Armor (Armor on levels 0 and 4 only, so a row
// may walk up to 3 parents without one), no cascade.
//   raw             the same walk over a parent-index array, row by row;
//   tessera         Query<Total&, const Local&, Up<const Armor*>>, each.
// Each variant checks one untimed pass against the expected sums first.
#include "common.hpp"

#include <tessera/tessera.hpp>
#include <tessera/traverse.hpp>

#include <cstdint>
#include <vector>

namespace tessera_bench {
namespace {

struct Local {
    std::int64_t v;
};
struct Total {
    std::int64_t v;
};
struct Armor {
    std::int64_t v;
};

constexpr std::size_t kCascadeN = 100'000;
constexpr std::size_t kRoots = 5;
constexpr std::size_t kFanout = 4;

/// The hierarchy as plain arrays, in spawn order (which is depth order): parent index (-1 for
/// a root), depth, local value.
struct Shape {
    std::vector<std::int32_t> parent;
    std::vector<std::uint32_t> depth;
    std::vector<std::int64_t> local;
};

Shape make_shape(std::size_t n) {
    Shape s;
    for (std::size_t i = 0; i < kRoots && i < n; ++i) {
        s.parent.push_back(-1);
        s.depth.push_back(0);
    }
    for (std::size_t p = 0; s.parent.size() < n; ++p) {
        for (std::size_t c = 0; c < kFanout && s.parent.size() < n; ++c) {
            s.parent.push_back(static_cast<std::int32_t>(p));
            s.depth.push_back(s.depth[p] + 1);
        }
    }
    for (std::size_t i = 0; i < n; ++i) s.local.push_back(static_cast<std::int64_t>(i % 7) + 1);
    return s;
}

bool has_armor(const Shape& s, std::size_t i) {
    return s.depth[i] == 0 || s.depth[i] == 4;
}
std::int64_t armor_of(std::size_t i) {
    return static_cast<std::int64_t>(i % 11) + 100;
}

/// The expected totals of each scenario, by a plain walk.
std::vector<std::int64_t> expected_cascade(const Shape& s) {
    std::vector<std::int64_t> t(s.local.size());
    for (std::size_t i = 0; i < t.size(); ++i)
        t[i] = s.local[i] + (s.parent[i] < 0 ? 0 : t[static_cast<std::size_t>(s.parent[i])]);
    return t;
}
std::vector<std::int64_t> expected_up(const Shape& s) {
    std::vector<std::int64_t> t(s.local.size());
    for (std::size_t i = 0; i < t.size(); ++i) {
        std::int32_t p = s.parent[i];
        while (p >= 0 && !has_armor(s, static_cast<std::size_t>(p))) p = s.parent[p];
        t[i] = s.local[i] + (p < 0 ? 0 : armor_of(static_cast<std::size_t>(p)));
    }
    return t;
}

/// A world holding `s`; `armor`: Armor on the entities `has_armor` names.
std::vector<tessera::Entity> build(tessera::World& w, const Shape& s, bool armor) {
    std::vector<tessera::Entity> es;
    es.reserve(s.parent.size());
    for (std::size_t i = 0; i < s.parent.size(); ++i) {
        const tessera::Entity e = w.spawn(Local{s.local[i]}, Total{0});
        if (armor && has_armor(s, i)) w.add(e, Armor{armor_of(i)});
        if (s.parent[i] >= 0)
            w.relate<tessera::ChildOf>(e, es[static_cast<std::size_t>(s.parent[i])]);
        es.push_back(e);
    }
    return es;
}

bool totals_match(tessera::World& w, const std::vector<tessera::Entity>& es,
                  const std::vector<std::int64_t>& want) {
    for (std::size_t i = 0; i < es.size(); ++i)
        if (w.get<Total>(es[i]).v != want[i]) return false;
    return true;
}

void cascade_raw(benchmark::State& state) {
    const Shape s = make_shape(kCascadeN);
    const std::size_t n = s.parent.size();
    AlignedVector<std::int64_t> local(s.local.begin(), s.local.end());
    AlignedVector<std::int64_t> total(n, 0);
    AlignedVector<std::int32_t> parent(s.parent.begin(), s.parent.end());
    auto pass = [&] {
        std::int64_t* const t = total.data();
        const std::int64_t* const l = local.data();
        const std::int32_t* const p = parent.data();
        for (std::size_t i = 0; i < n; ++i) t[i] = l[i] + (p[i] < 0 ? 0 : t[p[i]]);
    };
    pass();
    if (std::vector<std::int64_t>(total.begin(), total.end()) != expected_cascade(s)) {
        state.SkipWithError("cascade/raw: wrong totals");
        return;
    }
    for (auto _ : state) {
        pass();
        benchmark::DoNotOptimize(total.data());
        benchmark::ClobberMemory();
    }
    set_items(state, n);
}

void cascade_tessera(benchmark::State& state, bool parallel) {
    const Shape s = make_shape(kCascadeN);
    tessera::World w;
    const std::vector<tessera::Entity> es = build(w, s, false);
    auto q = w.query<Total&, const Local&, tessera::Up<const Total*>>().cascade();
    const auto step = [](Total& t, const Local& l, const Total* up) {
        t.v = l.v + (up == nullptr ? 0 : up->v);
    };
    auto pass = [&] {
        if (parallel)
            q.par_each(step);
        else
            q.each(step);
    };
    pass();
    if (!totals_match(w, es, expected_cascade(s))) {
        state.SkipWithError("cascade/tessera: wrong totals");
        return;
    }
    for (auto _ : state) {
        pass();
        benchmark::ClobberMemory();
    }
    set_items(state, es.size());
}
void cascade_each(benchmark::State& state) {
    cascade_tessera(state, false);
}
void cascade_par(benchmark::State& state) {
    cascade_tessera(state, true);
}

void up_raw(benchmark::State& state) {
    const Shape s = make_shape(kCascadeN);
    const std::size_t n = s.parent.size();
    AlignedVector<std::int64_t> local(s.local.begin(), s.local.end());
    AlignedVector<std::int64_t> total(n, 0);
    AlignedVector<std::int32_t> parent(s.parent.begin(), s.parent.end());
    AlignedVector<std::uint8_t> armored(n);
    AlignedVector<std::int64_t> armor(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
        armored[i] = has_armor(s, i) ? 1 : 0;
        armor[i] = has_armor(s, i) ? armor_of(i) : 0;
    }
    auto pass = [&] {
        std::int64_t* const t = total.data();
        const std::int64_t* const l = local.data();
        const std::int32_t* const p = parent.data();
        for (std::size_t i = 0; i < n; ++i) {
            std::int32_t a = p[i];
            while (a >= 0 && armored[static_cast<std::size_t>(a)] == 0) a = p[a];
            t[i] = l[i] + (a < 0 ? 0 : armor[static_cast<std::size_t>(a)]);
        }
    };
    pass();
    if (std::vector<std::int64_t>(total.begin(), total.end()) != expected_up(s)) {
        state.SkipWithError("up/raw: wrong totals");
        return;
    }
    for (auto _ : state) {
        pass();
        benchmark::DoNotOptimize(total.data());
        benchmark::ClobberMemory();
    }
    set_items(state, n);
}

void up_tessera(benchmark::State& state) {
    const Shape s = make_shape(kCascadeN);
    tessera::World w;
    const std::vector<tessera::Entity> es = build(w, s, true);
    auto q = w.query<Total&, const Local&, tessera::Up<const Armor*>>();
    auto pass = [&] {
        q.each([](Total& t, const Local& l, const Armor* a) {
            t.v = l.v + (a == nullptr ? 0 : a->v);
        });
    };
    pass();
    if (!totals_match(w, es, expected_up(s))) {
        state.SkipWithError("up/tessera: wrong totals");
        return;
    }
    for (auto _ : state) {
        pass();
        benchmark::ClobberMemory();
    }
    set_items(state, es.size());
}

}  // namespace

BENCHMARK(cascade_raw)->Name("cascade/raw")->Apply(steady);
BENCHMARK(cascade_each)->Name("cascade/tessera")->Apply(steady);
BENCHMARK(cascade_par)->Name("cascade/tessera_par")->Apply(steady);
BENCHMARK(up_raw)->Name("up/raw")->Apply(steady);
BENCHMARK(up_tessera)->Name("up/tessera")->Apply(steady);

}  // namespace tessera_bench

// iter_simple: N entities with Position and Velocity; one pass p.x += v.dx*dt; p.y += v.dy*dt.
// Raw baseline: the same loop over two vectors allocated with the library's column alignment
// (AlignedVector). Variants:
//   tessera          a cached Query<Position&, const Velocity&>, `each` per pass, Position not
//                    tracked (the T& term stamps nothing);
//   tessera_tracked  the same with change tracking on for Position (turned on by one
//                    changed_tick call in setup), so every pass also stamps each row's tick;
//   tessera_chunks   `each_chunk`, the loop written over the column spans.
// Every variant applies the same `Step` per element. Each checks one untimed pass first
// (positions moved by v*dt) and reports an error instead of a figure on a mismatch; the timed
// passes then keep integrating (values stay small: ~|v| * passes / 60).
#include "common.hpp"

#include <tessera/tessera.hpp>

#include <cmath>
#include <span>
#include <string>
#include <vector>

namespace tessera_bench {
namespace {

/// The per-entity work of every variant.
struct Step {
    void operator()(Position& p, const Velocity& v) const noexcept {
        p.x += v.dx * kDt;
        p.y += v.dy * kDt;
    }
};

Position initial_position(std::size_t i) {
    return Position{static_cast<float>(i % 1024), static_cast<float>(i % 512)};
}
Velocity initial_velocity(std::size_t i) {
    return Velocity{static_cast<float>(i % 7) + 1.0f, static_cast<float>(i % 5) - 2.0f};
}

/// Whether `p` is where one pass from the initial values puts entity `i`.
bool moved_once(std::size_t i, const Position& p) {
    Position want = initial_position(i);
    Step{}(want, initial_velocity(i));
    auto near = [](float a, float b) { return std::fabs(a - b) <= 1e-5f * (1.0f + std::fabs(b)); };
    return near(p.x, want.x) && near(p.y, want.y);
}

void iter_simple_raw(benchmark::State& state) {
    const std::size_t n = entity_count();
    AlignedVector<Position> pos(n);
    AlignedVector<Velocity> vel(n);
    for (std::size_t i = 0; i < n; ++i) {
        pos[i] = initial_position(i);
        vel[i] = initial_velocity(i);
    }
    auto pass = [&] {
        Position* const p = pos.data();
        const Velocity* const v = vel.data();
        for (std::size_t i = 0; i < n; ++i) Step{}(p[i], v[i]);
    };
    pass();
    for (std::size_t i = 0; i < n; ++i) {
        if (!moved_once(i, pos[i])) {
            state.SkipWithError("iter_simple/raw: positions did not move by v*dt");
            return;
        }
    }
    for (auto _ : state) {
        pass();
        benchmark::DoNotOptimize(pos.data());
        benchmark::ClobberMemory();
    }
    set_items(state, n);
}

enum class Mode { each, each_tracked, chunks };

void iter_simple_tessera(benchmark::State& state, Mode mode) {
    const std::size_t n = entity_count();
    tessera::World world;
    const std::span<const tessera::Entity> spawned =
        world.spawn_many(n, [](std::size_t i, Position& p, Velocity& v) {
            p = initial_position(i);
            v = initial_velocity(i);
        });
    const std::vector<tessera::Entity> handles(spawned.begin(), spawned.end());
    if (mode == Mode::each_tracked) {
        // Turns on change tracking for Position: the T& term now stamps every row it visits.
        (void)world.changed_tick<Position>(handles.front());
        world.advance_tick();  // so the check below can tell a stamped row from setup's stamp
    }
    auto query = world.query<Position&, const Velocity&>();  // built once, reused every pass
    auto pass = [&] {
        if (mode == Mode::chunks) {
            query.each_chunk(
                [](const tessera::Chunk&, std::span<Position> p, std::span<const Velocity> v) {
                    Position* const pp = p.data();
                    const Velocity* const vp = v.data();
                    const std::size_t count = p.size();
                    for (std::size_t i = 0; i < count; ++i) Step{}(pp[i], vp[i]);
                });
        } else {
            query.each(Step{});
        }
    };
    pass();
    const char* name = mode == Mode::each           ? "iter_simple/tessera"
                       : mode == Mode::each_tracked ? "iter_simple/tessera_tracked"
                                                    : "iter_simple/tessera_chunks";
    for (std::size_t i = 0; i < n; ++i) {
        if (!moved_once(i, world.get<Position>(handles[i]))) {
            state.SkipWithError((std::string(name) + ": positions did not move by v*dt").c_str());
            return;
        }
    }
    if (mode == Mode::each_tracked &&
        world.changed_tick<Position>(handles.back()) != world.tick()) {
        state.SkipWithError("iter_simple/tessera_tracked: the pass stamped no changed tick");
        return;
    }
    for (auto _ : state) {
        pass();
        benchmark::ClobberMemory();
    }
    set_items(state, n);
}

void iter_simple_each(benchmark::State& state) {
    iter_simple_tessera(state, Mode::each);
}
void iter_simple_tracked(benchmark::State& state) {
    iter_simple_tessera(state, Mode::each_tracked);
}
void iter_simple_chunks(benchmark::State& state) {
    iter_simple_tessera(state, Mode::chunks);
}

BENCHMARK(iter_simple_raw)->Name("iter_simple/raw")->Apply(steady);
BENCHMARK(iter_simple_each)->Name("iter_simple/tessera")->Apply(steady);
BENCHMARK(iter_simple_tracked)->Name("iter_simple/tessera_tracked")->Apply(steady);
BENCHMARK(iter_simple_chunks)->Name("iter_simple/tessera_chunks")->Apply(steady);

}  // namespace
}  // namespace tessera_bench

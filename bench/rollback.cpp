// rollback: a late input 8 frames back, at N = 10,000 entities (Pos, Vel and Hp, reflected) run
// by a schedule of three systems on one worker: `steer` (adds the frame's input to every Vel),
// `move` (Pos += Vel * dt) and `wear` (Hp decays with speed). Item = one entity-frame (80,000
// per iteration: 8 frames of 10,000 entities).
//   correct8    net::Rollback<Pad>::correct(frame() - 8, input) on a ring of 8 frames: one
//               snapshot of the present, one restore, 8 schedule runs, 7 snapshots, 8 hashes;
//   advance     net::Rollback<Pad>::advance, one frame (a snapshot, the run, a hash): the
//               per-frame cost of keeping the ring, times 8 to compare per item;
//   hash        net::Rollback<Pad>::hash(frame() - 1): the state_hash peers exchange to detect
//               a desync (of the live world; per entity, 10,000 items);
//   raw         the raw baseline: World::restore of a snapshot taken once, then 8 plain
//               Schedule::run frames with the Inputs resource set by hand (what a replay cannot
//               do with less).
// Each variant checks, untimed, that a correction equals a straight run (state_hash).
#include "common.hpp"

#include <tessera/net/rollback.hpp>
#include <tessera/tessera.hpp>

#include <cstddef>
#include <cstdint>

namespace bench_rollback {
struct Pos {
    float x, y;
};
struct Vel {
    float dx, dy;
};
struct Hp {
    float v;
};
struct Pad {
    float ax = 0.0f;
    float ay = 0.0f;
};
}  // namespace bench_rollback

TESSERA_REFLECT(bench_rollback::Pos, x, y)
TESSERA_REFLECT(bench_rollback::Vel, dx, dy)
TESSERA_REFLECT(bench_rollback::Hp, v)

namespace tessera_bench {
namespace {

using bench_rollback::Hp;
using bench_rollback::Pad;
using bench_rollback::Pos;
using bench_rollback::Vel;
using In = tessera::net::Inputs<Pad>;

constexpr std::size_t kRollbackN = 10'000;
constexpr std::uint64_t kDepth = 8;

void build(tessera::World& w, tessera::Schedule& s) {
    for (std::size_t i = 0; i < kRollbackN; ++i) {
        const auto f = static_cast<float>(i);
        w.spawn(Pos{f, -f}, Vel{1.0f, 0.5f}, Hp{100.0f});
    }
    s.add("steer", [](tessera::View<Vel&> v, tessera::Res<In> in) {
        v.each([&](Vel& vel) {
            vel.dx += in->value.ax;
            vel.dy += in->value.ay;
        });
    });
    s.add("move", [](tessera::View<Pos&, const Vel&> v, float dt) {
         v.each([&](Pos& p, const Vel& vel) {
             p.x += vel.dx * dt;
             p.y += vel.dy * dt;
         });
     }).after("steer");
    s.add("wear", [](tessera::View<Hp&, const Vel&> v) {
         v.each(
             [](Hp& hp, const Vel& vel) { hp.v -= 0.001f * (vel.dx * vel.dx + vel.dy * vel.dy); });
     }).after("steer");
}

Pad pad(std::uint64_t f) {
    return Pad{0.01f * static_cast<float>(f % 5), -0.02f * static_cast<float>(f % 3)};
}

void items(benchmark::State& state) {
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kRollbackN * kDepth));
}

/// The straight run of frames [0, frames) with pad(f), except `late` for frame `at`.
std::uint64_t straight_hash(std::uint64_t frames, std::uint64_t at, Pad late) {
    tessera::World w;
    tessera::Schedule s(1);
    build(w, s);
    for (std::uint64_t f = 0; f < frames; ++f) {
        w.insert_resource(In{f == at ? late : pad(f), f});
        s.run(w, kDt);
    }
    return tessera::state_hash(w);
}

void rollback_correct8(benchmark::State& state) {
    tessera::World w;
    tessera::Schedule s(1);
    build(w, s);
    tessera::net::Rollback<Pad> rb(w, s, {.frames = kDepth});
    for (std::uint64_t f = 0; f < 2 * kDepth; ++f) rb.advance(kDt, pad(f));
    const Pad late{0.5f, 0.25f};
    rb.correct(rb.frame() - kDepth, late);
    if (tessera::state_hash(w) != straight_hash(rb.frame(), rb.frame() - kDepth, late)) {
        state.SkipWithError("rollback/correct8: the correction differs from a straight run");
        return;
    }
    for (auto _ : state) rb.correct(rb.frame() - kDepth, late);
    items(state);
}

void rollback_advance(benchmark::State& state) {
    tessera::World w;
    tessera::Schedule s(1);
    build(w, s);
    tessera::net::Rollback<Pad> rb(w, s, {.frames = kDepth});
    for (std::uint64_t f = 0; f < 2 * kDepth; ++f) rb.advance(kDt, pad(f));
    if (tessera::state_hash(w) != straight_hash(rb.frame(), UINT64_MAX, Pad{})) {
        state.SkipWithError("rollback/advance: the rollback differs from a straight run");
        return;
    }
    for (auto _ : state) rb.advance(kDt, pad(rb.frame()));
    // One frame per iteration: per item, the same unit as the 8-frame variants.
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kRollbackN));
}

void rollback_hash(benchmark::State& state) {
    tessera::World w;
    tessera::Schedule s(1);
    build(w, s);
    tessera::net::Rollback<Pad> rb(w, s, {.frames = kDepth});
    for (std::uint64_t f = 0; f < kDepth; ++f) rb.advance(kDt, pad(f));
    if (rb.hash(rb.frame() - 1) != straight_hash(rb.frame(), UINT64_MAX, Pad{})) {
        state.SkipWithError("rollback/hash: the hash differs from a straight run's");
        return;
    }
    for (auto _ : state) benchmark::DoNotOptimize(rb.hash(rb.frame() - 1));
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kRollbackN));
}

void rollback_raw(benchmark::State& state) {
    tessera::World w;
    tessera::Schedule s(1);
    build(w, s);
    for (std::uint64_t f = 0; f < kDepth; ++f) {
        w.insert_resource(In{pad(f), f});
        s.run(w, kDt);
    }
    const tessera::Snapshot snap = w.snapshot();
    const auto eight = [&] {
        w.restore(snap);
        for (std::uint64_t f = kDepth; f < 2 * kDepth; ++f) {
            In& in = w.resource<In>();
            in.value = pad(f);
            in.frame = f;
            s.run(w, kDt);
        }
    };
    eight();
    if (tessera::state_hash(w) != straight_hash(2 * kDepth, UINT64_MAX, Pad{})) {
        state.SkipWithError("rollback/raw: the replay differs from a straight run");
        return;
    }
    for (auto _ : state) eight();
    items(state);
}

}  // namespace

BENCHMARK(rollback_raw)->Name("rollback/raw")->Unit(benchmark::kMicrosecond);
BENCHMARK(rollback_correct8)->Name("rollback/correct8")->Unit(benchmark::kMicrosecond);
BENCHMARK(rollback_advance)->Name("rollback/advance")->Unit(benchmark::kMicrosecond);
BENCHMARK(rollback_hash)->Name("rollback/hash")->Unit(benchmark::kMicrosecond);

}  // namespace tessera_bench

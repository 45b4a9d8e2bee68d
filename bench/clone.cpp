// clone: a whole-world copy of N = 1,000,000 entities with Pos+Vel (8 bytes each), every 100th
// also with a Label (a std::string of 22 characters: longer than the small-string buffer, so
// each one owns a heap block). Item = one entity of the world. Timed by hand (UseManualTime):
// only the copy; the copy is destroyed after the stopwatch stopped.
//   raw               the same bytes as plain arrays: the entity column (8 B/entity), Pos, Vel,
//                     the entity index (12 B/entity) and a std::vector<std::string> of the
//                     labels, copied into freshly allocated arrays (allocate + memcpy, as a
//                     clone does), allocated with the library's column policy (64-byte
//                     alignment, huge-page advice on blocks of 4 MiB and more);
//   tessera           World::clone();
//   tessera_snapshot  World::snapshot() (the same copy, into a Snapshot; no target);
//   tessera_restore   World::restore(snapshot) of a snapshot taken once before (builds the
//                     copy, swaps it in and frees the old state; no target).
// Each variant checks its result once, untimed: the raw arrays and labels equal the source;
// the world copies have the source's count and state_hash. A mismatch reports an error.
#include "snapshot_world.hpp"

#include <tessera/reflect.hpp>
#include <tessera/serialize.hpp>
#include <tessera/tessera.hpp>

#include <sys/mman.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace tessera_bench {
namespace {

/// What the world holds, as plain arrays.
struct RawWorld {
    RawArray<RawEntity> entities;
    RawArray<Pos> pos;
    RawArray<Vel> vel;
    RawArray<RawRecord> records;
    std::vector<std::string> labels;

    [[nodiscard]] RawWorld copy() const {
        RawWorld out;
        out.entities = entities.copy();
        out.pos = pos.copy();
        out.vel = vel.copy();
        out.records = records.copy();
        out.labels = labels;
        return out;
    }
    [[nodiscard]] bool same(const RawWorld& o) const {
        return entities.same(o.entities) && pos.same(o.pos) && vel.same(o.vel) &&
               records.same(o.records) && labels == o.labels;
    }
};

RawWorld build_raw() {
    RawWorld w;
    w.entities = RawArray<RawEntity>(kN);
    w.pos = RawArray<Pos>(kN);
    w.vel = RawArray<Vel>(kN);
    w.records = RawArray<RawRecord>(kN);
    for (std::size_t i = 0; i < kN; ++i) {
        const auto index = static_cast<std::uint32_t>(i);
        w.entities.data[i] = RawEntity{index, 1};
        w.pos.data[i] = Pos{static_cast<float>(i), 0.0f};
        w.vel.data[i] = Vel{1.0f, 1.0f};
        w.records.data[i] = RawRecord{i % kLabelEvery == 0 ? 4u : 3u, index, 1};
        if (i % kLabelEvery == 0) w.labels.push_back(label_of(i));
    }
    return w;
}

void clone_raw(benchmark::State& state) {
    const RawWorld source = build_raw();
    {
        const RawWorld copy = source.copy();
        if (!copy.same(source) || copy.labels.size() != kN / kLabelEvery) {
            state.SkipWithError("clone/raw: the copy differs from the source");
            return;
        }
    }
    long faults = 0;
    for (auto _ : state) {
        const long faults_before = minor_faults();
        Stopwatch watch;
        RawWorld copy = source.copy();
        benchmark::DoNotOptimize(copy.entities.data);
        benchmark::DoNotOptimize(copy.labels.data());
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        faults += minor_faults() - faults_before;
        // `copy` is freed here, after the stopwatch stopped.
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kN));
    state.counters["faults"] =
        benchmark::Counter(static_cast<double>(faults), benchmark::Counter::kAvgIterations);
}

// ---- tessera ----

void clone_tessera(benchmark::State& state) {
    tessera::World world;
    build_world(world);
    const std::uint64_t hash = tessera::state_hash(world);
    {
        const tessera::World copy = world.clone();
        if (world.count() != kN || !holds(copy, hash)) {
            state.SkipWithError("clone/tessera: the clone differs from the original");
            return;
        }
    }
    long faults = 0;
    for (auto _ : state) {
        const long faults_before = minor_faults();
        Stopwatch watch;
        tessera::World copy = world.clone();
        benchmark::DoNotOptimize(&copy);
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        faults += minor_faults() - faults_before;
        // `copy` is destroyed here, after the stopwatch stopped.
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kN));
    state.counters["faults"] =
        benchmark::Counter(static_cast<double>(faults), benchmark::Counter::kAvgIterations);
}

void clone_tessera_snapshot(benchmark::State& state) {
    tessera::World world;
    build_world(world);
    const std::uint64_t hash = tessera::state_hash(world);
    {
        // Checked through a restore into a fresh world (a snapshot has no state_hash).
        const tessera::Snapshot snap = world.snapshot();
        tessera::World other;
        other.restore(snap);
        if (snap.count() != kN || !holds(other, hash)) {
            state.SkipWithError("clone/tessera_snapshot: the snapshot differs from the world");
            return;
        }
    }
    long faults = 0;
    for (auto _ : state) {
        const long faults_before = minor_faults();
        Stopwatch watch;
        tessera::Snapshot snap = world.snapshot();
        benchmark::DoNotOptimize(&snap);
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        faults += minor_faults() - faults_before;
        // `snap` is destroyed here, after the stopwatch stopped.
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kN));
    state.counters["faults"] =
        benchmark::Counter(static_cast<double>(faults), benchmark::Counter::kAvgIterations);
}

void clone_tessera_restore(benchmark::State& state) {
    tessera::World world;
    build_world(world);
    const std::uint64_t hash = tessera::state_hash(world);
    const tessera::Snapshot snap = world.snapshot();
    {
        // Change the world, restore, and compare with the state the snapshot was taken in.
        std::size_t n = 0;
        world.each([&n](Pos& p) {
            if (n++ % 7 == 0) p.x += 1.0f;
        });
        world.spawn(Pos{-1.0f, -1.0f});
        const bool changed = tessera::state_hash(world) != hash;
        world.restore(snap);
        if (!changed || !holds(world, hash)) {
            state.SkipWithError(
                "clone/tessera_restore: the restored world differs from the snapshot");
            return;
        }
    }
    long faults = 0;
    for (auto _ : state) {
        const long faults_before = minor_faults();
        Stopwatch watch;
        world.restore(snap);
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        faults += minor_faults() - faults_before;
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kN));
    state.counters["faults"] =
        benchmark::Counter(static_cast<double>(faults), benchmark::Counter::kAvgIterations);
}

/// Timed by hand (only the copy), in milliseconds, iterations chosen by the library.
void copy_timing(benchmark::internal::Benchmark* b) {
    b->UseManualTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(clone_raw)->Name("clone/raw")->Apply(copy_timing);
BENCHMARK(clone_tessera)->Name("clone/tessera")->Apply(copy_timing);
BENCHMARK(clone_tessera_snapshot)->Name("clone/tessera_snapshot")->Apply(copy_timing);
BENCHMARK(clone_tessera_restore)->Name("clone/tessera_restore")->Apply(copy_timing);

}  // namespace
}  // namespace tessera_bench

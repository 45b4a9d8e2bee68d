// clone: a whole-world copy of N = 1,000,000 entities (the --tessera-n count in a size sweep)
// with Pos+Vel (8 bytes each), every 100th also with a Label (a std::string of 22 characters:
// longer than the small-string buffer, so each one owns a heap block). Item = one entity of the
// world. Timed by hand (time_copies in snapshot_world.hpp): only the copy; the copy is destroyed
// after the stopwatch stopped.
//   raw               the same bytes as plain arrays (RawWorld: the entity column 8 B/entity,
//                     Pos, Vel, the entity index 12 B/entity and a std::vector<std::string> of
//                     the labels), copied into freshly allocated arrays (allocate + memcpy, as a
//                     clone does), allocated with the library's column policy (64-byte
//                     alignment, huge-page advice on blocks of 4 MiB and more);
//   tessera           World::clone();
//   tessera_snapshot  World::snapshot() (the same copy, into a Snapshot; no target);
//   tessera_restore   World::restore(snapshot) of a snapshot taken once before (builds the
//                     copy, swaps it in and frees the old state; no target).
// Each variant checks its result once, untimed: the raw arrays and labels equal the source;
// the world copies have the source's count and state_hash. A mismatch reports an error.
#include "snapshot_world.hpp"

#include <tessera/tessera.hpp>

#include <cstdint>

namespace tessera_bench {
namespace {

void clone_raw(benchmark::State& state) {
    const std::size_t n = entity_count();
    const RawWorld source = build_raw(n);
    {
        const RawWorld copy = source.copy();
        if (!copy.same(source) || copy.labels.size() != label_count(n)) {
            state.SkipWithError("clone/raw: the copy differs from the source");
            return;
        }
    }
    time_copies(state, n, [&] { return source.copy(); });
}

void clone_tessera(benchmark::State& state) {
    const std::size_t n = entity_count();
    tessera::World world;
    build_world(world, n);
    const std::uint64_t hash = tessera::state_hash(world);
    {
        const tessera::World copy = world.clone();
        if (world.count() != n || !holds(copy, n, hash)) {
            state.SkipWithError("clone/tessera: the clone differs from the original");
            return;
        }
    }
    time_copies(state, n, [&] { return world.clone(); });
}

void clone_tessera_snapshot(benchmark::State& state) {
    const std::size_t n = entity_count();
    tessera::World world;
    build_world(world, n);
    const std::uint64_t hash = tessera::state_hash(world);
    {
        // Checked through a restore into a fresh world (a snapshot has no state_hash).
        const tessera::Snapshot snap = world.snapshot();
        tessera::World other;
        other.restore(snap);
        if (snap.count() != n || !holds(other, n, hash)) {
            state.SkipWithError("clone/tessera_snapshot: the snapshot differs from the world");
            return;
        }
    }
    time_copies(state, n, [&] { return world.snapshot(); });
}

void clone_tessera_restore(benchmark::State& state) {
    const std::size_t n = entity_count();
    tessera::World world;
    build_world(world, n);
    const std::uint64_t hash = tessera::state_hash(world);
    const tessera::Snapshot snap = world.snapshot();
    {
        // Change the world, restore, and compare with the state the snapshot was taken in.
        std::size_t seen = 0;
        world.each([&seen](Pos& p) {
            if (seen++ % 7 == 0) p.x += 1.0f;
        });
        world.spawn(Pos{-1.0f, -1.0f});
        const bool changed = tessera::state_hash(world) != hash;
        world.restore(snap);
        if (!changed || !holds(world, n, hash)) {
            state.SkipWithError(
                "clone/tessera_restore: the restored world differs from the snapshot");
            return;
        }
    }
    time_copies(state, n, [&] {
        world.restore(snap);
        return 0;
    });
}

BENCHMARK(clone_raw)->Name("clone/raw")->Apply(copy_timing);
BENCHMARK(clone_tessera)->Name("clone/tessera")->Apply(copy_timing);
BENCHMARK(clone_tessera_snapshot)->Name("clone/tessera_snapshot")->Apply(copy_timing);
BENCHMARK(clone_tessera_restore)->Name("clone/tessera_restore")->Apply(copy_timing);

}  // namespace
}  // namespace tessera_bench

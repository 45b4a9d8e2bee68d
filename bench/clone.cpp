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
#include "common.hpp"

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

// The components of this file: layout-equal to the bench's Position/Velocity, reflected here
// (TESSERA_REFLECT must precede their first use as components, once per program), so they are
// distinct types from those of the other scenarios.
namespace bench_clone {
struct Pos {
    float x, y;
};
struct Vel {
    float dx, dy;
};
struct Label {
    std::string text;
};
}  // namespace bench_clone

TESSERA_REFLECT(bench_clone::Pos, x, y)
TESSERA_REFLECT(bench_clone::Vel, dx, dy)
TESSERA_REFLECT(bench_clone::Label, text)

namespace tessera_bench {
namespace {

using bench_clone::Label;
using bench_clone::Pos;
using bench_clone::Vel;

/// Every kLabelEvery-th entity carries a Label.
inline constexpr std::size_t kLabelEvery = 100;

/// Minor page faults of the process so far (getrusage): the timed regions report their
/// faults per iteration as the `faults` counter, since fresh pages can dominate a copy.
long minor_faults() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

/// The label of entity `i`: 22 characters (heap-allocated in libstdc++'s std::string).
std::string label_of(std::size_t i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "entity label #%08zu", i);
    return buf;
}

/// The world of the scenario: kN entities, Pos{i, 0} and Vel{1, 1}, a Label on every 100th.
void build_world(tessera::World& world) {
    for (std::size_t i = 0; i < kN; ++i) {
        const Pos p{static_cast<float>(i), 0.0f};
        const Vel v{1.0f, 1.0f};
        if (i % kLabelEvery == 0)
            world.spawn(p, v, Label{label_of(i)});
        else
            world.spawn(p, v);
    }
}

// ---- raw: plain arrays with the library's allocation policy ----

inline constexpr std::size_t kHugePage = std::size_t{2} << 20;

/// A fresh block of `bytes`, 64-byte aligned, with huge-page advice from 4 MiB on (what the
/// library's Storage::allocate does for columns).
void* raw_allocate(std::size_t bytes) {
    void* p = ::operator new (bytes, std::align_val_t{kColumnAlignment});
    if (bytes >= 2 * kHugePage) {
        const auto begin = (reinterpret_cast<std::uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
        const auto end = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(kHugePage - 1);
        if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
    }
    return p;
}

void raw_free(void* p) noexcept {
    ::operator delete (p, std::align_val_t{kColumnAlignment});
}

/// An owned array of trivially copyable T.
template <class T>
struct RawArray {
    T* data = nullptr;
    std::size_t size = 0;

    RawArray() = default;
    explicit RawArray(std::size_t n)
        : data(static_cast<T*>(raw_allocate(n * sizeof(T)))), size(n) {}
    RawArray(RawArray&& o) noexcept : data(o.data), size(o.size) { o.data = nullptr; }
    RawArray& operator=(RawArray&& o) noexcept {
        std::swap(data, o.data);
        std::swap(size, o.size);
        return *this;
    }
    ~RawArray() { raw_free(data); }

    /// A fresh copy: allocate + memcpy.
    [[nodiscard]] RawArray copy() const {
        RawArray out(size);
        std::memcpy(out.data, data, size * sizeof(T));
        return out;
    }
    [[nodiscard]] bool same(const RawArray& o) const {
        return size == o.size && std::memcmp(data, o.data, size * sizeof(T)) == 0;
    }
};

struct RawEntity {
    std::uint32_t index, generation;
};
struct RawRecord {
    std::uint32_t archetype, row, generation;
};
static_assert(sizeof(RawEntity) == 8 && sizeof(RawRecord) == 12);

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

/// Whether `w` holds kN entities with state hash `hash`.
bool holds(const tessera::World& w, std::uint64_t hash) {
    return w.count() == kN && tessera::state_hash(w) == hash;
}

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

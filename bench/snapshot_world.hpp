// The world of the snapshot scenarios (clone.cpp, snapshot_binary.cpp): N = 1,000,000
// entities (the --tessera-n count in a size sweep) with Pos+Vel (8 bytes each, layout-equal to
// the bench's Position/Velocity, but reflected: save/load needs field metadata), every 100th
// also with a Label (a std::string of 22 characters: longer than the small-string buffer, so
// each owns a heap block); the raw baselines' plain arrays holding the same, allocated with the
// library's column policy; and the timed loop both scenarios share.
#pragma once

#include "common.hpp"

#include <tessera/reflect.hpp>
#include <tessera/serialize.hpp>
#include <tessera/tessera.hpp>

#include <sys/mman.h>
#include <sys/resource.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace bench_snapshot {
struct Pos {
    float x, y;
};
struct Vel {
    float dx, dy;
};
struct Label {
    std::string text;
};
}  // namespace bench_snapshot

TESSERA_REFLECT(bench_snapshot::Pos, x, y)
TESSERA_REFLECT(bench_snapshot::Vel, dx, dy)
TESSERA_REFLECT(bench_snapshot::Label, text)

namespace tessera_bench {

using bench_snapshot::Label;
using bench_snapshot::Pos;
using bench_snapshot::Vel;

/// Every kLabelEvery-th entity carries a Label.
inline constexpr std::size_t kLabelEvery = 100;

/// Minor page faults of the process so far (getrusage): the timed regions report their
/// faults per iteration as the `faults` counter, since fresh pages can dominate a copy.
inline long minor_faults() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

/// The label of entity `i`: 22 characters (heap-allocated in libstdc++'s std::string).
inline std::string label_of(std::size_t i) {
    char buf[48];  // room for any size_t: the label is 22 characters below 1e8
    std::snprintf(buf, sizeof buf, "entity label #%08zu", i);
    return buf;
}

/// The world of the scenario: `n` entities, Pos{i, 0} and Vel{1, 1}, a Label on every 100th.
inline void build_world(tessera::World& world, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
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
inline void* raw_allocate(std::size_t bytes) {
    void* p = ::operator new (bytes, std::align_val_t{kColumnAlignment});
    if (bytes >= 2 * kHugePage) {
        const auto begin = (reinterpret_cast<std::uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1);
        const auto end = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(kHugePage - 1);
        if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
    }
    return p;
}

inline void raw_free(void* p) noexcept {
    ::operator delete (p, std::align_val_t{kColumnAlignment});
}

/// An owned, uninitialised block of `n` T (T trivially copyable).
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

    [[nodiscard]] std::size_t bytes() const { return size * sizeof(T); }
    /// A fresh copy: allocate + memcpy.
    [[nodiscard]] RawArray copy() const {
        RawArray out(size);
        std::memcpy(out.data, data, bytes());
        return out;
    }
    [[nodiscard]] bool same(const RawArray& o) const {
        return size == o.size && std::memcmp(data, o.data, bytes()) == 0;
    }
};

struct RawEntity {
    std::uint32_t index, generation;
};
struct RawRecord {
    std::uint32_t archetype, row, generation;
};
static_assert(sizeof(RawEntity) == 8 && sizeof(RawRecord) == 12);

/// What the world holds, as plain arrays: the entity column, Pos, Vel, the entity index and
/// the labels.
struct RawWorld {
    RawArray<RawEntity> entities;
    RawArray<Pos> pos;
    RawArray<Vel> vel;
    RawArray<RawRecord> records;
    std::vector<std::string> labels;

    /// A fresh copy: allocate + memcpy each array, copy the labels (what a clone does).
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

/// The raw counterpart of build_world(n).
inline RawWorld build_raw(std::size_t n) {
    RawWorld w;
    w.entities = RawArray<RawEntity>(n);
    w.pos = RawArray<Pos>(n);
    w.vel = RawArray<Vel>(n);
    w.records = RawArray<RawRecord>(n);
    for (std::size_t i = 0; i < n; ++i) {
        const auto index = static_cast<std::uint32_t>(i);
        w.entities.data[i] = RawEntity{index, 1};
        w.pos.data[i] = Pos{static_cast<float>(i), 0.0f};
        w.vel.data[i] = Vel{1.0f, 1.0f};
        w.records.data[i] = RawRecord{i % kLabelEvery == 0 ? 4u : 3u, index, 1};
        if (i % kLabelEvery == 0) w.labels.push_back(label_of(i));
    }
    return w;
}

/// Labels of a world of `n` entities.
inline std::size_t label_count(std::size_t n) {
    return (n + kLabelEvery - 1) / kLabelEvery;
}

/// Whether `w` holds `n` entities with state hash `hash`.
inline bool holds(const tessera::World& w, std::size_t n, std::uint64_t hash) {
    return w.count() == n && tessera::state_hash(w) == hash;
}

/// The timed loop of a snapshot scenario over `n` entities: per iteration, `prepare()` makes
/// what the step works on, untimed (the empty world a load fills), then `step(prepared)` runs
/// under the stopwatch, which also counts the minor page faults it causes (the `faults`
/// counter, per iteration: fresh pages can dominate a copy). What the step returns and what
/// `prepare` made are destroyed after the stopwatch stopped.
template <class Prepare, class Step>
void time_copies(benchmark::State& state, std::size_t n, Prepare prepare, Step step) {
    long faults = 0;
    for (auto _ : state) {
        auto prepared = prepare();
        const long faults_before = minor_faults();
        Stopwatch watch;
        auto made = step(prepared);
        benchmark::DoNotOptimize(&made);
        benchmark::DoNotOptimize(&prepared);
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        faults += minor_faults() - faults_before;
    }
    set_items(state, n);
    state.counters["faults"] =
        benchmark::Counter(static_cast<double>(faults), benchmark::Counter::kAvgIterations);
}

/// time_copies with nothing to prepare: `step()` is timed.
template <class Step>
void time_copies(benchmark::State& state, std::size_t n, Step step) {
    time_copies(
        state, n, [] { return 0; }, [&step](int) { return step(); });
}

/// Registration of the snapshot scenarios: timed by hand (the copy only), in milliseconds,
/// iterations chosen by the library.
inline void copy_timing(benchmark::internal::Benchmark* b) {
    b->UseManualTime()->Unit(benchmark::kMillisecond);
}

}  // namespace tessera_bench

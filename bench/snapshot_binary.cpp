// snapshot_binary: a binary save and load of N = 1,000,000 entities with Pos+Vel (8 bytes
// each), every 100th also with a Label (a std::string of 22 characters: longer than the
// small-string buffer). Item = one entity of the world. Timed by hand (UseManualTime); what a
// variant makes (the bytes, the loaded world or arrays) is freed after the stopwatch stopped,
// and the loaded world is constructed (empty) before it started.
//   raw           the same bytes as plain arrays (the entity column 8 B/entity, Pos, Vel, the
//                 entity index 12 B/entity, the labels as length + characters) memcpy'd out to
//                 one freshly allocated buffer, then back into freshly allocated arrays and a
//                 std::vector<std::string>; every block with the library's column policy
//                 (64-byte alignment, huge-page advice from 4 MiB on);
//   tessera       ts::save(world) then ts::load(bytes, fresh_world), per iteration;
//   tessera_save  ts::save(world) alone (no target);
//   tessera_load  ts::load(bytes, fresh_world) alone, from bytes saved once (no target).
// Each variant checks its result once, untimed: the raw arrays and labels equal the source;
// the loaded world has the source's count and state_hash. A mismatch reports an error.
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
#include <span>
#include <string>
#include <vector>

// The components of this file: layout-equal to the bench's Position/Velocity, reflected here
// (TESSERA_REFLECT must precede their first use as components, once per program), so they are
// distinct types from those of the other scenarios (clone.cpp has its own).
namespace bench_snapshot_binary {
struct Pos {
    float x, y;
};
struct Vel {
    float dx, dy;
};
struct Label {
    std::string text;
};
}  // namespace bench_snapshot_binary

TESSERA_REFLECT(bench_snapshot_binary::Pos, x, y)
TESSERA_REFLECT(bench_snapshot_binary::Vel, dx, dy)
TESSERA_REFLECT(bench_snapshot_binary::Label, text)

namespace tessera_bench {
namespace {

using bench_snapshot_binary::Label;
using bench_snapshot_binary::Pos;
using bench_snapshot_binary::Vel;

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

/// What the world holds, as plain arrays.
struct RawWorld {
    RawArray<RawEntity> entities;
    RawArray<Pos> pos;
    RawArray<Vel> vel;
    RawArray<RawRecord> records;
    std::vector<std::string> labels;

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

/// The raw "save": every array, then the label count and each label as length + characters,
/// into one fresh buffer of exactly the size needed.
RawArray<std::byte> raw_save(const RawWorld& w) {
    std::size_t total = sizeof(std::uint64_t) + w.entities.bytes() + w.pos.bytes() + w.vel.bytes() +
                        w.records.bytes() + sizeof(std::uint32_t);
    for (const std::string& s : w.labels) total += sizeof(std::uint32_t) + s.size();
    RawArray<std::byte> out(total);
    std::byte* at = out.data;
    auto put = [&at](const void* p, std::size_t n) {
        std::memcpy(at, p, n);
        at += n;
    };
    const std::uint64_t n = w.entities.size;
    put(&n, sizeof n);
    put(w.entities.data, w.entities.bytes());
    put(w.pos.data, w.pos.bytes());
    put(w.vel.data, w.vel.bytes());
    put(w.records.data, w.records.bytes());
    const auto labels = static_cast<std::uint32_t>(w.labels.size());
    put(&labels, sizeof labels);
    for (const std::string& s : w.labels) {
        const auto len = static_cast<std::uint32_t>(s.size());
        put(&len, sizeof len);
        put(s.data(), s.size());
    }
    return out;
}

/// The raw "load": fresh arrays filled back from the buffer.
RawWorld raw_load(const RawArray<std::byte>& in) {
    const std::byte* at = in.data;
    auto take = [&at](void* p, std::size_t n) {
        std::memcpy(p, at, n);
        at += n;
    };
    std::uint64_t n = 0;
    take(&n, sizeof n);
    RawWorld w;
    w.entities = RawArray<RawEntity>(n);
    w.pos = RawArray<Pos>(n);
    w.vel = RawArray<Vel>(n);
    w.records = RawArray<RawRecord>(n);
    take(w.entities.data, w.entities.bytes());
    take(w.pos.data, w.pos.bytes());
    take(w.vel.data, w.vel.bytes());
    take(w.records.data, w.records.bytes());
    std::uint32_t labels = 0;
    take(&labels, sizeof labels);
    w.labels.reserve(labels);
    for (std::uint32_t i = 0; i < labels; ++i) {
        std::uint32_t len = 0;
        take(&len, sizeof len);
        w.labels.emplace_back(reinterpret_cast<const char*>(at), len);
        at += len;
    }
    return w;
}

void snapshot_binary_raw(benchmark::State& state) {
    const RawWorld source = build_raw();
    {
        const RawWorld back = raw_load(raw_save(source));
        if (!back.same(source) || back.labels.size() != kN / kLabelEvery) {
            state.SkipWithError("snapshot_binary/raw: the loaded arrays differ from the source");
            return;
        }
    }
    long faults = 0;
    for (auto _ : state) {
        const long faults_before = minor_faults();
        Stopwatch watch;
        RawArray<std::byte> bytes = raw_save(source);
        RawWorld back = raw_load(bytes);
        benchmark::DoNotOptimize(back.entities.data);
        benchmark::DoNotOptimize(back.labels.data());
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        faults += minor_faults() - faults_before;
        // `bytes` and `back` are freed here, after the stopwatch stopped.
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

enum class Part { both, save, load };

void snapshot_binary_tessera_bench(benchmark::State& state, Part part) {
    const char* name = part == Part::both   ? "snapshot_binary/tessera"
                       : part == Part::save ? "snapshot_binary/tessera_save"
                                            : "snapshot_binary/tessera_load";
    tessera::World world;
    build_world(world);
    const std::uint64_t hash = tessera::state_hash(world);
    const std::vector<std::byte> saved = tessera::save(world);
    {
        tessera::World loaded;
        tessera::load(saved, loaded);
        if (world.count() != kN || !holds(loaded, hash)) {
            state.SkipWithError(
                (std::string(name) + ": the loaded world differs from the saved one").c_str());
            return;
        }
    }
    long faults = 0;
    for (auto _ : state) {
        tessera::World loaded;  // constructed before, destroyed after the stopwatch ran
        std::vector<std::byte> bytes;
        const long faults_before = minor_faults();
        Stopwatch watch;
        if (part == Part::both) {
            bytes = tessera::save(world);
            tessera::load(bytes, loaded);
        } else if (part == Part::save) {
            bytes = tessera::save(world);
        } else {
            tessera::load(saved, loaded);
        }
        benchmark::DoNotOptimize(bytes.data());
        benchmark::DoNotOptimize(&loaded);
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        faults += minor_faults() - faults_before;
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kN));
    state.counters["faults"] =
        benchmark::Counter(static_cast<double>(faults), benchmark::Counter::kAvgIterations);
    state.counters["bytes"] = static_cast<double>(saved.size());
}

void snapshot_binary_tessera(benchmark::State& state) {
    snapshot_binary_tessera_bench(state, Part::both);
}
void snapshot_binary_tessera_save(benchmark::State& state) {
    snapshot_binary_tessera_bench(state, Part::save);
}
void snapshot_binary_tessera_load(benchmark::State& state) {
    snapshot_binary_tessera_bench(state, Part::load);
}

/// Timed by hand (only the save and/or load), in milliseconds, iterations chosen by the library.
void copy_timing(benchmark::internal::Benchmark* b) {
    b->UseManualTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(snapshot_binary_raw)->Name("snapshot_binary/raw")->Apply(copy_timing);
BENCHMARK(snapshot_binary_tessera)->Name("snapshot_binary/tessera")->Apply(copy_timing);
BENCHMARK(snapshot_binary_tessera_save)->Name("snapshot_binary/tessera_save")->Apply(copy_timing);
BENCHMARK(snapshot_binary_tessera_load)->Name("snapshot_binary/tessera_load")->Apply(copy_timing);

}  // namespace
}  // namespace tessera_bench

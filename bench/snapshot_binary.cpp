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
#include "snapshot_world.hpp"

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

namespace tessera_bench {
namespace {

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

// snapshot_binary: a binary save and load of N = 1,000,000 entities (the --tessera-n count in a
// size sweep) with Pos+Vel (8 bytes each), every 100th also with a Label (a std::string of 22
// characters: longer than the small-string buffer). Item = one entity of the world. Timed by
// hand (time_copies in snapshot_world.hpp); what a variant makes (the bytes, the loaded world or
// arrays) is freed after the stopwatch stopped, and the loaded world is constructed (empty)
// before it started.
//   raw           the same bytes as plain arrays (RawWorld: the entity column 8 B/entity, Pos,
//                 Vel, the entity index 12 B/entity, the labels as length + characters)
//                 memcpy'd out to one freshly allocated buffer, then back into freshly
//                 allocated arrays and a std::vector<std::string>; every block with the
//                 library's column policy (64-byte alignment, huge-page advice from 4 MiB on);
//   tessera       ts::save(world) then ts::load(bytes, fresh_world), per iteration;
//   tessera_save  ts::save(world) alone (no target);
//   tessera_load  ts::load(bytes, fresh_world) alone, from bytes saved once (no target).
// Each variant checks its result once, untimed: the raw arrays and labels equal the source;
// the loaded world has the source's count and state_hash. A mismatch reports an error.
#include "snapshot_world.hpp"

#include <tessera/serialize.hpp>
#include <tessera/tessera.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tessera_bench {
namespace {

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

/// What the raw variant makes in one iteration: the bytes and the arrays loaded back.
struct RawRoundTrip {
    RawArray<std::byte> bytes;
    RawWorld back;
};

void snapshot_binary_raw(benchmark::State& state) {
    const std::size_t n = entity_count();
    const RawWorld source = build_raw(n);
    {
        const RawWorld back = raw_load(raw_save(source));
        if (!back.same(source) || back.labels.size() != label_count(n)) {
            state.SkipWithError("snapshot_binary/raw: the loaded arrays differ from the source");
            return;
        }
    }
    time_copies(state, n, [&] {
        RawRoundTrip made;
        made.bytes = raw_save(source);
        made.back = raw_load(made.bytes);
        return made;
    });
}

// ---- tessera ----

enum class Part { both, save, load };

void snapshot_binary_tessera_bench(benchmark::State& state, Part part) {
    const char* name = part == Part::both   ? "snapshot_binary/tessera"
                       : part == Part::save ? "snapshot_binary/tessera_save"
                                            : "snapshot_binary/tessera_load";
    const std::size_t n = entity_count();
    tessera::World world;
    build_world(world, n);
    const std::uint64_t hash = tessera::state_hash(world);
    const std::vector<std::byte> saved = tessera::save(world);
    {
        tessera::World loaded;
        tessera::load(saved, loaded);
        if (world.count() != n || !holds(loaded, n, hash)) {
            state.SkipWithError(
                (std::string(name) + ": the loaded world differs from the saved one").c_str());
            return;
        }
    }
    // The loaded world is constructed before, and destroyed after, the stopwatch ran.
    time_copies(
        state, n, [] { return tessera::World{}; },
        [&](tessera::World& loaded) {
            std::vector<std::byte> bytes;
            if (part == Part::both) {
                bytes = tessera::save(world);
                tessera::load(bytes, loaded);
            } else if (part == Part::save) {
                bytes = tessera::save(world);
            } else {
                tessera::load(saved, loaded);
            }
            return bytes;
        });
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

BENCHMARK(snapshot_binary_raw)->Name("snapshot_binary/raw")->Apply(copy_timing);
BENCHMARK(snapshot_binary_tessera)->Name("snapshot_binary/tessera")->Apply(copy_timing);
BENCHMARK(snapshot_binary_tessera_save)->Name("snapshot_binary/tessera_save")->Apply(copy_timing);
BENCHMARK(snapshot_binary_tessera_load)->Name("snapshot_binary/tessera_load")->Apply(copy_timing);

}  // namespace
}  // namespace tessera_bench

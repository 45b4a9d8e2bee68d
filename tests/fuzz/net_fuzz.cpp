// libFuzzer target for the client side of replication, ts::net::Mirror::apply (net/mirror.hpp:
// "a malformed or hostile message is Error(invalid_argument) and the client world is
// unchanged"). Each input is applied to a fresh client world and to one that has applied the
// seed full state (so deltas relative to its tick get past the baseline check). A finding: an
// Error of another code, a refused message that changed the world (state_hash, count), or an
// accepted one after which a mirrored entity does not map back to itself. replay.cpp links it
// to replay tests/fuzz/corpus-net with any compiler.
#include "fuzz_checks.hpp"
#include "net_fuzz_world.hpp"

#include <tessera/serialize.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace {

void run(tessera::World& world, tessera::net::Mirror& mirror, std::span<const std::byte> bytes) {
    namespace ts = tessera;
    const std::uint64_t hash = ts::state_hash(world);
    const std::size_t count = world.count();
    const std::uint64_t tick = mirror.tick();
    try {
        const std::uint64_t applied = mirror.apply(bytes);
        fuzzw::check(applied >= tick, "apply went back in ticks");
    } catch (const ts::Error& e) {
        fuzzw::check(e.code() == ts::errc::invalid_argument,
                     "apply threw an Error other than invalid_argument");
        fuzzw::check(ts::state_hash(world) == hash && world.count() == count,
                     "a refused message changed the client world");
        fuzzw::check(mirror.tick() == tick, "a refused message changed the mirror's tick");
        return;
    }
    ++fuzzw::accepted_inputs();
    world.each([&](ts::Entity e, const ts::net::Replica& r) {
        fuzzw::check(mirror.local(r.remote) == e || !mirror.local(r.remote),
                     "a mirrored entity maps to another one");
        fuzzw::check(mirror.remote(e) == r.remote, "remote() differs from the Replica");
    });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace ts = tessera;
    fuzzw::target_name() = "net_fuzz";
    netfuzz::setup();
    static const std::vector<std::vector<std::byte>> seeds = netfuzz::seed_messages();
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
    {
        ts::World world;
        ts::net::Mirror mirror(world);
        run(world, mirror, bytes);
    }
    {
        ts::World world;
        ts::net::Mirror mirror(world);
        mirror.apply(seeds.front());
        run(world, mirror, bytes);
    }
    return 0;
}

// libFuzzer target for the binary loader, ts::load (serialize.hpp: "any input is checked:
// random bytes give an error, never a crash"). What counts as a finding is in fuzz_checks.hpp.
// replay.cpp links it to replay the corpus (tests/fuzz/corpus) with any compiler.
#include "fuzz_checks.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace ts = tessera;
    fuzzw::target_name() = "load_fuzz";
    const fuzzw::Runtime& rt = fuzzw::setup();
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
    ts::World world;
    try {
        ts::load(bytes, world);
    } catch (const ts::Error& e) {
        fuzzw::check(e.code() == ts::errc::invalid_argument,
                     "load threw an Error other than invalid_argument");
        fuzzw::check(world.count() == 0, "a failed load left entities in the target");
        return 0;
    }
    ++fuzzw::accepted_inputs();
    // The free list is shorter than the input in u32s.
    fuzzw::exercise(world, rt, size / 4);
    return 0;
}

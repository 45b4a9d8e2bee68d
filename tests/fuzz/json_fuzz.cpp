// libFuzzer target for the JSON loader, ts::from_json (serialize.hpp: a snapshot from anywhere is
// checked; anything it refuses is Error(invalid_argument) and leaves the target empty). The input
// is JSON text: text nlohmann::json can't parse is not the loader's input and is skipped. What
// counts as a finding is in fuzz_checks.hpp; besides, a loaded world's JSON is a fixpoint
// (to_json(from_json(to_json(w))) == to_json(w), with an equal state_hash). replay.cpp links it
// to replay the corpus (tests/fuzz/corpus-json) with any compiler.
#include "fuzz_checks.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace ts = tessera;
    fuzzw::target_name() = "json_fuzz";
    const fuzzw::Runtime& rt = fuzzw::setup();
    const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr,
                                                   /*allow_exceptions=*/false);
    if (j.is_discarded()) return 0;
    ts::World world;
    try {
        ts::from_json(j, world);
    } catch (const ts::Error& e) {
        fuzzw::check(e.code() == ts::errc::invalid_argument,
                     "from_json threw an Error other than invalid_argument");
        fuzzw::check(world.count() == 0, "a failed from_json left entities in the target");
        return 0;
    }
    ++fuzzw::accepted_inputs();
    {
        const std::string text = ts::to_json(world).dump();
        ts::World again;
        ts::from_json(nlohmann::json::parse(text), again);
        fuzzw::check(ts::to_json(again).dump() == text, "to_json(from_json(to_json(w))) changed");
        fuzzw::check(ts::state_hash(again) == ts::state_hash(world),
                     "state_hash changed through to_json/from_json");
    }
    // Every free index takes at least two characters ("1,").
    fuzzw::exercise(world, rt, size / 2);
    return 0;
}

// Test helper: a world whose tick starts where a test needs it (near World::max_tick).
#pragma once

#include <tessera/serialize.hpp>
#include <tessera/world.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>

namespace tessera::test {

/// Fills the empty world `w` from the snapshot of an empty world whose tick says `tick`.
inline void load_at_tick(World& w, std::uint64_t tick) {
    World src;
    nlohmann::json j = to_json(src);
    j["tick"] = tick;
    from_json(j, w);
}

}  // namespace tessera::test

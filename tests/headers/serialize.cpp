// serialize.hpp alone (the JSON forms), with world.hpp to have a world to write, reflect.hpp
// for this file's own TESSERA_REFLECT, and nlohmann's json.hpp for JSON values (serialize.hpp
// declares them only).
#include <tessera/reflect.hpp>
#include <tessera/serialize.hpp>
#include <tessera/world.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>

namespace ts = tessera;

namespace {
struct Score {
    std::int32_t points = 0;
};
}  // namespace

TESSERA_REFLECT(Score, points)

int header_serialize() {
    ts::World w;
    const ts::Entity e = w.spawn(Score{3});
    const nlohmann::json all = ts::to_json(w);
    ts::World copy;
    ts::from_json(all, copy);
    const ts::ComponentId id = ts::component_id<Score>();
    const nlohmann::json one = ts::to_json(w, e, id);
    ts::set_fields(w, e, id, nlohmann::json{{"points", 4}});
    return copy.count() == 1 && one.is_object() && w.get<Score>(e).points == 4 ? 0 : 1;
}

// reflect.hpp alone.
#include <tessera/reflect.hpp>

#include <cstdint>

namespace ts = tessera;

namespace {
struct Stats {
    std::int32_t hp = 0;
    float speed = 0;
};
}  // namespace

TESSERA_REFLECT(Stats, hp, speed)

int header_reflect() {
    const ts::Schema* schema = ts::component_info<Stats>().schema;
    if (schema == nullptr || schema->find("hp") == nullptr || schema->fields.size() != 2) return 1;
    if (ts::to_string(ts::Field::f32) != "f32" || ts::field_size(ts::Field::i32) != 4) return 2;
    const ts::FieldDef def{"v", ts::Field::u8};
    const ts::ComponentOptions options{.enableable = true};
    if (def.type != ts::Field::u8 || !options.enableable || ts::StringId{1} == ts::StringId{})
        return 3;
    return 0;
}

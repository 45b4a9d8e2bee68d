// TESSERA_REFLECT (reflect.hpp): field metadata of C++ structs, and field access through it.
#include <tessera/tessera.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <string>

namespace ts = tessera;

namespace game {
enum class Team : std::uint8_t { red, blue };
struct Vec2 {
    float x = 0, y = 0;
};
struct Unit {
    std::int32_t hp = 0;
    Vec2 pos;
    Team team = Team::red;
    std::string title;
    std::array<float, 3> rgb{};
    std::uint16_t slots[2] = {0, 0};
    ts::StringId tag;
    bool alive = false;
    std::uint64_t serial = 0;
    double unsaved = 0;  // left out of the reflection
};
}  // namespace game

TESSERA_REFLECT(game::Vec2, x, y)
TESSERA_REFLECT(game::Unit, hp, pos, team, title, rgb, slots, tag, alive, serial)

TEST(Reflect, SchemaDescribesEveryField) {
    const ts::ComponentInfo& info = ts::component_info<game::Unit>();
    ASSERT_NE(info.schema, nullptr);
    const ts::Schema& s = *info.schema;
    EXPECT_EQ(s.name, "game::Unit");
    EXPECT_EQ(s.size, sizeof(game::Unit));
    EXPECT_FALSE(s.flat);  // it holds a std::string
    ASSERT_EQ(s.fields.size(), 9u);
    EXPECT_EQ(s.fields[0].name, "hp");
    EXPECT_EQ(s.fields[0].type, ts::Field::i32);
    EXPECT_EQ(s.fields[0].offset, offsetof(game::Unit, hp));
    EXPECT_EQ(s.fields[1].type, ts::Field::record);
    ASSERT_NE(s.fields[1].schema, nullptr);
    EXPECT_EQ(s.fields[1].schema, &ts::reflect<game::Vec2>::schema());
    EXPECT_TRUE(s.fields[1].schema->flat);
    EXPECT_EQ(s.fields[2].type, ts::Field::u8);
    EXPECT_TRUE(s.fields[2].is_enum);
    EXPECT_EQ(s.fields[3].type, ts::Field::string);
    EXPECT_EQ(s.fields[4].type, ts::Field::f32);
    EXPECT_EQ(s.fields[4].count, 3u);
    EXPECT_EQ(s.fields[4].stride, sizeof(float));
    EXPECT_EQ(s.fields[5].type, ts::Field::u16);
    EXPECT_EQ(s.fields[5].count, 2u);
    EXPECT_EQ(s.fields[6].type, ts::Field::str);
    EXPECT_EQ(s.fields[7].type, ts::Field::boolean);
    EXPECT_EQ(s.fields[8].type, ts::Field::u64);
    EXPECT_EQ(s.find("pos"), &s.fields[1]);
    EXPECT_EQ(s.find("unsaved"), nullptr);
    EXPECT_EQ(ts::component_info<game::Vec2>().schema->size, sizeof(game::Vec2));
}

TEST(Reflect, FieldAccessLikeRuntimeComponents) {
    ts::World w;
    const ts::ComponentId unit = ts::component_id<game::Unit>();
    const ts::Entity e = w.spawn(game::Unit{});
    w.set_field(e, unit, "hp", 40);
    w.set_field(e, unit, "pos.y", 2.5f);
    w.set_field(e, unit, "team", 1);
    w.set_field(e, unit, "title", "Captain");
    w.set_field(e, unit, "rgb[2]", 0.5);
    w.set_field(e, unit, "slots[1]", 7);
    w.set_field(e, unit, "tag", "elite");
    w.set_field(e, unit, "alive", true);
    w.set_field(e, unit, "serial", 1ull << 40);
    const game::Unit& u = w.get<game::Unit>(e);
    EXPECT_EQ(u.hp, 40);
    EXPECT_EQ(u.pos.y, 2.5f);
    EXPECT_EQ(u.team, game::Team::blue);
    EXPECT_EQ(u.title, "Captain");
    EXPECT_EQ(u.rgb[2], 0.5f);
    EXPECT_EQ(u.slots[1], 7);
    EXPECT_EQ(w.strings().get(u.tag.value), "elite");
    EXPECT_TRUE(u.alive);
    EXPECT_EQ(u.serial, 1ull << 40);
    EXPECT_EQ(w.get_field<std::string>(e, unit, "title"), "Captain");
    EXPECT_EQ(w.get_field<std::string_view>(e, unit, "tag"), "elite");
    EXPECT_EQ(w.get_field<game::Team>(e, unit, "team"), game::Team::blue);
    EXPECT_EQ(w.get_field<float>(e, unit, "pos.y"), 2.5f);
    EXPECT_EQ(w.get_field<std::int32_t>(e, unit, std::size_t{0}), 40);
}

TEST(Reflect, BadPathsAreInvalidArgument) {
    ts::World w;
    const ts::ComponentId unit = ts::component_id<game::Unit>();
    const ts::Entity e = w.spawn(game::Unit{});
    for (const char* path : {"pos", "rgb", "rgb[3]", "rgb[x]", "rgb[", "pos.z", "hp.x", "unsaved",
                             "pos.", "rgb[0]x", "hp[0]", "pos[0].x", "team[0]"}) {
        try {
            w.set_field(e, unit, path, 1.0f);
            ADD_FAILURE() << path << " was accepted";
        } catch (const ts::Error& err) {
            EXPECT_EQ(err.code(), ts::errc::invalid_argument) << path;
        }
    }
    EXPECT_EQ(w.get<game::Unit>(e).hp, 0);
}

TEST(Reflect, StringFieldRefusesInvalidUtf8) {
    ts::World w;
    const ts::ComponentId unit = ts::component_id<game::Unit>();
    const ts::Entity e = w.spawn(game::Unit{});
    w.set_field(e, unit, "title", "Captain");
    try {
        w.set_field(e, unit, "title", "Cap\xfftain");
        ADD_FAILURE() << "invalid UTF-8 was accepted";
    } catch (const ts::Error& err) {
        EXPECT_EQ(err.code(), ts::errc::invalid_argument);
        EXPECT_NE(std::string(err.what()).find("title"), std::string::npos) << err.what();
    }
    EXPECT_EQ(w.get<game::Unit>(e).title, "Captain");
}

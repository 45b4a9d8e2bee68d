// Runtime components (dynamic.hpp): definitions, string table, field access, id-based calls,
// queries from ids, and the errors of each.
#include <tessera/serialize.hpp>
#include <tessera/tessera.hpp>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "common/error_of.hpp"

#include <cstring>
#include <functional>
#include <memory_resource>
#include <string>
#include <utility>
#include <vector>

namespace ts = tessera;
using tessera::test::error_of;

namespace {

struct Position {
    float x = 0, y = 0;
};

ts::ComponentId health_of(ts::World& w) {
    return w.component("DynHealth", {{"hp", ts::Field::i32}, {"max", ts::Field::i32}});
}

}  // namespace

TEST(Dynamic, DesignSampleWorks) {
    ts::World world;
    const ts::Entity e = world.spawn();
    ts::ComponentId health =
        world.component("Health", {{"hp", ts::Field::i32}, {"max", ts::Field::i32}});
    ts::ComponentId name = world.component("Name", {{"value", ts::Field::str}});
    world.add(e, health);  // fields start at zero
    EXPECT_EQ(world.get_field<std::int32_t>(e, health, "hp"), 0);
    world.set_field(e, health, "hp", 30);
    std::int32_t hp = world.get_field<std::int32_t>(e, health, "hp");
    EXPECT_EQ(hp, 30);
    world.add(e, name);
    world.set_field(e, name, "value", "Ayla");  // interned in world.strings()
    std::string_view who = world.get_field<std::string_view>(e, name, "value");
    EXPECT_EQ(who, "Ayla");
    EXPECT_EQ(world.get_field<ts::StringId>(e, name, "value").value, world.strings().find("Ayla"));
}

TEST(Dynamic, SameDefinitionSameIdInEveryWorld) {
    ts::World a, b;
    const ts::ComponentId x = health_of(a);
    const ts::ComponentId y = health_of(b);
    EXPECT_EQ(x, y);
    EXPECT_TRUE(x.valid());
    EXPECT_NE(x, ts::component_id<Position>());  // same id space, distinct ids
    EXPECT_EQ(ts::component_info(x).name, "DynHealth");
    EXPECT_EQ(ts::component_info(x).size, 8u);
}

TEST(Dynamic, RedefiningDifferentlyIsTypeConflict) {
    ts::World w;
    health_of(w);
    EXPECT_EQ(error_of([&] {
                  w.component("DynHealth", {{"hp", ts::Field::f32}});
              }),
              ts::errc::type_conflict);
    EXPECT_EQ(error_of([&] {
                  w.component("DynHealth", {{"hp", ts::Field::i32}, {"max", ts::Field::i32}},
                              ts::ComponentOptions{.enableable = true});
              }),
              ts::errc::type_conflict);
    // A C++ type's name is taken too.
    (void)ts::component_id<Position>();
    const std::string cpp_name(ts::component_info<Position>().name);
    EXPECT_EQ(error_of([&] {
                  w.component(cpp_name, {{"x", ts::Field::f32}});
              }),
              ts::errc::type_conflict);
}

TEST(Dynamic, BadDefinitionsAreInvalidArgument) {
    ts::World w;
    EXPECT_EQ(error_of([&] {
                  w.component("", {{"a", ts::Field::i32}});
              }),
              ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] {
                  w.component("DynBad1", {{"a", ts::Field::i32}, {"a", ts::Field::u8}});
              }),
              ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] {
                  w.component("DynBad2", {{"", ts::Field::i32}});
              }),
              ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] {
                  w.component("DynBad3", {{"s", ts::Field::string}});
              }),
              ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] {
                  w.component("DynBad5", {{"a.b", ts::Field::i32}});
              }),
              ts::errc::invalid_argument);
}

TEST(Dynamic, LayoutIsACStruct) {
    ts::World w;
    const ts::ComponentId id = w.component(
        "DynLayout", {{"a", ts::Field::u8}, {"b", ts::Field::f64}, {"c", ts::Field::u16}});
    const ts::ComponentInfo& info = ts::component_info(id);
    ASSERT_NE(info.schema, nullptr);
    EXPECT_EQ(info.schema->fields[0].offset, 0u);
    EXPECT_EQ(info.schema->fields[1].offset, 8u);
    EXPECT_EQ(info.schema->fields[2].offset, 16u);
    EXPECT_EQ(info.size, 24u);
    EXPECT_EQ(info.alignment, 8u);
}

TEST(Dynamic, EveryFieldTypeRoundTrips) {
    ts::World w;
    const ts::ComponentId id = w.component("DynAll", {{"f32", ts::Field::f32},
                                                      {"f64", ts::Field::f64},
                                                      {"i8", ts::Field::i8},
                                                      {"i16", ts::Field::i16},
                                                      {"i32", ts::Field::i32},
                                                      {"u8", ts::Field::u8},
                                                      {"u16", ts::Field::u16},
                                                      {"u32", ts::Field::u32},
                                                      {"b", ts::Field::boolean},
                                                      {"s", ts::Field::str}});
    const ts::Entity e = w.spawn();
    w.add(e, id);
    w.set_field(e, id, "f32", 1.5f);
    w.set_field(e, id, "f64", 2.25);
    w.set_field(e, id, "i8", -7);
    w.set_field(e, id, "i16", -300);
    w.set_field(e, id, "i32", -70000);
    w.set_field(e, id, "u8", 200);
    w.set_field(e, id, "u16", 60000);
    w.set_field(e, id, "u32", 4000000000u);
    w.set_field(e, id, "b", true);
    w.set_field(e, id, "s", std::string("hello"));
    EXPECT_EQ(w.get_field<float>(e, id, "f32"), 1.5f);
    EXPECT_EQ(w.get_field<double>(e, id, "f64"), 2.25);
    EXPECT_EQ(w.get_field<std::int8_t>(e, id, "i8"), -7);
    EXPECT_EQ(w.get_field<std::int16_t>(e, id, "i16"), -300);
    EXPECT_EQ(w.get_field<std::int32_t>(e, id, "i32"), -70000);
    EXPECT_EQ(w.get_field<std::uint8_t>(e, id, "u8"), 200);
    EXPECT_EQ(w.get_field<std::uint16_t>(e, id, "u16"), 60000);
    EXPECT_EQ(w.get_field<std::uint32_t>(e, id, "u32"), 4000000000u);
    EXPECT_TRUE(w.get_field<bool>(e, id, "b"));
    EXPECT_EQ(w.get_field<std::string>(e, id, "s"), "hello");
    // double reads any number.
    EXPECT_EQ(w.get_field<double>(e, id, "u16"), 60000.0);
    // By index, in declaration order.
    EXPECT_EQ(w.get_field<std::int32_t>(e, id, std::size_t{4}), -70000);
    w.set_field(e, id, std::size_t{4}, 12);
    EXPECT_EQ(w.get_field<std::int32_t>(e, id, "i32"), 12);
}

TEST(Dynamic, WrongFieldOrValueTypeIsInvalidArgumentAndChangesNothing) {
    ts::World w;
    const ts::ComponentId h = health_of(w);
    const ts::ComponentId flag = w.component("DynFlag", {{"on", ts::Field::boolean}});
    const ts::Entity e = w.spawn();
    w.add(e, h);
    w.add(e, flag);
    w.set_field(e, h, "hp", 5);
    EXPECT_EQ(error_of([&] { w.set_field(e, h, "nope", 1); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { w.set_field(e, h, "hp", "text"); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { w.set_field(e, h, "hp", 1.5); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { w.set_field(e, h, "hp", true); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { w.set_field(e, h, "hp", 5'000'000'000ll); }),
              ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { w.set_field(e, flag, "on", 1); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { w.set_field(e, h, std::size_t{2}, 1); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { (void)w.get_field<float>(e, h, "hp"); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { (void)w.get_field<std::string_view>(e, h, "hp"); }),
              ts::errc::invalid_argument);
    EXPECT_EQ(w.get_field<std::int32_t>(e, h, "hp"), 5);
    try {
        w.set_field(e, h, "nope", 1);
    } catch (const ts::Error& err) {
        EXPECT_NE(std::string(err.what()).find("DynHealth"), std::string::npos) << err.what();
        EXPECT_NE(std::string(err.what()).find("nope"), std::string::npos) << err.what();
    }
}

TEST(Dynamic, MissingComponentDeadEntityAndUnknownIdErrors) {
    ts::World w;
    const ts::ComponentId h = health_of(w);
    const ts::Entity e = w.spawn();
    EXPECT_EQ(error_of([&] { w.set_field(e, h, "hp", 1); }), ts::errc::missing_component);
    EXPECT_EQ(error_of([&] { (void)w.get_field<std::int32_t>(e, h, "hp"); }),
              ts::errc::missing_component);
    w.despawn(e);
    EXPECT_EQ(error_of([&] { w.add(e, h); }), ts::errc::not_alive);
    EXPECT_EQ(error_of([&] { w.set_field(e, h, "hp", 1); }), ts::errc::not_alive);
    const ts::ComponentId bogus{0x7FFFFFF0u};
    const ts::Entity f = w.spawn();
    EXPECT_EQ(error_of([&] { w.add(f, bogus); }), ts::errc::not_registered);
    EXPECT_EQ(error_of([&] { w.remove(f, bogus); }), ts::errc::not_registered);
    EXPECT_EQ(error_of([&] { w.add(f, ts::ComponentId{}); }), ts::errc::not_registered);
    EXPECT_FALSE(w.has(f, bogus));
    ts::CommandBuffer cb;
    EXPECT_EQ(error_of([&] { cb.add(f, bogus); }), ts::errc::not_registered);
    EXPECT_EQ(error_of([&] { cb.remove(f, bogus); }), ts::errc::not_registered);
    EXPECT_EQ(cb.size(), 0u);
    // A C++ component without field metadata has no fields to name.
    w.add(f, Position{1, 2});
    EXPECT_EQ(error_of([&] { w.set_field(f, ts::component_id<Position>(), "x", 1.0f); }),
              ts::errc::invalid_argument);
}

// Every public call that takes a ComponentId, with ids no component has: the default id, a huge
// one and one inside the registry's first block of ids that was never assigned. The checked
// calls throw not_registered naming themselves and change nothing; the noexcept queries answer
// false, null or 0.
TEST(Dynamic, EveryCallTakingAComponentIdRefusesAnIdNoComponentHas) {
    ts::World w;
    const ts::ComponentId h = health_of(w);
    const ts::ComponentId stunned = w.component("DynIdStunned", {}, {.enableable = true});
    const ts::Entity e = w.spawn();
    w.add(e, h);
    w.add(e, stunned);
    w.set_field(e, h, "hp", 7);
    const auto assigned = static_cast<std::uint32_t>(ts::component_id_count());
    ASSERT_LT(assigned + 3, 256u) << "the small id must lie in the first block of 256 ids";
    const ts::ComponentId unknown_ids[] = {ts::ComponentId{}, ts::ComponentId{0xFFFFFFF0u},
                                           ts::ComponentId{assigned + 3}};

    using Call = std::function<void(ts::ComponentId)>;
    ts::CommandBuffer cb;
    std::vector<ts::Chunk> chunks;
    w.collect_chunks({.all = {h}}, chunks);
    const std::vector<std::pair<std::string, Call>> checked = {
        {"World::add", [&](ts::ComponentId id) { w.add(e, id); }},
        {"World::remove", [&](ts::ComponentId id) { (void)w.remove(e, id); }},
        {"World::set_field", [&](ts::ComponentId id) { w.set_field(e, id, "hp", 1); }},
        {"World::set_field", [&](ts::ComponentId id) { w.set_field(e, id, std::size_t{0}, 1); }},
        {"World::get_field", [&](ts::ComponentId id) { (void)w.get_field<int>(e, id, "hp"); }},
        {"World::get_field",
         [&](ts::ComponentId id) { (void)w.get_field<int>(e, id, std::size_t{0}); }},
        {"World::enable", [&](ts::ComponentId id) { w.enable(e, id, false); }},
        {"World::is_enabled", [&](ts::ComponentId id) { (void)w.is_enabled(e, id); }},
        {"World::changed_tick", [&](ts::ComponentId id) { (void)w.changed_tick(e, id); }},
        {"World::added_tick", [&](ts::ComponentId id) { (void)w.added_tick(e, id); }},
        {"World::query_dynamic", [&](ts::ComponentId id) { (void)w.query_dynamic({.all = {id}}); }},
        {"World::query_dynamic",
         [&](ts::ComponentId id) { (void)w.query_dynamic({.all = {h}, .any = {id}}); }},
        {"World::query_dynamic",
         [&](ts::ComponentId id) { (void)w.query_dynamic({.all = {h}, .none = {id}}); }},
        {"DynamicQuery", [&](ts::ComponentId id) { ts::DynamicQuery q(w, {.all = {id}}); }},
        {"World::collect_chunks",
         [&](ts::ComponentId id) { w.collect_chunks({.all = {h}, .none = {id}}, chunks); }},
        {"CommandBuffer::add", [&](ts::ComponentId id) { cb.add(e, id); }},
        {"CommandBuffer::remove", [&](ts::ComponentId id) { cb.remove(e, id); }},
        {"Observers::enable",
         [&](ts::ComponentId id) { w.observers().enable(ts::Event::add, id, false); }},
        {"Observers::enable",
         [&](ts::ComponentId id) { w.observers().enable(ts::Event::spawn, id, false); }},
        {"to_json", [&](ts::ComponentId id) { (void)ts::to_json(w, e, id); }},
        {"set_fields",
         [&](ts::ComponentId id) {
             ts::set_fields(w, e, id, {{"hp", 1}});
         }},
    };
    for (const ts::ComponentId id : unknown_ids) {
        SCOPED_TRACE("id " + std::to_string(id.value));
        for (const auto& [op, call] : checked) {
            SCOPED_TRACE(op);
            try {
                call(id);
                ADD_FAILURE() << "no error";
            } catch (const ts::Error& err) {
                EXPECT_EQ(err.code(), ts::errc::not_registered) << err.what();
                EXPECT_NE(std::string(err.what()).find(op + ": component id"), std::string::npos)
                    << err.what();
            }
        }
        EXPECT_FALSE(w.has(e, id));
        EXPECT_FALSE(w.observers().is_enabled(ts::Event::add, id));
        EXPECT_FALSE(w.observers().has(ts::Event::add, id));
        EXPECT_EQ(w.observers().clear(ts::Event::add, id), 0u);
        EXPECT_EQ(ts::find_component_info(id), nullptr);
        EXPECT_FALSE(ts::component_info(id).id.valid());
        EXPECT_EQ(ts::component_info(id).name, "(unregistered component)");
        int visited = 0;
        w.query_dynamic({.all = {h}}).each_chunk([&](ts::Chunk& c) {
            ++visited;
            EXPECT_FALSE(c.has(id));
            EXPECT_EQ(c.column_bytes(id), nullptr);
            EXPECT_EQ(c.enabled(id), nullptr);
            c.mark_changed(id, 0);  // nothing to stamp
        });
        EXPECT_EQ(visited, 1);
    }
    // Nothing changed: the entity, its components and values, the buffer, the switches.
    EXPECT_EQ(w.count(), 1u);
    EXPECT_TRUE(w.has(e, h));
    EXPECT_TRUE(w.has(e, stunned));
    EXPECT_TRUE(w.is_enabled(e, stunned));
    EXPECT_EQ(w.get_field<std::int32_t>(e, h, "hp"), 7);
    EXPECT_EQ(cb.size(), 0u);
    EXPECT_EQ(chunks.size(), 1u) << "collect_chunks left its output as it was";
    EXPECT_TRUE(w.observers().is_enabled(ts::Event::add, h));
    EXPECT_EQ(ts::component_id_count(), assigned);
    // The known ids still answer.
    EXPECT_EQ(ts::find_component_info(h), &ts::component_info(h));
    EXPECT_TRUE(w.observers().is_enabled(ts::Event::spawn, h));
}

TEST(Dynamic, AddRemoveHasById) {
    ts::World w;
    const ts::ComponentId h = health_of(w);
    const ts::ComponentId frozen = w.component("DynFrozen");
    const ts::Entity e = w.spawn(Position{1, 2});
    w.add(e, h);
    w.add(e, frozen);
    EXPECT_TRUE(w.has(e, h));
    EXPECT_TRUE(w.has(e, frozen));
    EXPECT_TRUE(w.has(e, ts::component_id<Position>()));
    EXPECT_EQ(w.get<Position>(e).y, 2.0f);
    w.set_field(e, h, "hp", 9);
    w.add(e, h);  // resets to zero
    EXPECT_EQ(w.get_field<std::int32_t>(e, h, "hp"), 0);
    EXPECT_TRUE(w.remove(e, frozen));
    EXPECT_FALSE(w.remove(e, frozen));
    EXPECT_FALSE(w.has(e, frozen));
    // C++ types through their id: value-initialised.
    const ts::Entity f = w.spawn();
    w.add(f, ts::component_id<Position>());
    EXPECT_EQ(w.get<Position>(f).x, 0.0f);
}

TEST(Dynamic, EnableableRuntimeComponent) {
    ts::World w;
    const ts::ComponentId ai =
        w.component("DynAi", {{"state", ts::Field::u8}}, ts::ComponentOptions{.enableable = true});
    EXPECT_TRUE(ts::component_info(ai).enableable);
    const ts::Entity e = w.spawn();
    w.add(e, ai);
    ts::DynamicQuery q = w.query_dynamic({.all = {ai}});
    int rows = 0;
    q.each_chunk([&](ts::Chunk& c) {
        ASSERT_NE(c.enabled(ai), nullptr);
        EXPECT_EQ(c.enabled(ai)[0], 1);
        ++rows;
    });
    EXPECT_EQ(rows, 1);
    EXPECT_TRUE(w.is_enabled(e, ai));
    w.enable(e, ai, false);
    EXPECT_FALSE(w.is_enabled(e, ai));
    EXPECT_TRUE(w.has(e, ai));  // disabled, still there
    q.each_chunk([&](ts::Chunk& c) { EXPECT_EQ(c.enabled(ai)[0], 0); });
    w.enable(e, ai);
    EXPECT_TRUE(w.is_enabled(e, ai));
    const ts::ComponentId plain = health_of(w);
    w.add(e, plain);
    EXPECT_EQ(error_of([&] { w.enable(e, plain, false); }), ts::errc::not_enableable);
    EXPECT_EQ(error_of([&] { w.enable(w.spawn(), ai); }), ts::errc::missing_component);
    EXPECT_EQ(error_of([&] { (void)w.is_enabled(e, ts::ComponentId{0x7FFFFFF0u}); }),
              ts::errc::not_registered);
}

TEST(Dynamic, RuntimeTagsCanBeEnableable) {
    ts::World w;
    const ts::ComponentId stunned = w.component("DynStunned", {}, {.enableable = true});
    EXPECT_TRUE(ts::component_info(stunned).is_tag());
    EXPECT_TRUE(ts::component_info(stunned).enableable);
    const ts::Entity a = w.spawn();
    const ts::Entity b = w.spawn();
    w.add(a, stunned);
    w.add(b, stunned);
    w.enable(a, stunned, false);
    EXPECT_FALSE(w.is_enabled(a, stunned));
    EXPECT_TRUE(w.is_enabled(b, stunned));
    EXPECT_TRUE(w.has(a, stunned));
    ts::DynamicQuery q = w.query_dynamic({.all = {stunned}});
    int off = 0;
    q.each_chunk([&](ts::Chunk& c) {
        ASSERT_NE(c.enabled(stunned), nullptr);
        EXPECT_EQ(c.column_bytes(stunned), nullptr);
        for (std::size_t r = 0; r < c.count(); ++r) off += c.enabled(stunned)[r] == 0 ? 1 : 0;
    });
    EXPECT_EQ(off, 1);
    w.remove(a, stunned);
    w.add(a, stunned);
    EXPECT_TRUE(w.is_enabled(a, stunned));
}

TEST(Dynamic, ChangeTicksById) {
    ts::World w;
    const ts::ComponentId h = health_of(w);
    const ts::ComponentId quiet = w.component("DynQuiet", {{"v", ts::Field::u8}},
                                              ts::ComponentOptions{.track_changes = false});
    const ts::Entity e = w.spawn();
    w.add(e, h);
    w.add(e, quiet);
    const std::uint64_t start = w.changed_tick(e, h);
    EXPECT_EQ(w.added_tick(e, h), start);
    w.advance_tick();
    w.set_field(e, h, "hp", 3);
    EXPECT_GT(w.changed_tick(e, h), start);
    EXPECT_EQ(w.added_tick(e, h), start);
    EXPECT_EQ(error_of([&] { (void)w.changed_tick(e, quiet); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { (void)w.changed_tick(w.spawn(), h); }), ts::errc::missing_component);
}

TEST(Dynamic, ObserversAndDeferralWorkById) {
    ts::World w;
    const ts::ComponentId h = health_of(w);
    int sets = 0;
    const ts::Entity e = w.spawn(Position{});
    w.add(e, h);
    // on_set through a typed observer can't name a runtime type; an entity observer sees adds.
    auto spawned = w.on_spawn([&](ts::World&, ts::Entity) { ++sets; });
    // Inside a loop, add(e, id) is deferred and applied at the end.
    std::vector<ts::Entity> made;
    w.each([&](ts::Entity x, Position&) {
        const ts::Entity n = w.spawn();
        w.add(n, h);
        EXPECT_FALSE(w.has(n, h));
        made.push_back(n);
        (void)x;
    });
    ASSERT_EQ(made.size(), 1u);
    EXPECT_TRUE(w.has(made[0], h));
    EXPECT_EQ(sets, 1);
    // CommandBuffer by id.
    ts::CommandBuffer cb;
    const ts::Entity p = cb.spawn();
    cb.add(p, h);
    cb.apply(w);
    const ts::Entity made_by_buffer = cb.resolved(p);
    EXPECT_TRUE(w.has(made_by_buffer, h));
    cb.remove(made_by_buffer, h);
    cb.apply(w);
    EXPECT_FALSE(w.has(made_by_buffer, h));
}

TEST(Dynamic, QueryDynamicAllAnyNoneAndRawColumns) {
    ts::World w;
    const ts::ComponentId h = health_of(w);
    const ts::ComponentId tag = w.component("DynTag");
    std::vector<ts::Entity> es;
    for (int i = 0; i < 10; ++i) {
        const ts::Entity e = w.spawn(Position{static_cast<float>(i), 0});
        w.add(e, h);
        w.set_field(e, h, "hp", i);
        if (i % 2 == 0) w.add(e, tag);
        es.push_back(e);
    }
    ts::DynamicQuery all = w.query_dynamic({.all = {h, ts::component_id<Position>()}});
    EXPECT_EQ(all.count(), 10u);
    ts::DynamicQuery odd = w.query_dynamic({.all = {h}, .none = {tag}});
    EXPECT_EQ(odd.count(), 5u);
    ts::DynamicQuery any = w.query_dynamic({.any = {tag}});
    EXPECT_EQ(any.count(), 5u);
    const ts::FieldInfo& hp = *ts::component_info(h).schema->find("hp");
    const std::size_t stride = ts::component_info(h).size;
    std::int64_t sum = 0;
    odd.each_chunk([&](ts::Chunk& c) {
        std::byte* base = c.column_bytes(h);
        ASSERT_NE(base, nullptr);
        EXPECT_EQ(c.column_bytes(tag), nullptr);  // a tag has no column
        for (std::size_t r = 0; r < c.count(); ++r) {
            std::int32_t v;
            std::memcpy(&v, base + r * stride + hp.offset, 4);
            sum += v;
        }
    });
    EXPECT_EQ(sum, 1 + 3 + 5 + 7 + 9);
    // New archetypes are matched when the query next runs; changes inside are deferred.
    const ts::Entity late = w.spawn();
    w.add(late, h);
    EXPECT_EQ(odd.count(), 6u);
    odd.each_chunk([&](ts::Chunk& c) {
        for (const ts::Entity e : c.entities()) w.add(e, tag);
    });
    EXPECT_EQ(odd.count(), 0u);
    EXPECT_EQ(error_of([&] { (void)w.query_dynamic({.all = {ts::ComponentId{0x7FFFFFF0u}}}); }),
              ts::errc::not_registered);
}

namespace {
struct DynJoint {
    int v = 0;
};

// The message of the tessera::Error that f() throws ("" and a test failure when none).
template <class F>
std::string message_of(F&& f) {
    try {
        f();
    } catch (const ts::Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "no tessera::Error thrown";
    return "";
}
}  // namespace

// issue 20, item 3: one add(e, component_id<ChildOf>()) in a world that had not related
// anything yet made ChildOf a plain component there, and every later relate<ChildOf> threw.
TEST(Dynamic, ChildOfByIdIsRefusedAndTheHierarchyKeepsWorking) {
    ts::World w;
    const ts::ComponentId child_of = ts::component_id<ts::ChildOf>();
    const ts::ComponentId targets = ts::component_id<ts::Targets<ts::ChildOf>>();
    const ts::Entity e = w.spawn(Position{1, 2});
    const std::size_t archetypes = w.archetype_count();
    for (const ts::ComponentId id : {child_of, targets}) {
        const std::string name(ts::component_info(id).name);
        const std::string added = message_of([&] { w.add(e, id); });
        EXPECT_NE(added.find("World::add"), std::string::npos) << added;
        EXPECT_NE(added.find(name), std::string::npos) << added;
        EXPECT_NE(added.find("relate"), std::string::npos) << added;
        EXPECT_EQ(error_of([&] { w.add(e, id); }), ts::errc::invalid_argument);
        const std::string removed = message_of([&] { w.remove(e, id); });
        EXPECT_NE(removed.find("World::remove"), std::string::npos) << removed;
        EXPECT_NE(removed.find(name), std::string::npos) << removed;
        // Inside a loop (deferred) the call is refused at once, nothing queued.
        w.each([&](ts::Entity x, Position&) {
            EXPECT_EQ(error_of([&] { w.add(x, id); }), ts::errc::invalid_argument);
            EXPECT_EQ(error_of([&] { w.remove(x, id); }), ts::errc::invalid_argument);
        });
        // A command buffer refuses them while recording.
        ts::CommandBuffer cb;
        EXPECT_EQ(error_of([&] { cb.add(e, id); }), ts::errc::invalid_argument);
        EXPECT_EQ(error_of([&] { cb.remove(e, id); }), ts::errc::invalid_argument);
        EXPECT_EQ(cb.size(), 0u);
        EXPECT_FALSE(w.has(e, id));
    }
    // Nothing changed.
    EXPECT_EQ(w.archetype_count(), archetypes);
    EXPECT_EQ(w.get<Position>(e).y, 2.0f);
    // The hierarchy works.
    const ts::Entity parent = w.spawn();
    w.relate(e, ts::ChildOf{}, parent);
    EXPECT_EQ(w.parent(e), parent);
    ASSERT_EQ(w.children(parent).size(), 1u);
    EXPECT_EQ(w.children(parent)[0], e);
    // And stays protected once it is in use: the related entity keeps its parent.
    EXPECT_EQ(error_of([&] { w.remove(e, child_of); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { w.add(w.spawn(), child_of); }), ts::errc::invalid_argument);
    EXPECT_EQ(w.parent(e), parent);
    w.despawn(parent);  // cascades
    EXPECT_FALSE(w.is_alive(e));
}

TEST(Dynamic, RelationComponentsByIdAreRefusedOnceRelated) {
    ts::World w;
    const ts::ComponentId data = ts::component_id<DynJoint>();
    const ts::ComponentId targets = ts::component_id<ts::Targets<DynJoint>>();
    const ts::Entity a = w.spawn(), b = w.spawn(), c = w.spawn();
    // Targets<R> belongs to R's relation even before the world has seen R.
    EXPECT_EQ(error_of([&] { w.add(c, targets); }), ts::errc::invalid_argument);
    w.relate(a, DynJoint{3}, b);
    for (const ts::ComponentId id : {data, targets}) {
        EXPECT_EQ(error_of([&] { w.add(c, id); }), ts::errc::invalid_argument);
        EXPECT_EQ(error_of([&] { w.remove(a, id); }), ts::errc::invalid_argument);
        EXPECT_EQ(error_of([&] { w.remove(c, id); }), ts::errc::invalid_argument);
        ts::CommandBuffer cb;
        cb.add(c, data);  // the buffer can't know DynJoint is a relation in w: refused on apply
        EXPECT_EQ(error_of([&] { cb.apply(w); }), ts::errc::invalid_argument);
        EXPECT_EQ(cb.size(), 1u);
        cb.clear();
        cb.remove(a, data);
        EXPECT_EQ(error_of([&] { cb.apply(w); }), ts::errc::invalid_argument);
    }
    EXPECT_FALSE(w.has(c, data));
    EXPECT_TRUE(w.related<DynJoint>(a, b));
    EXPECT_EQ(w.relation<DynJoint>(a)->v, 3);
}

TEST(StringTable, InternGetFind) {
    std::pmr::monotonic_buffer_resource mr;
    ts::StringTable t(&mr);
    EXPECT_EQ(t.size(), 1u);
    EXPECT_EQ(t.get(0), "");
    EXPECT_EQ(t.intern(""), 0u);
    const std::uint32_t a = t.intern("alpha");
    const std::uint32_t b = t.intern("beta");
    EXPECT_EQ(t.intern("alpha"), a);
    EXPECT_NE(a, b);
    EXPECT_EQ(t.get(a), "alpha");
    EXPECT_EQ(t.find("beta"), b);
    EXPECT_EQ(t.find("gamma"), 0xFFFFFFFFu);
    EXPECT_EQ(error_of([&] { (void)t.get(99); }), ts::errc::invalid_argument);
    // Views stay valid while the table grows.
    const std::string_view view = t.get(a);
    for (int i = 0; i < 5000; ++i) {
        // Appended, not `"s" + std::to_string(i)`: gcc 12 -O3 warns (-Wrestrict) on that
        // operator+ by mistake.
        std::string name = "s";
        name += std::to_string(i);
        t.intern(name);
    }
    EXPECT_EQ(view, "alpha");
    EXPECT_EQ(t.size(), 5003u);
    EXPECT_EQ(t.get(t.find("s4321")), "s4321");
    const std::string big(10000, 'x');
    EXPECT_EQ(t.get(t.intern(big)), big);
    ts::StringTable copy(t);
    EXPECT_EQ(copy.size(), t.size());
    EXPECT_EQ(copy.find("s17"), t.find("s17"));
}

namespace {

// Byte sequences that are not UTF-8: a stray continuation byte, bytes never used, an overlong
// form, a surrogate, a code point past U+10FFFF, a truncated sequence.
const std::vector<std::string> not_utf8 = {"\x80",         "a\xff",
                                           "\xc0\xaf",     "\xe0\x80\xaf",
                                           "\xed\xa0\x80", "\xf4\x90\x80\x80",
                                           "ok \xe2\x82",  "\xf8\x88\x80\x80\x80"};

}  // namespace

TEST(StringTable, InternRefusesInvalidUtf8AndStaysAsItWas) {
    ts::StringTable t;
    const std::uint32_t a = t.intern("alpha");
    for (const std::string& s : not_utf8) {
        EXPECT_EQ(error_of([&] { (void)t.intern(s); }), ts::errc::invalid_argument) << s;
        EXPECT_EQ(t.find(s), 0xFFFFFFFFu);
    }
    EXPECT_EQ(t.size(), 2u);
    EXPECT_EQ(t.intern("alpha"), a);
    for (const std::string s : {"h\xc3\xa9llo", "\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x98\x80",
                                "\x7f", "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf"})
        EXPECT_EQ(t.get(t.intern(s)), s);  // é, 日本, 😀, DEL, U+10FFFF, U+D7FF
}

TEST(Dynamic, SetFieldRefusesInvalidUtf8NamingTheFieldAndChangesNothing) {
    ts::World w;
    const ts::ComponentId name = w.component("DynName", {{"value", ts::Field::str}});
    const ts::Entity e = w.spawn();
    w.add(e, name);
    w.set_field(e, name, "value", "Ayla");
    const std::size_t strings = w.strings().size();
    for (const std::string& s : not_utf8) {
        try {
            w.set_field(e, name, "value", s);
            ADD_FAILURE() << "expected invalid_argument";
        } catch (const ts::Error& err) {
            EXPECT_EQ(err.code(), ts::errc::invalid_argument);
            const std::string what = err.what();
            EXPECT_NE(what.find("DynName"), std::string::npos) << what;
            EXPECT_NE(what.find("value"), std::string::npos) << what;
            EXPECT_NE(what.find(std::to_string(e.index) + ":" + std::to_string(e.generation)),
                      std::string::npos)
                << what;
        }
    }
    EXPECT_EQ(w.get_field<std::string_view>(e, name, "value"), "Ayla");
    EXPECT_EQ(w.strings().size(), strings);
    EXPECT_NO_THROW((void)ts::to_json(w).dump());
    w.set_field(e, name, "value", "h\xc3\xa9llo");
    EXPECT_EQ(w.get_field<std::string_view>(e, name, "value"), "h\xc3\xa9llo");
}

TEST(Dynamic, ComponentAndFieldNamesMustBeUtf8) {
    ts::World w;
    EXPECT_EQ(error_of([&] {
                  (void)w.component("DynBad\xff", {{"x", ts::Field::i32}});
              }),
              ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] {
                  (void)w.component("DynBadField", {{"x\xc0\xaf", ts::Field::i32}});
              }),
              ts::errc::invalid_argument);
}

// Names and paths in messages are quoted with NUL, control characters and bad bytes escaped:
// the message is whole (a NUL would end what()) and valid UTF-8. Names with control characters
// are refused at definition.
TEST(Dynamic, MessagesQuoteNamesAndPathsEscaped) {
    ts::World w;
    const ts::ComponentId h = health_of(w);
    const ts::Entity e = w.spawn();
    w.add(e, h);
    const auto message = [](auto&& call) {
        try {
            call();
            ADD_FAILURE() << "no error";
        } catch (const ts::Error& err) {
            EXPECT_EQ(err.code(), ts::errc::invalid_argument);
            return std::string(err.what());
        }
        return std::string();
    };
    const std::string path("h\0p\x1b\xc3", 5);
    for (const std::string& what : {message([&] { w.set_field(e, h, path, 1); }), message([&] {
                                        (void)w.get_field<std::int32_t>(e, h, path);
                                    })}) {
        EXPECT_NE(what.find(R"('h\x00p\x1B\xC3')"), std::string::npos) << what;
        EXPECT_NE(what.find("DynHealth"), std::string::npos) << what;
    }
    const std::string nested = message([&] { w.set_field(e, h, std::string("hp.\x7f", 4), 1); });
    EXPECT_NE(nested.find(R"('hp.\x7F')"), std::string::npos) << nested;

    const std::size_t ids = ts::component_id_count();
    const std::string name = message([&] {
        (void)w.component(std::string("DynCtl\0x", 8), {{"x", ts::Field::i32}});
    });
    EXPECT_NE(
        name.find(
            R"(World::component('DynCtl\x00x'): the name holds a control character (byte 6))"),
        std::string::npos)
        << name;
    const std::string field = message([&] {
        (void)w.component("DynCtlField", {{std::string("a\nb"), ts::Field::i32}});
    });
    EXPECT_NE(field.find(R"('a\x0Ab')"), std::string::npos) << field;
    EXPECT_NE(field.find("control character"), std::string::npos) << field;
    EXPECT_EQ(ts::component_id_count(), ids) << "nothing was defined";
}

TEST(Dynamic, AnIndexOnAFieldThatIsNotAnArrayIsABadPath) {
    ts::World w;
    const ts::ComponentId h = health_of(w);
    const ts::Entity e = w.spawn();
    w.add(e, h);
    w.set_field(e, h, "hp", 7);
    EXPECT_EQ(error_of([&] { w.set_field(e, h, "hp[0]", 1); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { w.set_field(e, h, "hp[1]", 1); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { (void)w.get_field<std::int32_t>(e, h, "hp[0]"); }),
              ts::errc::invalid_argument);
    EXPECT_EQ(w.get_field<std::int32_t>(e, h, "hp"), 7);
}

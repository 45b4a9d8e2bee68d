// transform.hpp, reflection: LocalTransform and WorldTransform are reflected components (a
// `matrix` of 4 columns {x, y, z, w}), so fields are read and written by path, and both snapshot
// formats save and load them by field (before, saving a world with transforms was refused).
#include <tessera/dynamic.hpp>
#include <tessera/reflect.hpp>
#include <tessera/relation.hpp>
#include <tessera/serialize.hpp>
#include <tessera/transform.hpp>
#include <tessera/world.hpp>

#include "common/error_of.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <glm/gtc/matrix_transform.hpp>

#include <cstdint>
#include <string>

namespace ts = tessera;
using json = nlohmann::json;

namespace {

glm::mat4 sample_matrix(float seed) {
    glm::mat4 m = glm::translate(glm::mat4(1.0f), glm::vec3(seed, -2.5f * seed, 0.125f));
    return glm::rotate(m, 0.3f * seed, glm::vec3(0.0f, 0.0f, 1.0f));
}

TEST(TransformReflect, BothTransformsHaveAMatrixOfFourColumns) {
    for (const ts::Schema* s : {ts::component_info<ts::LocalTransform>().schema,
                                ts::component_info<ts::WorldTransform>().schema}) {
        ASSERT_NE(s, nullptr);
        ASSERT_EQ(s->fields.size(), 1u);
        const ts::FieldInfo& m = s->fields[0];
        EXPECT_EQ(m.name, "matrix");
        EXPECT_EQ(m.type, ts::Field::record);
        EXPECT_EQ(m.count, 4u);
        EXPECT_EQ(m.stride, 16u);
        ASSERT_NE(m.schema, nullptr);
        ASSERT_EQ(m.schema->fields.size(), 4u);
        EXPECT_EQ(m.schema->fields[3].name, "w");
        EXPECT_EQ(s->size, 64u);
        EXPECT_TRUE(s->flat);
    }
    EXPECT_EQ(ts::component_info<ts::LocalTransform>().schema->name, "tessera::LocalTransform");
}

TEST(TransformReflect, FieldPathsNameMatrixElementsColumnMajor) {
    ts::World w;
    const ts::Entity e = w.spawn(ts::LocalTransform{sample_matrix(3.0f)});
    const ts::ComponentId id = ts::component_id<ts::LocalTransform>();
    // glm is column-major: column 3 is the translation.
    EXPECT_EQ(w.get_field<float>(e, id, "matrix[3].x"), 3.0f);
    EXPECT_EQ(w.get_field<float>(e, id, "matrix[3].y"), -7.5f);
    EXPECT_EQ(w.get_field<float>(e, id, "matrix[3].w"), 1.0f);
    EXPECT_EQ(w.get_field<float>(e, id, "matrix[1].x"), sample_matrix(3.0f)[1][0]);
    w.set_field(e, id, "matrix[3].y", 42.5f);
    EXPECT_EQ(w.get<ts::LocalTransform>(e).matrix[3][1], 42.5f);
    EXPECT_EQ(ts::test::error_of([&] { w.set_field(e, id, "matrix[4].x", 1.0f); }),
              ts::errc::invalid_argument);
    EXPECT_EQ(ts::test::error_of([&] { w.set_field(e, id, "matrix[0]", 1.0f); }),
              ts::errc::invalid_argument);
    EXPECT_EQ(ts::test::error_of([&] { w.set_field(e, id, "scale", 1.0f); }),
              ts::errc::invalid_argument);
}

/// A world with a two-level hierarchy, propagated.
void make_hierarchy(ts::World& w) {
    const ts::Entity root = w.spawn(ts::LocalTransform{sample_matrix(1.0f)});
    for (int i = 0; i < 3; ++i) {
        const ts::Entity child = w.spawn(ts::LocalTransform{sample_matrix(0.5f * float(i))});
        w.relate(child, ts::ChildOf{}, root);
    }
    ts::propagate_transforms(w);
}

TEST(TransformReflect, JsonWritesTheMatrixByFieldAndRoundTrips) {
    ts::World w;
    make_hierarchy(w);
    const json j = ts::to_json(w);
    // Both components described by field, values as {"matrix": [{"x":..}, x4]}.
    bool described = false;
    for (const json& c : j["components"]) {
        if (c["name"] != "tessera::WorldTransform") continue;
        described = true;
        EXPECT_EQ(c["kind"], "fields");
        EXPECT_EQ(c["fields"][0]["name"], "matrix");
        EXPECT_EQ(c["fields"][0]["count"], 4);
        EXPECT_EQ(c["fields"][0]["fields"][3]["name"], "w");
    }
    EXPECT_TRUE(described) << j["components"].dump();
    const std::string text = j.dump();
    EXPECT_NE(text.find(R"("matrix":[{"w":)"), std::string::npos) << text.substr(0, 2000);

    ts::World back;
    ts::from_json(json::parse(text), back);
    EXPECT_EQ(ts::state_hash(back), ts::state_hash(w));
    for (const ts::Entity e : w.entities()) {
        ASSERT_TRUE(back.is_alive(e));
        EXPECT_EQ(back.get<ts::LocalTransform>(e), w.get<ts::LocalTransform>(e));
        EXPECT_EQ(back.get<ts::WorldTransform>(e), w.get<ts::WorldTransform>(e));
    }
    // The loaded world propagates like the original: nothing to change.
    EXPECT_EQ(ts::propagate_transforms(back), 0u);
}

TEST(TransformReflect, BinarySnapshotsRoundTrip) {
    ts::World w;
    make_hierarchy(w);
    ts::World back;
    ts::load(ts::save(w), back);
    EXPECT_EQ(ts::state_hash(back), ts::state_hash(w));
    for (const ts::Entity e : w.entities())
        EXPECT_EQ(back.get<ts::WorldTransform>(e), w.get<ts::WorldTransform>(e));
}

TEST(TransformReflect, StateHashSeesTheMatrix) {
    ts::World a;
    ts::World b;
    a.spawn(ts::LocalTransform{sample_matrix(1.0f)});
    b.spawn(ts::LocalTransform{sample_matrix(1.0f)});
    EXPECT_EQ(ts::state_hash(a), ts::state_hash(b));
    b.set_field(b.entities()[0], ts::component_id<ts::LocalTransform>(), "matrix[2].z", 9.0f);
    EXPECT_NE(ts::state_hash(a), ts::state_hash(b));
}

TEST(TransformReflect, ASnapshotWithAChangedMatrixLayoutIsRefused) {
    ts::World w;
    w.spawn(ts::LocalTransform{});
    json j = ts::to_json(w);
    for (json& c : j["components"])
        if (c["name"] == "tessera::LocalTransform") c["fields"][0]["count"] = 3;
    ts::World back;
    EXPECT_EQ(ts::test::error_of([&] { ts::from_json(j, back); }), ts::errc::invalid_argument);
    EXPECT_EQ(back.count(), 0u);
}

TEST(TransformReflect, SnapshotsWithoutTransformsStillLoad) {
    // The version-1 document of a world without transforms, as written before they were
    // reflected: the format did not change (a world with transforms could not be saved then).
    const json old = json::parse(R"({"format":"tessera-world","version":1,"tick":3,
        "generations":[1],"free":[],"permanent":[],"strings":[],"components":[],
        "archetypes":[{"components":[],"entities":[0],"values":[],"enabled":[],"ticks":[]}],
        "relations":[{"targets":"tessera::Targets<tessera::ChildOf>","sources":[]}]})");
    ts::World w;
    ts::from_json(old, w);
    EXPECT_EQ(w.count(), 1u);
    EXPECT_TRUE(w.is_alive(ts::Entity{0, 1}));
}

}  // namespace

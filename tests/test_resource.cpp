#include <tessera/resource.hpp>

#include "common/counting_resource.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace ts = tessera;
using ts::test::Tracked;

namespace {
struct Dt {
    float value = 0;
};
struct Config {
    std::string name;
    std::unique_ptr<int> owned;  // move-only resources work
};
struct ThrowingMove {
    int v = 0;
    ThrowingMove() = default;
    ThrowingMove(ThrowingMove&& o) : v(o.v) {}  // may throw: fine for resources
};
}  // namespace

TEST(Resource, InsertReadReplaceRemove) {
    ts::World w;
    EXPECT_FALSE(w.has_resource<Dt>());
    EXPECT_EQ(w.try_resource<Dt>(), nullptr);
    Dt& dt = w.insert_resource(Dt{0.5f});
    EXPECT_EQ(dt.value, 0.5f);
    EXPECT_TRUE(w.has_resource<Dt>());
    w.resource<Dt>().value = 0.25f;
    EXPECT_EQ(w.try_resource<Dt>()->value, 0.25f);
    const ts::World& cw = w;
    EXPECT_EQ(cw.resource<Dt>().value, 0.25f);
    w.insert_resource(Dt{1.0f});  // replaces
    EXPECT_EQ(w.resource<Dt>().value, 1.0f);
    EXPECT_TRUE(w.remove_resource<Dt>());
    EXPECT_FALSE(w.remove_resource<Dt>());
    EXPECT_FALSE(w.has_resource<Dt>());
}

TEST(Resource, MissingResourceNamesTheType) {
    ts::World w;
    try {
        (void)w.resource<Dt>();
        FAIL();
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::missing_resource);
        EXPECT_NE(std::string(e.what()).find("Dt"), std::string::npos) << e.what();
    }
}

TEST(Resource, AnyMovableTypeAndDestroyedWithTheWorld) {
    Tracked::live = 0;
    ts::test::CountingResource mr;
    {
        ts::World w(&mr);
        w.insert_resource(Config{"cfg", std::make_unique<int>(7)});
        w.insert_resource(ThrowingMove{});
        w.insert_resource(Tracked{3});
        const Tracked t(4);
        w.insert_resource(t);  // copied
        EXPECT_EQ(w.resource<Tracked>().value, 4);
        EXPECT_EQ(*w.resource<Config>().owned, 7);
        EXPECT_EQ(Tracked::live, 2);  // t and the stored one
        ts::World moved(std::move(w));
        EXPECT_EQ(moved.resource<Config>().name, "cfg");
    }
    EXPECT_EQ(Tracked::live, 0);
    EXPECT_EQ(mr.outstanding, 0u);
}

TEST(Resource, SeveralInOneCall) {
    ts::World w;
    w.insert_resource(Dt{0.5f});
    w.insert_resource(Config{});
    auto [dt, config] = w.resource<Dt, Config>();
    dt.value = 2.0f;
    EXPECT_EQ(w.resource<Dt>().value, 2.0f);
    EXPECT_EQ(&config, &w.resource<Config>());
    const ts::World& cw = w;
    auto [cdt, cconfig] = cw.resource<Dt, Config>();
    EXPECT_EQ(cdt.value, 2.0f);
    EXPECT_EQ(&cconfig, &config);
    w.remove_resource<Config>();
    try {
        (void)w.resource<Dt, Config>();
        ADD_FAILURE() << "no error";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::missing_resource);
        EXPECT_NE(std::string(e.what()).find("Config"), std::string::npos) << e.what();
    }
}

// module.hpp: import once per world, nested imports, cycles, a failing build, names.
#include <tessera/module.hpp>
#include <tessera/tessera.hpp>

#include <gtest/gtest.h>

#include "common/error_of.hpp"

#include <stdexcept>
#include <string_view>
#include <vector>

namespace ts = tessera;
using tessera::test::error_of;

namespace {

struct Counter {
    int builds = 0;
};

struct Physics {
    static constexpr std::string_view name = "physics";
    void build(ts::World& w, ts::Schedule& s) {
        ++w.resource<Counter>().builds;
        s.add("integrate", [](ts::World&) {});
    }
};

struct Game {
    void build(ts::World& w, ts::Schedule& s) {
        w.import <Physics>(s);  // a module may import others
        ++w.resource<Counter>().builds;
    }
};

struct Loop2;
struct Loop1 {
    static constexpr std::string_view name = "loop1";
    void build(ts::World& w, ts::Schedule& s);
};
struct Loop2 {
    static constexpr std::string_view name = "loop2";
    void build(ts::World& w, ts::Schedule& s) { w.import <Loop1>(s); }
};
void Loop1::build(ts::World& w, ts::Schedule& s) {
    w.import <Loop2>(s);
}

struct Failing {
    static inline bool fail = true;
    static constexpr std::string_view name = "failing";
    void build(ts::World&, ts::Schedule&) {
        if (fail) throw std::runtime_error("build");
    }
};

static_assert(ts::Module<Physics>);
static_assert(!ts::Module<Counter>);

TEST(Module, ImportBuildsOncePerWorld) {
    ts::World w;
    w.insert_resource(Counter{});
    ts::Schedule s;
    w.import <Physics>(s);
    w.import <Physics>(s);
    EXPECT_EQ(w.resource<Counter>().builds, 1);
    ASSERT_EQ(w.modules().size(), 1u);
    EXPECT_EQ(w.modules()[0], "physics");
    ts::World other;
    other.insert_resource(Counter{});
    ts::Schedule t;
    other.import <Physics>(t);
    EXPECT_EQ(other.resource<Counter>().builds, 1);
}

TEST(Module, NestedImportsAreListedInCompletionOrder) {
    ts::World w;
    w.insert_resource(Counter{});
    ts::Schedule s;
    w.import <Game>(s);
    w.import <Physics>(s);
    EXPECT_EQ(w.resource<Counter>().builds, 2);
    ASSERT_EQ(w.modules().size(), 2u);
    EXPECT_EQ(w.modules()[0], "physics");
    EXPECT_NE(w.modules()[1].find("Game"), std::string_view::npos);  // its type name
}

TEST(Module, ImportCycleIsInvalidArgument) {
    ts::World w;
    ts::Schedule s;
    try {
        w.import <Loop1>(s);
        ADD_FAILURE() << "no error";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::invalid_argument);
        EXPECT_NE(std::string_view(e.what()).find("loop1 -> loop2 -> loop1"),
                  std::string_view::npos);
    }
    EXPECT_TRUE(w.modules().empty());
}

TEST(Module, FailingBuildIsNotRecorded) {
    ts::World w;
    ts::Schedule s;
    Failing::fail = true;
    EXPECT_THROW(w.import <Failing>(s), std::runtime_error);
    EXPECT_TRUE(w.modules().empty());
    Failing::fail = false;
    w.import <Failing>(s);  // tried again: built now
    ASSERT_EQ(w.modules().size(), 1u);
    EXPECT_EQ(w.modules()[0], "failing");
}

}  // namespace

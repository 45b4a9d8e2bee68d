#include <tessera/error.hpp>

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace ts = tessera;

TEST(Error, CarriesCodeAndMessage) {
    const ts::Error err(ts::errc::not_alive, "World::get<Position>: entity 42:3 is not alive");
    EXPECT_EQ(err.code(), ts::errc::not_alive);
    EXPECT_STREQ(err.what(), "World::get<Position>: entity 42:3 is not alive");
    const std::runtime_error& base = err;  // catchable as a standard exception
    EXPECT_STREQ(base.what(), err.what());
}

TEST(Error, EveryCodeHasAStableDistinctName) {
    const ts::errc all[] = {
        ts::errc::not_alive,        ts::errc::missing_component, ts::errc::not_registered,
        ts::errc::type_conflict,    ts::errc::not_enableable,    ts::errc::permanent_entity,
        ts::errc::missing_resource, ts::errc::ambiguous_order,   ts::errc::schedule_cycle,
        ts::errc::unknown_system,   ts::errc::system_failed,     ts::errc::hierarchy_cycle,
        ts::errc::limit_exceeded,   ts::errc::invalid_argument,  ts::errc::network};
    std::set<std::string_view> names;
    for (ts::errc c : all) names.insert(ts::to_string(c));
    EXPECT_EQ(names.size(), std::size(all));
    EXPECT_EQ(ts::to_string(ts::errc::not_alive), "not_alive");
    EXPECT_EQ(ts::to_string(ts::errc::missing_component), "missing_component");
    EXPECT_EQ(ts::to_string(ts::errc::invalid_argument), "invalid_argument");
}

TEST(Error, ThrownAndCaughtByCode) {
    try {
        throw ts::Error(ts::errc::type_conflict, "x");
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::type_conflict);
        return;
    }
    FAIL() << "not caught";
}

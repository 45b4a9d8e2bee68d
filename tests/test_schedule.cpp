// Schedules (schedule.hpp): order, conflicts and layers, strict mode and build errors, phases and
// manual systems, enable/remove, class systems, missing resources, failures, sync points and
// per-system change ticks.
#include <tessera/system_stats.hpp>
#include <tessera/tessera.hpp>

#include <nlohmann/json.hpp>

#include "common/tick.hpp"

#include <gtest/gtest.h>

#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <future>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ts = tessera;

namespace {
struct Position {
    float x = 0;
    float y = 0;
};
struct Velocity {
    float dx = 0;
    float dy = 0;
};
struct Health {
    int hp = 0;
};
struct Hot {};
struct Score {
    int value = 0;
};
struct Config {
    int value = 0;
};
struct Hit {
    int amount = 0;
};

// One line per system run, so tests compare whole sequences.
struct Log {
    std::vector<std::string> lines;
    void operator()(std::string s) { lines.push_back(std::move(s)); }
    void clear() { lines.clear(); }
};

using Lines = std::vector<std::string>;

// Runs `fn` and returns the tessera::Error it throws (fails the test when it throws nothing).
template <class F>
ts::Error error_of(F&& fn) {
    try {
        fn();
    } catch (const ts::Error& e) {
        return e;
    }
    ADD_FAILURE() << "expected a tessera::Error";
    return ts::Error(ts::errc::invalid_argument, "");
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// The entities a Changed/Added view saw in each run.
using Seen = std::vector<std::set<ts::Entity>>;
}  // namespace

// Class systems live in a named namespace so their names are the same on every compiler.
namespace sched_test {
struct Counter {
    explicit Counter(int step, std::vector<std::string>* log) : step(step), log(log) {}
    void on_create(ts::World& w) {
        log->push_back("create");
        w.insert_resource(Score{100});
    }
    void on_update(ts::World& w, float dt) {
        w.resource<Score>().value += step;
        log->push_back("update " + std::to_string(dt));
    }
    void on_destroy(ts::World& w) {
        log->push_back("destroy " + std::to_string(w.resource<Score>().value));
    }
    int step;
    std::vector<std::string>* log;
};

struct WorldOnly {
    int* calls;
    void on_update(ts::World&) { ++*calls; }
};

struct Mover {
    float speed = 1;
    void on_update(ts::View<Position&, const Velocity&> v, float dt) {
        v.each([&](Position& p, const Velocity& vel) { p.x += vel.dx * speed * dt; });
    }
};

struct Reader {
    void on_update(ts::View<const Velocity&>) {}
};
}  // namespace sched_test

// ------------------------------------------------------------------------------------ order

TEST(ScheduleOrder, ConflictingSystemsRunInRegistrationOrder) {
    ts::World world;
    Log log;
    ts::Schedule s;
    s.add("a", [&](ts::View<Position&>) { log("a"); });
    s.add("b", [&](ts::View<const Position&>) { log("b"); });
    s.add("c", [&](ts::View<Position&>) { log("c"); });
    s.run(world);
    EXPECT_EQ(log.lines, (Lines{"a", "b", "c"}));
}

TEST(ScheduleOrder, OrderComesBeforeRegistration) {
    ts::World world;
    Log log;
    ts::Schedule s;
    s.add("a", [&](ts::View<Position&>) { log("a"); }).order(2);
    s.add("b", [&](ts::View<Position&>) { log("b"); });
    s.add("c", [&](ts::View<Position&>) { log("c"); }).order(-1);
    s.add("d", [&](ts::View<Position&>) { log("d"); }).order(2);
    s.run(world);
    EXPECT_EQ(log.lines, (Lines{"c", "b", "a", "d"}));
}

TEST(ScheduleOrder, BeforeAndAfterComeBeforeOrder) {
    ts::World world;
    Log log;
    ts::Schedule s;
    s.add("a", [&](ts::View<Position&>) { log("a"); }).order(-5);
    s.add("b", [&](ts::View<Position&>) { log("b"); }).order(10).before("a");
    s.add("c", [&](ts::View<Position&>) { log("c"); }).after("a").order(-10);
    s.add("d", [&](ts::View<Position&>) { log("d"); }).before("b");
    s.run(world);
    EXPECT_EQ(log.lines, (Lines{"d", "b", "a", "c"}));
}

TEST(ScheduleOrder, OneWorkerRunsTheDeterministicOrderEvenWithoutConflicts) {
    ts::World world;
    Log log;
    ts::Schedule s;
    s.set_parallel_threshold(std::chrono::nanoseconds(0));
    s.add("a", [&] { log("a"); }).order(3);
    s.add("b", [&] { log("b"); });
    s.add("c", [&] { log("c"); }).before("b");
    s.add("d", [&] { log("d"); }).order(-1);
    tbb::task_arena one(1);
    s.run(world, one);
    EXPECT_EQ(log.lines, (Lines{"d", "c", "b", "a"}));
}

TEST(ScheduleOrder, BeforeAndAfterHoldOnManyWorkers) {
    ts::World world;
    std::vector<std::string> log;
    std::mutex m;
    auto sys = [&](std::string name) {
        return [&, name] {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
            std::lock_guard lock(m);
            log.push_back(name);
        };
    };
    ts::Schedule s;
    s.set_parallel_threshold(std::chrono::nanoseconds(0));
    s.add("c", sys("c")).after("b");
    s.add("b", sys("b")).after("a");
    s.add("a", sys("a"));
    s.add("x", sys("x"));  // free to run beside them
    tbb::task_arena arena(4);
    for (int frame = 0; frame < 5; ++frame) {
        log.clear();
        s.run(world, arena);
        std::vector<std::string> chain;
        for (const std::string& n : log) {
            if (n != "x") chain.push_back(n);
        }
        EXPECT_EQ(chain, (Lines{"a", "b", "c"}));
        EXPECT_EQ(log.size(), 4u);
    }
}

TEST(ScheduleOrder, PhasesRunStartOnceThenPreUpdatePost) {
    ts::World world;
    Log log;
    ts::Schedule s;
    s.add("post", [&] { log("post"); }).phase(ts::Phase::post_update);
    s.add("update", [&] { log("update"); });
    s.add("manual", [&] { log("manual"); }).phase(ts::Phase::manual);
    s.add("pre", [&] { log("pre"); }).phase(ts::Phase::pre_update);
    s.add("start", [&] { log("start"); }).phase(ts::Phase::start);
    s.run(world);
    s.run(world);
    EXPECT_EQ(log.lines, (Lines{"start", "pre", "update", "post", "pre", "update", "post"}));
}

TEST(ScheduleOrder, ManualSystemsRunOnlyThroughRunSystem) {
    ts::World world;
    Log log;
    ts::Schedule s;
    s.add("load", [&](ts::Commands cmds, float dt) {
         log("load " + std::to_string(dt));
         cmds.spawn(Health{1});
     }).phase(ts::Phase::manual);
    s.add("update", [&](ts::View<const Health&> v) { log("update " + std::to_string(v.count())); });
    s.run(world);
    s.run_system("load", world, 2.0f);
    EXPECT_EQ(world.count(), 1u);  // its sync point ran with it
    s.run(world);
    s.run_system("update", world);  // any phase's system can be run by hand
    EXPECT_EQ(log.lines, (Lines{"update 0", "load 2.000000", "update 1", "update 1"}));
    EXPECT_EQ(error_of([&] { s.run_system("nope", world); }).code(), ts::errc::unknown_system);
}

TEST(ScheduleOrder, AfterAcrossPhasesThatAgreeIsFine) {
    ts::World world;
    Log log;
    ts::Schedule s;
    s.add("late", [&] { log("late"); }).after("early").phase(ts::Phase::post_update);
    s.add("early", [&] { log("early"); }).phase(ts::Phase::pre_update).before("late");
    s.run(world);
    EXPECT_EQ(log.lines, (Lines{"early", "late"}));
}

// ------------------------------------------------------------------------- conflicts, layers

TEST(ScheduleConflicts, TwoReadersNeverConflict) {
    ts::Schedule s;
    s.add("a", [](ts::View<const Position&>, ts::Res<Score>) {});
    s.add("b", [](ts::View<const Position&>, ts::Res<Score>) {});
    s.add("c", [](ts::View<const Position&, ts::Changed<Position>>) {});
    EXPECT_EQ(s.stage_count(), 1u);
}

TEST(ScheduleConflicts, WriteReadAndWriteWriteConflict) {
    {
        ts::Schedule s;
        s.add("w", [](ts::View<Position&>) {});
        s.add("r", [](ts::View<const Position&>) {});
        EXPECT_EQ(s.stage_count(), 2u);
    }
    {
        ts::Schedule s;
        s.add("r", [](ts::View<const Position&>) {});
        s.add("w", [](ts::View<Position&>) {});
        EXPECT_EQ(s.stage_count(), 2u);
    }
    {
        ts::Schedule s;
        s.add("w1", [](ts::View<Position&>) {});
        s.add("w2", [](ts::View<Position&>) {});
        EXPECT_EQ(s.stage_count(), 2u);
    }
    {
        ts::Schedule s;  // resources alike
        s.add("w1", [](ts::ResMut<Score>) {});
        s.add("w2", [](ts::ResMut<Score>) {});
        s.add("r", [](ts::Res<Score>) {});
        EXPECT_EQ(s.stage_count(), 3u);
    }
    {
        ts::Schedule s;  // different data: one layer
        s.add("w1", [](ts::View<Position&>, ts::ResMut<Score>) {});
        s.add("w2", [](ts::View<Velocity&>, ts::ResMut<Config>) {});
        EXPECT_EQ(s.stage_count(), 1u);
    }
}

TEST(ScheduleConflicts, ExclusiveConflictsWithEverything) {
    ts::Schedule s;
    s.add("a", [](ts::View<Position&>) {});
    s.add("b", [](ts::View<Velocity&>) {});
    s.add("nothing", [] {});
    s.add("world", [](ts::World&) {});
    s.add("c", [](ts::View<Health&>) {});
    // a, b, nothing | world | c
    EXPECT_EQ(s.stage_count(), 3u);
}

TEST(ScheduleConflicts, DeclaredAccessMakesAWorldSystemNonExclusive) {
    ts::World world;
    const ts::Entity e = world.spawn(Position{}, Velocity{1, 2});
    auto raw = [e](ts::World& w) { w.get_mut<Position>(e).x += w.get<Velocity>(e).dx; };
    auto layers_beside = [&](auto other) {
        ts::Schedule s;
        s.add("raw", raw).reads<Velocity>().writes<Position>();
        s.add("other", other);
        return s.stage_count();
    };
    EXPECT_EQ(layers_beside([](ts::View<Health&>) {}), 1u);
    EXPECT_EQ(layers_beside([](ts::View<const Velocity&>) {}), 1u);
    EXPECT_EQ(layers_beside([](ts::View<const Position&>) {}), 2u);  // the declared write
    EXPECT_EQ(layers_beside([](ts::View<Velocity&>) {}), 2u);        // the declared read
    EXPECT_EQ(layers_beside([](ts::World&) {}), 2u);                 // still alone beside World&
    ts::Schedule s;
    s.set_parallel_threshold(std::chrono::nanoseconds(0));
    s.add("raw", raw).reads<Velocity>().writes<Position>();
    s.add("health", [](ts::View<Health&>) {});
    tbb::task_arena arena(2);
    s.run(world, arena);
    EXPECT_EQ(world.get<Position>(e).x, 1);
}

TEST(ScheduleConflicts, StageCountAddsUpThePhasesAndSkipsManual) {
    ts::Schedule s;
    EXPECT_EQ(s.stage_count(), 0u);
    s.add("start", [](ts::View<Position&>) {}).phase(ts::Phase::start);
    s.add("pre", [](ts::View<Position&>) {}).phase(ts::Phase::pre_update);
    s.add("update", [](ts::View<Position&>) {});
    s.add("post", [](ts::View<Position&>) {}).phase(ts::Phase::post_update);
    s.add("manual1", [](ts::View<Position&>) {}).phase(ts::Phase::manual);
    s.add("manual2", [](ts::View<Position&>) {}).phase(ts::Phase::manual);
    EXPECT_EQ(s.stage_count(), 4u);
    s.add("post2", [](ts::View<Position&>) {}).phase(ts::Phase::post_update);
    EXPECT_EQ(s.stage_count(), 5u);
}

TEST(ScheduleConflicts, ExplicitOrderMakesLayersWithoutConflicts) {
    ts::Schedule s;
    s.add("a", [] {});
    s.add("b", [] {}).after("a");
    s.add("c", [] {}).after("b");
    s.add("d", [] {});
    EXPECT_EQ(s.stage_count(), 3u);
}

// -------------------------------------------------------------------------- build errors

TEST(ScheduleErrors, StrictUnorderedConflictIsAmbiguousOrderNamingBothAndTheData) {
    ts::Schedule s = ts::Schedule::strict();
    s.add("physics", [](ts::View<Position&>) {});
    s.add("render", [](ts::View<const Position&>) {});  // add never throws build errors
    const ts::Error e = error_of([&] { s.build(); });
    EXPECT_EQ(e.code(), ts::errc::ambiguous_order);
    const std::string what = e.what();
    EXPECT_TRUE(contains(what, "physics")) << what;
    EXPECT_TRUE(contains(what, "render")) << what;
    EXPECT_TRUE(contains(what, "Position")) << what;
    EXPECT_EQ(error_of([&] { (void)s.stage_count(); }).code(), ts::errc::ambiguous_order);
    ts::World world;
    EXPECT_EQ(error_of([&] { s.run(world); }).code(), ts::errc::ambiguous_order);
}

TEST(ScheduleErrors, StrictNamesResourcesAndTheWorld) {
    {
        ts::Schedule s = ts::Schedule::strict();
        s.add("score-writer", [](ts::ResMut<Score>) {});
        s.add("score-reader", [](ts::Res<Score>) {});
        const ts::Error e = error_of([&] { s.build(); });
        EXPECT_EQ(e.code(), ts::errc::ambiguous_order);
        const std::string what = e.what();
        EXPECT_TRUE(contains(what, "score-writer") && contains(what, "score-reader")) << what;
        EXPECT_TRUE(contains(what, "Score")) << what;
    }
    {
        ts::Schedule s = ts::Schedule::strict();
        s.add("raw", [](ts::World&) {});
        s.add("nothing", [] {});
        const ts::Error e = error_of([&] { s.build(); });
        EXPECT_EQ(e.code(), ts::errc::ambiguous_order);
        const std::string what = e.what();
        EXPECT_TRUE(contains(what, "raw") && contains(what, "nothing")) << what;
        EXPECT_TRUE(contains(what, "World")) << what;
    }
}

TEST(ScheduleErrors, StrictAcceptsOrderedConflictsReadersAndOtherPhases) {
    ts::World world;
    Log log;
    ts::Schedule s = ts::Schedule::strict();
    s.add("r1", [&](ts::View<const Position&>) { log("r1"); });
    s.add("r2", [&](ts::View<const Position&>) { log("r2"); });
    s.add("w1", [&](ts::View<Position&>) { log("w1"); }).after("r1").after("r2");
    s.add("w2", [&](ts::View<Position&>) { log("w2"); }).after("w1");
    s.add("w3", [&](ts::View<Position&>) { log("w3"); }).after("r1");
    s.add("w0", [&](ts::View<Position&>) { log("w0"); }).phase(ts::Phase::pre_update);
    s.add("p", [&](ts::View<Position&>) { log("p"); }).phase(ts::Phase::post_update);
    EXPECT_EQ(error_of([&] { s.build(); }).code(), ts::errc::ambiguous_order);  // w3 vs r2, w1, w2
    s.remove("w3");
    s.add("w3", [&](ts::View<Position&>) { log("w3"); }).after("w2");
    s.add("o1", [&](ts::View<Velocity&>) { log("o1"); }).order(1);  // order() orders them too
    s.add("o2", [&](ts::View<Velocity&>) { log("o2"); }).order(0);
    EXPECT_NO_THROW(s.build());
    tbb::task_arena one(1);
    s.run(world, one);
    EXPECT_EQ(log.lines, (Lines{"w0", "r1", "r2", "w1", "w2", "w3", "o2", "o1", "p"}));
}

TEST(ScheduleErrors, NonStrictSchedulesOrderConflictsByRegistration) {
    ts::Schedule s;
    s.add("physics", [](ts::View<Position&>) {});
    s.add("render", [](ts::View<const Position&>) {});
    EXPECT_NO_THROW(s.build());
}

TEST(ScheduleErrors, BeforeAfterLoopIsScheduleCycle) {
    ts::World world;
    Log log;
    ts::Schedule s;
    s.add("start", [&] { log("start"); }).phase(ts::Phase::start);
    s.add("a", [&] { log("a"); }).before("b");
    s.add("b", [&] { log("b"); }).before("c");
    s.add("c", [&] { log("c"); }).before("a");
    const ts::Error e = error_of([&] { s.run(world); });
    EXPECT_EQ(e.code(), ts::errc::schedule_cycle);
    const std::string what = e.what();
    EXPECT_TRUE(contains(what, "'a'") && contains(what, "'b'") && contains(what, "'c'")) << what;
    EXPECT_TRUE(log.lines.empty());  // nothing ran, not even the start phase
    EXPECT_EQ(error_of([&] { (void)s.stage_count(); }).code(), ts::errc::schedule_cycle);
    EXPECT_EQ(error_of([&] { s.build(); }).code(), ts::errc::schedule_cycle);
    // A self loop.
    ts::Schedule self;
    self.add("me", [] {}).after("me");
    EXPECT_EQ(error_of([&] { self.build(); }).code(), ts::errc::schedule_cycle);
}

TEST(ScheduleErrors, OrderAgainstThePhasesIsScheduleCycle) {
    ts::Schedule s;
    s.add("pre", [] {}).phase(ts::Phase::pre_update);
    s.add("update", [] {}).before("pre");
    const ts::Error e = error_of([&] { s.build(); });
    EXPECT_EQ(e.code(), ts::errc::schedule_cycle);
    const std::string what = e.what();
    EXPECT_TRUE(contains(what, "pre") && contains(what, "update")) << what;

    ts::Schedule t;
    t.add("post", [] {}).phase(ts::Phase::post_update).before("start");
    t.add("start", [] {}).phase(ts::Phase::start);
    EXPECT_EQ(error_of([&] { t.build(); }).code(), ts::errc::schedule_cycle);
}

TEST(ScheduleErrors, UnknownNamesAreUnknownSystem) {
    ts::World world;
    Log log;
    ts::Schedule s;
    s.add("start", [&] { log("start"); }).phase(ts::Phase::start);
    s.add("a", [&] { log("a"); }).after("ghost");  // not checked by add
    const ts::Error e = error_of([&] { s.run(world); });
    EXPECT_EQ(e.code(), ts::errc::unknown_system);
    EXPECT_TRUE(contains(e.what(), "ghost")) << e.what();
    EXPECT_TRUE(log.lines.empty());
    EXPECT_EQ(error_of([&] { (void)s.stage_count(); }).code(), ts::errc::unknown_system);
    s.add("ghost", [&] { log("ghost"); });
    s.run(world);
    EXPECT_EQ(log.lines, (Lines{"start", "ghost", "a"}));

    EXPECT_EQ(error_of([&] { s.enable("nope", false); }).code(), ts::errc::unknown_system);
    EXPECT_EQ(error_of([&] { (void)s.is_enabled("nope"); }).code(), ts::errc::unknown_system);
    EXPECT_EQ(error_of([&] { s.remove("nope"); }).code(), ts::errc::unknown_system);
    const ts::Error r = error_of([&] { s.run_system("nope", world); });
    EXPECT_EQ(r.code(), ts::errc::unknown_system);
    EXPECT_TRUE(contains(r.what(), "nope")) << r.what();
}

// System and group names are user text: messages quote them with NUL, control characters and
// bad bytes escaped, so the message is whole and valid UTF-8.
TEST(ScheduleErrors, MessagesQuoteSystemNamesEscaped) {
    ts::World world;
    ts::Schedule s;
    const std::string odd("n\0pe\n\xff", 6);
    s.add(odd, [] {});
    const std::string escaped = R"('n\x00pe\x0A\xFF')";
    for (const ts::Error& e :
         {error_of([&] { s.add(odd, [] {}); }), error_of([&] { s.run_system("x" + odd, world); }),
          error_of([&] { s.enable("x" + odd, false); }),
          error_of([&] { s.run(world, 0.0f, "g" + odd); })}) {
        const std::string what = e.what();
        const std::string name = what.find("'x") != std::string::npos   ? "'x" + escaped.substr(1)
                                 : what.find("'g") != std::string::npos ? "'g" + escaped.substr(1)
                                                                        : escaped;
        EXPECT_TRUE(contains(what, name)) << what;
    }
    ts::Schedule t;
    t.add(odd, [] { throw std::runtime_error("boom"); });
    const ts::Error failed = error_of([&] { t.run_system(odd, world); });
    EXPECT_EQ(failed.code(), ts::errc::system_failed);
    EXPECT_TRUE(contains(failed.what(), escaped)) << failed.what();
}

TEST(ScheduleErrors, NamesAreUniqueAndNotEmpty) {
    ts::Schedule s;
    s.add("a", [] {});
    EXPECT_EQ(error_of([&] { s.add("a", [](ts::World&) {}); }).code(), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { s.add("", [] {}); }).code(), ts::errc::invalid_argument);
    EXPECT_EQ(s.size(), 1u);
    std::vector<std::string> log;
    s.add<sched_test::Counter>(1, &log);
    EXPECT_EQ(error_of([&] { s.add<sched_test::Counter>(2, &log); }).code(),
              ts::errc::invalid_argument);
    EXPECT_EQ(s.size(), 2u);
}

// ------------------------------------------------------------------------ missing resources

TEST(ScheduleResources, MissingResourceIsReportedBeforeThePhaseRuns) {
    ts::World world;
    Log log;
    ts::Schedule s;
    s.add("pre", [&] { log("pre"); }).phase(ts::Phase::pre_update);
    s.add("first", [&] { log("first"); });
    s.add("needs-score", [&](ts::Res<Score>) { log("needs-score"); });
    s.add("post", [&] { log("post"); }).phase(ts::Phase::post_update);
    tbb::task_arena one(1);
    const ts::Error e = error_of([&] { s.run(world, one); });
    EXPECT_EQ(e.code(), ts::errc::missing_resource);
    const std::string what = e.what();
    EXPECT_TRUE(contains(what, "needs-score")) << what;
    EXPECT_TRUE(contains(what, "Score")) << what;
    EXPECT_EQ(log.lines, (Lines{"pre"}));  // no system of the update phase ran, nor later
    log.clear();
    world.insert_resource(Score{});
    s.run(world, one);
    EXPECT_EQ(log.lines, (Lines{"pre", "first", "needs-score", "post"}));
}

TEST(ScheduleResources, ResMutIsCheckedToo) {
    ts::World world;
    ts::Schedule s;
    s.add("writer", [](ts::ResMut<Config>) {});
    const ts::Error e = error_of([&] { s.run(world); });
    EXPECT_EQ(e.code(), ts::errc::missing_resource);
    EXPECT_TRUE(contains(e.what(), "Config")) << e.what();
}

TEST(ScheduleResources, AStartSystemMayInsertWhatLaterPhasesUse) {
    ts::World world;
    std::vector<int> seen;
    ts::Schedule s;
    s.add("use", [&](ts::Res<Config> c, ts::ResMut<Score> score) {
        score->value += c->value;
        seen.push_back(score->value);
    });
    s.add("setup", [](ts::World& w) {
         w.insert_resource(Config{5});
         w.insert_resource(Score{1});
     }).phase(ts::Phase::start);
    s.run(world);
    s.run(world);
    EXPECT_EQ(seen, (std::vector<int>{6, 11}));
}

// ------------------------------------------------------------------------ enable and remove

TEST(ScheduleSystems, DisabledSystemsDoNotRunUntilEnabled) {
    ts::World world;
    Log log;
    ts::Schedule s;
    s.add("a", [&] { log("a"); });
    s.add("b", [&] { log("b"); }).after("a");
    EXPECT_TRUE(s.is_enabled("a"));
    s.enable("a", false);
    EXPECT_FALSE(s.is_enabled("a"));
    s.run(world);
    s.enable("a");
    s.run(world);
    EXPECT_EQ(log.lines, (Lines{"b", "a", "b"}));
}

TEST(ScheduleSystems, RemoveDropsTheSystemAndFreesItsName) {
    ts::World world;
    Log log;
    ts::Schedule s;
    s.add("a", [&] { log("a"); });
    s.add("b", [&] { log("b"); });
    EXPECT_TRUE(s.contains("a"));
    s.remove("a");
    EXPECT_FALSE(s.contains("a"));
    EXPECT_EQ(s.size(), 1u);
    tbb::task_arena one(1);
    s.run(world, one);
    s.add("a", [&] { log("a2"); });
    s.run(world, one);
    EXPECT_EQ(log.lines, (Lines{"b", "b", "a2"}));
}

TEST(ScheduleSystems, RemovingASystemOthersNameIsUnknownSystemAtTheNextBuild) {
    ts::World world;
    ts::Schedule s;
    s.add("a", [] {});
    s.add("b", [] {}).after("a");
    s.run(world);
    s.remove("a");  // remove itself doesn't throw
    EXPECT_EQ(error_of([&] { s.run(world); }).code(), ts::errc::unknown_system);
}

TEST(ScheduleSystems, ClassSystemsAreNamedAfterTheirTypeAndGetTheirHooks) {
    ts::World world;
    std::vector<std::string> log;
    ts::Schedule s;
    const ts::SystemConfig config = s.add<sched_test::Counter>(3, &log);
    EXPECT_EQ(config.name(), "sched_test::Counter");
    EXPECT_TRUE(s.contains("sched_test::Counter"));
    EXPECT_TRUE(log.empty());  // on_create waits for the first run
    s.run(world, 0.5f);
    s.run(world, 0.25f);
    EXPECT_EQ(world.resource<Score>().value, 106);
    s.remove("sched_test::Counter");
    EXPECT_EQ(log, (Lines{"create", "update 0.500000", "update 0.250000", "destroy 106"}));
    EXPECT_EQ(s.size(), 0u);
}

TEST(ScheduleSystems, RemovingAClassSystemThatNeverRanCallsNoHook) {
    std::vector<std::string> log;
    ts::Schedule s;
    s.add<sched_test::Counter>(1, &log);
    s.remove("sched_test::Counter");
    EXPECT_TRUE(log.empty());
}

TEST(ScheduleSystems, ClassSystemsDeduceTheirParameters) {
    ts::World world;
    const ts::Entity e = world.spawn(Position{}, Velocity{2, 0});
    int calls = 0;
    ts::Schedule s;
    s.add<sched_test::Mover>(sched_test::Mover{3});
    s.add<sched_test::WorldOnly>(sched_test::WorldOnly{&calls}).phase(ts::Phase::post_update);
    s.run(world, 0.5f);
    EXPECT_EQ(world.get<Position>(e).x, 3);
    EXPECT_EQ(calls, 1);
    // Mover writes Position and reads Velocity: a reader of Velocity shares its layer, a World&
    // class system doesn't share with anything.
    s.add<sched_test::Reader>();
    EXPECT_EQ(s.stage_count(), 2u);
    s.add("world", [](ts::World&) {});
    EXPECT_EQ(s.stage_count(), 3u);
}

// ---------------------------------------------------------------------------------- failure

namespace {
struct Boom : std::runtime_error {
    Boom() : std::runtime_error("boom") {}
};
}  // namespace

TEST(ScheduleFailure, AThrowingSystemIsSystemFailedWithTheOriginalNested) {
    ts::World world;
    ts::Schedule s;
    s.add("exploder", [] { throw Boom(); });
    try {
        s.run(world);
        FAIL() << "expected system_failed";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::system_failed);
        EXPECT_TRUE(contains(e.what(), "exploder")) << e.what();
        EXPECT_TRUE(contains(e.what(), "boom")) << e.what();
        bool nested = false;
        try {
            std::rethrow_if_nested(e);
        } catch (const Boom&) {
            nested = true;
        }
        EXPECT_TRUE(nested);
    }
}

namespace {
// The failure scenario, on a number of workers. Returns the run log.
void run_failure_scenario(int workers) {
    ts::World world;
    const ts::Entity victim = world.spawn(Health{10});
    std::mutex m;
    Log log;
    auto note = [&](const char* s) {
        std::lock_guard lock(m);
        log(s);
    };
    bool fail = true;
    std::vector<int> hits;
    ts::Schedule s;
    s.set_parallel_threshold(std::chrono::nanoseconds(0));
    s.add("pre", [&](ts::Commands c) {
         note("pre");
         c.spawn(Health{1});
     }).phase(ts::Phase::pre_update);
    s.add("ok", [&](ts::Commands c, ts::View<Velocity&>) {  // independent of the failure
        note("ok");
        c.spawn(Health{2});
    });
    s.add("failing", [&](ts::Commands c, ts::EventWriter<Hit> w, ts::View<Position&>) {
        note("failing");
        c.spawn(Health{3});
        c.despawn(victim);
        w.send(Hit{1});
        if (fail) throw Boom();
    });
    s.add("dependent", [&](ts::View<const Position&>, ts::View<Score&>) { note("dependent"); });
    s.add("transitive", [&](ts::View<const Score&>) { note("transitive"); });
    s.add("reader", [&](ts::EventReader<Hit> r) {
         for (const Hit& h : r.read()) hits.push_back(h.amount);
     }).phase(ts::Phase::post_update);
    s.add("post", [&] { note("post"); }).phase(ts::Phase::post_update);

    tbb::task_arena arena(workers);
    const ts::Error e = error_of([&] { s.run(world, arena); });
    EXPECT_EQ(e.code(), ts::errc::system_failed);
    EXPECT_TRUE(contains(e.what(), "failing")) << e.what();
    std::multiset<std::string> ran(log.lines.begin(), log.lines.end());
    EXPECT_EQ(ran, (std::multiset<std::string>{"pre", "ok", "failing"}));
    // pre's and ok's commands were applied, failing's were dropped (its spawn and despawn).
    std::multiset<int> hp;
    for (const ts::Entity x : world.entities()) hp.insert(world.get<Health>(x).hp);
    EXPECT_EQ(hp, (std::multiset<int>{10, 1, 2}));
    EXPECT_TRUE(world.is_alive(victim));

    // The next run works, and the failed system's event never reached the queue.
    fail = false;
    log.clear();
    s.run(world, arena);
    std::multiset<std::string> again(log.lines.begin(), log.lines.end());
    EXPECT_EQ(again, (std::multiset<std::string>{"pre", "ok", "failing", "dependent", "transitive",
                                                 "post"}));
    EXPECT_EQ(hits, (std::vector<int>{1}));
    EXPECT_FALSE(world.is_alive(victim));
}
}  // namespace

TEST(ScheduleFailure, FinishedSystemsCommandsApplyDependentsAndLaterPhasesAreSkipped) {
    run_failure_scenario(1);
}

TEST(ScheduleFailure, FailureSemanticsHoldOnTheParallelExecutor) {
    run_failure_scenario(4);
}

TEST(ScheduleFailure, TheFirstFailureInTheDeterministicOrderIsReported) {
    ts::World world;
    ts::Schedule s;
    s.set_parallel_threshold(std::chrono::nanoseconds(0));
    s.add("late", [] { throw std::runtime_error("late"); }).order(1);
    s.add("early", [] { throw std::runtime_error("early"); });
    tbb::task_arena arena(2);
    for (int frame = 0; frame < 3; ++frame) {
        const ts::Error e = error_of([&] { s.run(world, arena); });
        EXPECT_EQ(e.code(), ts::errc::system_failed);
        EXPECT_TRUE(contains(e.what(), "'early'")) << e.what();
    }
}

TEST(ScheduleFailure, RunSystemReportsSystemFailed) {
    ts::World world;
    ts::Schedule s;
    s.add("manual", [](ts::Commands c) {
         c.spawn(Health{1});
         throw Boom();
     }).phase(ts::Phase::manual);
    const ts::Error e = error_of([&] { s.run_system("manual", world); });
    EXPECT_EQ(e.code(), ts::errc::system_failed);
    EXPECT_TRUE(contains(e.what(), "manual")) << e.what();
    EXPECT_EQ(world.count(), 0u);  // its commands were dropped
}

TEST(ScheduleFailure, NonStdExceptionsAreWrappedToo) {
    ts::World world;
    ts::Schedule s;
    s.add("int-thrower", [] { throw 42; });
    int nested = 0;
    try {
        s.run(world);
    } catch (const ts::Error& e) {  // by reference: the nested part is a base of the thrown type
        EXPECT_EQ(e.code(), ts::errc::system_failed);
        EXPECT_TRUE(contains(e.what(), "int-thrower")) << e.what();
        try {
            std::rethrow_if_nested(e);
        } catch (int v) {
            nested = v;
        }
    }
    EXPECT_EQ(nested, 42);
}

// issue 20, item 4: an observer that threw while a system's commands were applied escaped
// Schedule::run as the raw exception, the other systems' commands unapplied.
TEST(ScheduleFailure, AThrowingObserverAtTheSyncPointIsSystemFailedNamingTheSystem) {
    for (const int workers : {1, 2}) {
        ts::World world;
        bool refuse = true;
        ts::Observer o = world.on_add<Health>([&](ts::World&, ts::Entity, Health& h) {
            if (refuse && h.hp == 3) throw std::runtime_error("observer refuses hp 3");
        });
        std::vector<std::string> ran;
        ts::Schedule s;
        s.set_parallel_threshold(std::chrono::nanoseconds(0));
        s.add("first", [](ts::Commands c) { c.spawn(Health{1}); });
        s.add("spawner", [](ts::Commands c) {
            c.spawn(Health{2});
            c.spawn(Health{3});  // its observer throws: the spawn stands
            c.spawn(Health{4});  // dropped with the rest of the system's commands
        });
        s.add("last", [](ts::Commands c) { c.spawn(Health{5}); });
        s.add("post", [&] { ran.push_back("post"); }).phase(ts::Phase::post_update);
        tbb::task_arena arena(workers);
        try {
            s.run(world, arena);
            ADD_FAILURE() << "expected system_failed";
        } catch (const ts::Error& e) {
            EXPECT_EQ(e.code(), ts::errc::system_failed);
            EXPECT_TRUE(contains(e.what(), "'spawner'")) << e.what();
            EXPECT_TRUE(contains(e.what(), "sync point")) << e.what();
            EXPECT_TRUE(contains(e.what(), "observer refuses hp 3")) << e.what();
            bool nested = false;
            try {
                std::rethrow_if_nested(e);
            } catch (const std::runtime_error&) {
                nested = true;
            }
            EXPECT_TRUE(nested);
        }
        // The phase settled: the other systems' commands were applied, later phases skipped.
        std::multiset<int> hp;
        world.each([&](const Health& h) { hp.insert(h.hp); });
        EXPECT_EQ(hp, (std::multiset<int>{1, 2, 3, 5})) << workers;
        EXPECT_TRUE(ran.empty());
        // The world and the schedule stay usable; nothing stale is applied later.
        refuse = false;
        s.run(world, arena);
        hp.clear();
        world.each([&](const Health& h) { hp.insert(h.hp); });
        EXPECT_EQ(hp, (std::multiset<int>{1, 1, 2, 2, 3, 3, 5, 4, 5})) << workers;
        EXPECT_EQ(ran, (std::vector<std::string>{"post"}));
    }
}

TEST(ScheduleFailure, RunSystemReportsAThrowingObserverAtItsSyncPoint) {
    ts::World world;
    ts::Observer o = world.on_add<Health>(
        [](ts::World&, ts::Entity, Health&) { throw std::runtime_error("observer says no"); });
    ts::Schedule s;
    s.add("manual", [](ts::Commands c) { c.spawn(Health{1}); }).phase(ts::Phase::manual);
    const ts::Error e = error_of([&] { s.run_system("manual", world); });
    EXPECT_EQ(e.code(), ts::errc::system_failed);
    EXPECT_TRUE(contains(e.what(), "'manual'")) << e.what();
    EXPECT_TRUE(contains(e.what(), "observer says no")) << e.what();
    EXPECT_EQ(world.count(), 1u);  // the spawn stands
}

// ----------------------------------------------------------------------------- sync points

TEST(ScheduleSync, CommandsApplyInRegistrationOrderWhateverTheRunOrder) {
    for (const int workers : {1, 2}) {
        ts::World world;
        const ts::Entity e = world.spawn(Health{0});
        ts::Schedule s;
        s.set_parallel_threshold(std::chrono::nanoseconds(0));
        s.add("first", [e](ts::Commands c) { c.add(e, Health{1}); }).order(10);
        s.add("second", [e](ts::Commands c) { c.add(e, Health{2}); });
        s.add("other", [](ts::View<Position&>) {});
        tbb::task_arena arena(workers);
        s.run(world, arena);
        EXPECT_EQ(world.get<Health>(e).hp, 2) << workers << " workers";
    }
}

TEST(ScheduleSync, SkippedCommandsAreCountedPerRun) {
    ts::World world;
    const ts::Entity e = world.spawn(Health{0});
    bool act = true;
    ts::Schedule s;
    s.add("killer", [&](ts::Commands c) {
        if (act) c.despawn(e);
    });
    s.add("editor", [&](ts::Commands c) {
        if (!act) return;
        c.add(e, Health{5});
        c.add(e, Position{});
    });
    s.run(world);
    EXPECT_FALSE(world.is_alive(e));
    EXPECT_EQ(s.skipped_commands(), 2u);
    act = false;
    s.run(world);
    EXPECT_EQ(s.skipped_commands(), 0u);
}

TEST(ScheduleSync, TheFrameEndsWithUpdateEvents) {
    ts::World world;
    bool send = true;
    ts::Schedule s;
    s.add("writer", [&](ts::EventWriter<Hit> w) {
        if (send) w.send(Hit{1});
    });
    s.run(world);
    EXPECT_EQ(world.events<Hit>().size(), 1u);
    send = false;
    s.run(world);
    EXPECT_EQ(world.events<Hit>().size(), 0u);  // an event lives for two updates
    world.send_event(Hit{2});
    s.run(world);
    s.run(world);
    EXPECT_EQ(world.events<Hit>().size(), 0u);
}

TEST(ScheduleSync, AnExclusiveSystemsStructuralChangesAreImmediate) {
    ts::World world;
    std::vector<std::size_t> counts;
    ts::Schedule s;
    s.add("raw", [&](ts::World& w) {
        const ts::Entity e = w.spawn(Health{1});
        counts.push_back(w.count());
        w.add(e, Position{});
        counts.push_back(w.has<Position>(e) ? 1 : 0);
    });
    s.add("after", [&](ts::View<const Health&> v) { counts.push_back(v.count()); }).after("raw");
    s.run(world);
    EXPECT_EQ(counts, (std::vector<std::size_t>{1, 1, 1}));
}

TEST(ScheduleSync, ParallelAndInlineRunsGiveTheSameWorld) {
    auto simulate = [](int workers) {
        ts::World world;
        for (int i = 0; i < 100; ++i) world.spawn(Position{float(i), 0}, Velocity{1, float(i)});
        world.insert_resource(Score{});
        ts::Schedule s;
        s.set_parallel_threshold(std::chrono::nanoseconds(0));
        s.add("move", [](ts::View<Position&, const Velocity&> v) {
            v.par_each([](Position& p, const Velocity& vel) { p.x += vel.dx; });
        });
        s.add("spin",
              [](ts::View<Velocity&> v) { v.each([](Velocity& vel) { vel.dy = -vel.dy; }); });
        s.add("count", [](ts::View<const Position&> v, ts::ResMut<Score> score) {
            v.each([&](const Position& p) { score->value += int(p.x); });
        });
        s.add("spawn", [](ts::Commands c, ts::Res<Score> score) {
            c.spawn(Position{float(score->value % 7), 1}, Velocity{});
        });
        tbb::task_arena arena(workers);
        for (int frame = 0; frame < 20; ++frame) s.run(world, arena);
        std::vector<float> out;
        for (const ts::Entity e : world.entities()) {
            out.push_back(world.get<Position>(e).x);
            out.push_back(world.get<Velocity>(e).dy);
        }
        out.push_back(float(world.resource<Score>().value));
        return out;
    };
    const std::vector<float> one = simulate(1);
    EXPECT_EQ(simulate(2), one);
    EXPECT_EQ(simulate(4), one);
}

// --------------------------------------------------------------------- change ticks per system

namespace {
// A system that records, per run, the entities whose Position changed since its previous run.
auto changed_watcher(Seen& seen) {
    return [&seen](ts::View<ts::Entity, const Position&, ts::Changed<Position>> v) {
        seen.emplace_back();
        v.each([&](ts::Entity e, const Position&) { seen.back().insert(e); });
    };
}
}  // namespace

TEST(ScheduleTicks, ChangedSeesWritesOfLaterSystemsInTheSamePhaseNextFrameOnce) {
    for (const int workers : {1, 2}) {
        ts::World world;
        const ts::Entity hot = world.spawn(Position{}, Hot{});
        const ts::Entity cold = world.spawn(Position{});
        Seen seen;
        int frame = 0;
        ts::Schedule s;
        s.set_parallel_threshold(std::chrono::nanoseconds(0));
        s.add("watch", changed_watcher(seen));  // reads Position: runs before the writer
        s.add("write-hot", [&](ts::View<Position&, ts::With<Hot>> v) {
            if (frame == 2) v.each([](Position& p) { p.x += 1; });
        });
        s.add("bystander", [](ts::View<Velocity&>) {});
        tbb::task_arena arena(workers);
        for (frame = 1; frame <= 4; ++frame) {
            s.run(world, arena);
            if (frame == 3) world.set(cold, Position{9, 9});  // a write between frames
        }
        ASSERT_EQ(seen.size(), 4u);
        EXPECT_EQ(seen[0], (std::set<ts::Entity>{hot, cold})) << workers;  // first run: all
        EXPECT_TRUE(seen[1].empty()) << workers;                     // the write comes after it
        EXPECT_EQ(seen[2], (std::set<ts::Entity>{hot})) << workers;  // seen next frame, once
        EXPECT_EQ(seen[3], (std::set<ts::Entity>{cold})) << workers;
    }
}

TEST(ScheduleTicks, ChangedSeesWritesOfEarlierSystemsInTheSameFrameOnce) {
    ts::World world;
    const ts::Entity hot = world.spawn(Position{}, Hot{});
    world.spawn(Position{});
    Seen seen;
    bool write = false;
    ts::Schedule s;
    s.add("write-hot", [&](ts::View<Position&, ts::With<Hot>> v) {
        if (write) v.each([](Position& p) { p.x += 1; });
    });
    s.add("watch", changed_watcher(seen));
    s.add("late-watch", changed_watcher(seen)).phase(ts::Phase::post_update);
    s.run(world);
    seen.clear();
    for (int frame = 1; frame <= 3; ++frame) {
        write = frame != 2;
        s.run(world);
    }
    // Both watchers see the write of frames 1 and 3 in that frame, once.
    const std::set<ts::Entity> h{hot};
    EXPECT_EQ(seen, (Seen{h, h, {}, {}, h, h}));
}

TEST(ScheduleTicks, ChangesMadeByExclusiveSystemsAndCommandsAreSeenOnce) {
    ts::World world;
    const ts::Entity a = world.spawn(Position{});
    world.spawn(Position{});
    Seen seen;
    int frame = 0;
    ts::Schedule s;
    s.add("watch", changed_watcher(seen));
    s.add("raw", [&](ts::World& w) {
        if (frame == 2) w.set(a, Position{1, 1});
    });
    s.add("spawner", [&](ts::Commands c) {
         if (frame == 4) c.spawn(Position{});
     }).phase(ts::Phase::pre_update);
    for (frame = 1; frame <= 5; ++frame) s.run(world);
    ASSERT_EQ(seen.size(), 5u);
    EXPECT_EQ(seen[0].size(), 2u);
    EXPECT_TRUE(seen[1].empty());
    EXPECT_EQ(seen[2], (std::set<ts::Entity>{a}));  // raw ran after watch in frame 2
    EXPECT_EQ(seen[3].size(), 1u);                  // frame 4's spawn, applied at pre_update's sync
    EXPECT_FALSE(seen[3].contains(a));
    EXPECT_TRUE(seen[4].empty());
}

TEST(ScheduleTicks, ADisabledSystemKeepsItsReferenceTick) {
    ts::World world;
    const ts::Entity a = world.spawn(Position{}, Hot{});
    const ts::Entity b = world.spawn(Position{});
    const ts::Entity c = world.spawn(Position{});
    Seen seen;
    int frame = 0;
    ts::Schedule s;
    s.add("write-hot", [&](ts::View<Position&, ts::With<Hot>> v) {
        if (frame == 3) v.each([](Position& p) { p.x += 1; });
    });
    s.add("watch", changed_watcher(seen)).phase(ts::Phase::post_update);
    for (frame = 1; frame <= 7; ++frame) {
        if (frame == 3) s.enable("watch", false);
        if (frame == 6) s.enable("watch", true);
        s.run(world);
        if (frame == 4) world.set(b, Position{2, 2});
        if (frame == 5) world.get_mut<Position>(c).y = 3;
    }
    ASSERT_EQ(seen.size(), 4u);  // frames 1, 2, 6, 7
    EXPECT_EQ(seen[0].size(), 3u);
    EXPECT_TRUE(seen[1].empty());
    EXPECT_EQ(seen[2], (std::set<ts::Entity>{a, b, c}));  // everything since frame 2
    EXPECT_TRUE(seen[3].empty());
}

TEST(ScheduleTicks, AddedSeesCommandSpawnsOnce) {
    ts::World world;
    Seen same_phase, later_phase;
    auto watcher = [](Seen& seen) {
        return [&seen](ts::View<ts::Entity, ts::Added<Health>> v) {
            seen.emplace_back();
            v.each([&](ts::Entity e) { seen.back().insert(e); });
        };
    };
    int frame = 0;
    ts::Schedule s;
    s.add("spawner", [&](ts::Commands c) {
        if (frame == 2) c.spawn(Health{1});
    });
    s.add("same", watcher(same_phase));
    s.add("later", watcher(later_phase)).phase(ts::Phase::post_update);
    for (frame = 1; frame <= 4; ++frame) s.run(world);
    ASSERT_EQ(world.count(), 1u);
    const ts::Entity e = world.entities().front();
    EXPECT_EQ(same_phase, (Seen{{}, {}, {e}, {}}));
    EXPECT_EQ(later_phase, (Seen{{}, {e}, {}, {}}));
}

TEST(ScheduleTicks, RunSystemKeepsTheSystemsTickToo) {
    ts::World world;
    const ts::Entity a = world.spawn(Position{});
    Seen seen;
    ts::Schedule s;
    s.add("watch", changed_watcher(seen)).phase(ts::Phase::manual);
    s.run_system("watch", world);
    s.run_system("watch", world);
    world.set(a, Position{1, 0});
    s.run_system("watch", world);
    s.run_system("watch", world);
    EXPECT_EQ(seen, (Seen{{a}, {}, {a}, {}}));
}

// --------------------------------------------------------------------------------- misc API

TEST(ScheduleApi, MovedSchedulesKeepTheirSystemsAndState) {
    ts::World world;
    Log log;
    ts::Schedule s;
    s.add("start", [&] { log("start"); }).phase(ts::Phase::start);
    s.add("a", [&] { log("a"); });
    s.run(world);
    ts::Schedule moved(std::move(s));
    moved.run(world);
    ts::Schedule assigned;
    assigned = std::move(moved);
    assigned.run(world);
    EXPECT_EQ(log.lines, (Lines{"start", "a", "a", "a"}));
    EXPECT_EQ(assigned.size(), 2u);
}

// ------------------------------------------------------------------------------ known bugs

namespace {
template <int N>
struct Slot {
    float v = 0;
};
// A system writing Slot<N> from Slot<0> row by row on oneTBB workers.
template <int N>
void add_slot_writer(ts::Schedule& s) {
    s.add("slot" + std::to_string(N), [](ts::View<Slot<N>&, const Slot<0>&> v) {
        v.par_each([](Slot<N>& out, const Slot<0>& in) {
            for (int k = 0; k < 20; ++k) out.v = out.v * 0.999f + in.v;
        });
    });
}
}  // namespace

TEST(ScheduleRegression, DeclaredWorldSystemWritesCarryTheSystemsTick) {
    // A trusted World& system (declared access) writes through the world; a Changed<Position>
    // system that runs before it in the same phase must see that write next frame, once.
    ts::World world;
    const ts::Entity a = world.spawn(Position{});
    Seen seen;
    int frame = 0;
    ts::Schedule s;
    s.add("watch", changed_watcher(seen));
    s.add("raw", [&](ts::World& w) {
         if (frame == 2) w.set(a, Position{1, 1});
     }).writes<Position>();
    for (frame = 1; frame <= 4; ++frame) s.run(world);
    EXPECT_EQ(seen, (Seen{{a}, {}, {a}, {}}));
}

TEST(ScheduleRegression, StartRunsOnceEvenWhenTheFirstRunStoppedOnAMissingResource) {
    ts::World world;
    int starts = 0;
    ts::Schedule s;
    s.add("init", [&](ts::Res<Config>) { ++starts; }).phase(ts::Phase::start);
    EXPECT_EQ(error_of([&] { s.run(world); }).code(), ts::errc::missing_resource);
    world.insert_resource(Config{});
    s.run(world);
    s.run(world);
    EXPECT_EQ(starts, 1);
}

TEST(ScheduleRegression, ParEachInsideAParallelPhaseDoesNotDeadlock) {
    // A system's par_each waits inside a oneTBB worker; while it waits, the worker may pick up
    // another of the phase's lane tasks, which blocks until every system is done, including the
    // one below it on the same stack. Needs real workers: allow them even on a small machine.
    tbb::global_control workers(tbb::global_control::max_allowed_parallelism, 16);
    std::promise<void> finished;
    std::future<void> done = finished.get_future();
    std::thread runner([&] {
        ts::World world;
        for (int i = 0; i < 20000; ++i)
            world.spawn(Slot<0>{float(i)}, Slot<1>{}, Slot<2>{}, Slot<3>{}, Slot<4>{}, Slot<5>{});
        ts::Schedule s;
        s.set_parallel_threshold(std::chrono::nanoseconds(0));
        add_slot_writer<1>(s);  // five systems that can all run at once, each with a par_each
        add_slot_writer<2>(s);
        add_slot_writer<3>(s);
        add_slot_writer<4>(s);
        add_slot_writer<5>(s);
        tbb::task_arena arena(8);
#if defined(__SANITIZE_THREAD__)
        constexpr int frames = 40;  // ThreadSanitizer runs this some 20x slower
#else
        constexpr int frames = 300;
#endif
        for (int frame = 0; frame < frames; ++frame) s.run(world, arena);
        finished.set_value();
    });
    // Generous: a loaded 2-core machine (or a sanitizer) is slow; a deadlock never finishes.
    if (done.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
        ADD_FAILURE() << "Schedule::run deadlocked (par_each inside a parallel phase)";
        std::fflush(stdout);
        std::_Exit(1);  // the runner can't be joined
    }
    runner.join();
}

// ------------------------------------------------------------------------------ stats

TEST(ScheduleStats, ListsSystemsInRunOrderWithAccessAndTimesWhileProfiling) {
    ts::World world;
    world.insert_resource(Score{});
    world.spawn(Position{}, Velocity{});
    ts::Schedule schedule;
    schedule.add("report", [](ts::View<const Position&>) {}).phase(ts::Phase::manual);
    schedule.add("slow", [](ts::View<Position&, const Velocity&>) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    });
    schedule.add("score", [](ts::ResMut<Score>) {}).phase(ts::Phase::pre_update);
    schedule.add("late", [](ts::World&) {}).phase(ts::Phase::post_update);

    EXPECT_FALSE(schedule.profiling());
    schedule.run(world);  // not timed: profiling is off
    for (const ts::SystemStats& s : schedule.stats()) EXPECT_EQ(s.runs, 0u) << s.name;

    schedule.set_profiling(true);
    for (int i = 0; i < 3; ++i) schedule.run(world);
    schedule.run_system("report", world);
    const std::vector<ts::SystemStats> stats = schedule.stats();
    std::vector<std::string> names;
    for (const ts::SystemStats& s : stats) names.push_back(s.name);
    EXPECT_EQ(names, (Lines{"score", "slow", "late", "report"}));

    const ts::SystemStats& slow = stats[1];
    EXPECT_EQ(slow.phase, ts::Phase::update);
    EXPECT_EQ(slow.runs, 3u);
    EXPECT_GE(slow.median, std::chrono::milliseconds(2));
    EXPECT_GE(slow.p99, slow.median);
    EXPECT_GE(slow.last, std::chrono::milliseconds(2));
    EXPECT_EQ(slow.writes,
              (Lines{std::string(ts::component_info(ts::component_id<Position>()).name)}));
    EXPECT_EQ(slow.reads,
              (Lines{std::string(ts::component_info(ts::component_id<Velocity>()).name)}));
    EXPECT_FALSE(slow.exclusive);
    EXPECT_EQ(stats[0].writes.size(), 1u);
    EXPECT_NE(stats[0].writes[0].find("resource"), std::string::npos);
    EXPECT_TRUE(stats[2].exclusive);
    EXPECT_EQ(stats[3].phase, ts::Phase::manual);
    EXPECT_EQ(stats[3].runs, 1u);
    EXPECT_LT(stats[0].median, std::chrono::milliseconds(2));

    schedule.enable("slow", false);
    schedule.run(world);
    EXPECT_FALSE(schedule.stats()[1].enabled);
    EXPECT_EQ(schedule.stats()[1].runs, 3u);  // an off system doesn't run
}

TEST(ScheduleStats, MedianAndP99AreOverTheLast128Runs) {
    ts::World world;
    ts::Schedule schedule;
    int frame = 0;
    schedule.add("spiky", [&frame](ts::World&) {
        // 200 quick runs, then 100 slow ones: the last 128 hold 100 slow ones.
        if (frame++ >= 200) std::this_thread::sleep_for(std::chrono::microseconds(500));
    });
    schedule.set_profiling(true);
    for (int i = 0; i < 300; ++i) schedule.run(world);
    const ts::SystemStats s = schedule.stats()[0];
    EXPECT_EQ(s.runs, 300u);
    EXPECT_GE(s.median, std::chrono::microseconds(500));
    EXPECT_GE(s.last, std::chrono::microseconds(500));
}

// A World& system owns the world while it runs, so it runs on the thread that called `run`,
// also in a parallel phase; the systems before it in the phase finish first, those after it
// start after it.
TEST(ScheduleParallel, ExclusiveSystemsRunOnTheCallingThreadBetweenTheOthers) {
    ts::World world;
    for (int i = 0; i < 1000; ++i) world.spawn(Position{}, Velocity{}, Health{});
    ts::Schedule s;
    s.set_parallel_threshold(std::chrono::nanoseconds(0));
    std::atomic<int> before_done{0};
    std::atomic<int> after_started{0};
    std::atomic<bool> order_ok{true};
    std::vector<std::thread::id> exclusive_threads;
    auto busy = [] { std::this_thread::sleep_for(std::chrono::microseconds(200)); };
    s.add("a", [&](ts::View<Position&>) {
        busy();
        ++before_done;
    });
    s.add("b", [&](ts::View<Velocity&>) {
        busy();
        ++before_done;
    });
    s.add("x", [&](ts::World& w) {
        if (before_done.load() != 2 || after_started.load() != 0) order_ok = false;
        exclusive_threads.push_back(std::this_thread::get_id());
        w.spawn(Health{1});  // immediate: it owns the world
    });
    s.add("c", [&](ts::View<Position&>) {
        ++after_started;
        busy();
    });
    s.add("d", [&](ts::View<Health&>) {
        ++after_started;
        busy();
    });
    s.add("y", [&](ts::World&) { exclusive_threads.push_back(std::this_thread::get_id()); });
    tbb::task_arena arena(2);
    for (int frame = 0; frame < 30; ++frame) {
        before_done = 0;
        after_started = 0;
        s.run(world, arena);
    }
    EXPECT_TRUE(order_ok);
    ASSERT_EQ(exclusive_threads.size(), 60u);
    for (const std::thread::id id : exclusive_threads) EXPECT_EQ(id, std::this_thread::get_id());
    std::size_t healths = 0;
    world.each([&](const Health&) { ++healths; });
    EXPECT_EQ(healths, 1030u);
}

// issue 20, item 8: running single-threaded needed a tbb::task_arena of the program's own.
TEST(ScheduleWorkers, OneWorkerRunsEverySystemAndItsParEachOnTheCallingThread) {
    ts::World world;
    for (int i = 0; i < 20000; ++i) world.spawn(Position{}, Velocity{1, 0}, Health{});
    ts::Schedule s(1);
    EXPECT_EQ(s.workers(), 1u);
    s.set_parallel_threshold(std::chrono::nanoseconds(0));  // parallel, were there workers
    std::mutex m;
    std::set<std::thread::id> threads;
    auto note = [&] {
        std::lock_guard lock(m);
        threads.insert(std::this_thread::get_id());
    };
    s.add("a", [&](ts::View<Position&, const Velocity&> v) {
        note();
        v.par_each([&](Position& p, const Velocity& vel) {
            p.x += vel.dx;
            note();
        });
    });
    s.add("b", [&](ts::View<Health&> v) {
        note();
        v.par_each([&](Health& h) {
            ++h.hp;
            note();
        });
    });
    s.add("c", [&](ts::View<const Velocity&>) { note(); });
    s.add("d", [&](ts::World& w) {
        note();
        w.query<Position&>().par_each([&](Position&) { note(); });
    });
    s.add("manual", [&](ts::View<Health&> v) {
         v.par_each([&](Health&) { note(); });
     }).phase(ts::Phase::manual);
    for (int frame = 0; frame < 5; ++frame) s.run(world);
    s.run_system("manual", world);
    EXPECT_EQ(threads, (std::set<std::thread::id>{std::this_thread::get_id()}));
    world.each([](const Position& p, const Health& h) {
        EXPECT_EQ(p.x, 5.0f);
        EXPECT_EQ(h.hp, 5);
    });
}

TEST(ScheduleWorkers, AWorkerCountGivesTheScheduleItsOwnArenaAndTheSameWorld) {
    auto frame_result = [](ts::Schedule s) {
        ts::World world;
        for (int i = 0; i < 2000; ++i) world.spawn(Position{float(i)}, Velocity{1, 0});
        int concurrency = 0;
        s.set_parallel_threshold(std::chrono::nanoseconds(0));
        s.add("move", [](ts::View<Position&, const Velocity&> v) {
            v.par_each([](Position& p, const Velocity& vel) { p.x += vel.dx; });
        });
        s.add("spawn", [](ts::Commands c, ts::View<const Velocity&>) { c.spawn(Health{7}); });
        s.add("arena",
              [&](ts::World&) {  // exclusive: on the calling thread, in the arena
                  concurrency = tbb::this_task_arena::max_concurrency();
              })
            .after("move")
            .after("spawn");
        for (int frame = 0; frame < 3; ++frame) s.run(world);
        float sum = 0;
        world.each([&](const Position& p) { sum += p.x; });
        return std::make_pair(concurrency, sum + float(world.count()));
    };
    const auto one = frame_result(ts::Schedule(1));
    const auto two = frame_result(ts::Schedule(2));
    const auto three = frame_result(ts::Schedule::strict(3));
    const auto dflt = frame_result(ts::Schedule());
    EXPECT_EQ(two.first, 2);
    EXPECT_EQ(three.first, 3);
    EXPECT_EQ(one.second, two.second);
    EXPECT_EQ(one.second, three.second);
    EXPECT_EQ(one.second, dflt.second);
    EXPECT_EQ(ts::Schedule().workers(), 0u);
    EXPECT_EQ(ts::Schedule::strict(4).workers(), 4u);
}

TEST(SchedulePhase, NamesAreTheEnumeratorsAsWritten) {
    EXPECT_STREQ(ts::phase_name(ts::Phase::start), "start");
    EXPECT_STREQ(ts::phase_name(ts::Phase::pre_update), "pre_update");
    EXPECT_STREQ(ts::phase_name(ts::Phase::update), "update");
    EXPECT_STREQ(ts::phase_name(ts::Phase::post_update), "post_update");
    EXPECT_STREQ(ts::phase_name(ts::Phase::manual), "manual");
}

using tessera::test::load_at_tick;

TEST(Schedule, RunWithoutRoomForAFrameOfTicksIsLimitExceededBeforeAnythingRuns) {
    ts::World w;
    load_at_tick(w, ts::World::max_tick - 1);
    ts::Schedule schedule;
    int runs = 0;
    schedule.add("counter", [&](ts::World&) { ++runs; });
    try {
        schedule.run(w);
        ADD_FAILURE() << "the frame would have taken the tick past World::max_tick";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::limit_exceeded);
    }
    try {
        schedule.run_system("counter", w);
        ADD_FAILURE() << "the run would have taken the tick past World::max_tick";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::limit_exceeded);
    }
    EXPECT_EQ(runs, 0);
    EXPECT_EQ(w.tick(), ts::World::max_tick - 1);
}

// From the workers of a par_each a run is refused before any system runs (a run changes the
// whole world: its tick, its sync points), and the world is left neither deferring nor parallel.
TEST(ScheduleErrors, RunFromParEachWorkersIsRefused) {
    ts::World world;
    for (int i = 0; i < 64; ++i) world.spawn(Position{});
    std::atomic<int> ran{0}, refused{0};
    ts::Schedule s;
    s.add("count", [&](ts::View<const Position&>) { ran.fetch_add(1); });
    const std::uint64_t tick = world.tick();
    world.query<const Position&>().par_each([&](const Position&) {
        for (int way = 0; way < 2; ++way) {
            try {
                if (way == 0)
                    s.run(world);
                else
                    s.run_system("count", world);
            } catch (const ts::Error& err) {
                if (err.code() == ts::errc::invalid_argument) refused.fetch_add(1);
            }
        }
    });
    EXPECT_EQ(refused.load(), 128);
    EXPECT_EQ(ran.load(), 0);
    EXPECT_EQ(world.tick(), tick);
    EXPECT_FALSE(world.deferring());
    s.run(world);
    EXPECT_EQ(ran.load(), 1);
}

TEST(Schedule, SystemTicksRoundTripSoAFilterSeesAgainWhatItSaw) {
    ts::World w;
    ts::Schedule s(1);
    int seen = 0;
    bool spawned = false;
    s.add("spawn", [&spawned](ts::Commands cmds) {
        if (!std::exchange(spawned, true)) cmds.spawn(Health{1});
    });
    s.add("count", [&seen](ts::View<const Health&, ts::Added<Health>> v) {
        v.each([&](const Health&) { ++seen; });
    });
    s.run(w);  // spawns one; count runs before the sync point and sees none
    std::vector<std::uint64_t> ticks;
    s.system_ticks(ticks);
    ASSERT_EQ(ticks.size(), 2u);
    EXPECT_GT(ticks[1], 0u);
    s.run(w);
    EXPECT_EQ(seen, 1);
    // Back to the ticks of before the second run: the same entity is "added" for count again.
    s.set_system_ticks(ticks);
    s.run(w);
    EXPECT_EQ(seen, 2);
    std::vector<std::uint64_t> wrong(3, 0);
    try {
        s.set_system_ticks(wrong);
        ADD_FAILURE() << "no error";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::invalid_argument);
    }
    std::vector<std::uint64_t> after;
    s.system_ticks(after);
    EXPECT_GT(after[1], ticks[1]);  // unchanged by the failed call
}

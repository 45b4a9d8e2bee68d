// Schedules (schedule.hpp), continued: declared-access World& systems sharing the world (their
// own ticks, overlapping in time), systems reporting failure through ts::Status, groups
// (`run(world, dt, group)`), the automatic choice between inline and parallel phases, and
// traces of a schedule's frames (`trace_to`).
#include <tessera/tessera.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
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
struct Ammo {
    int rounds = 0;
};

using Lines = std::vector<std::string>;

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

// The error nested in the system_failed that `fn` throws (fails the test when there is none).
template <class F>
ts::Error nested_error_of(F&& fn) {
    try {
        fn();
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::system_failed);
        try {
            std::rethrow_if_nested(e);
        } catch (const ts::Error& nested) {
            return nested;
        } catch (...) {
        }
    }
    ADD_FAILURE() << "expected a system_failed with a nested tessera::Error";
    return ts::Error(ts::errc::not_alive, "");
}

// A rendezvous of `parties` threads that gives up after a timeout instead of hanging, so a test
// whose systems do not overlap fails rather than blocks. `arrive_and_wait` tells whether every
// party arrived in time.
class Rendezvous {
public:
    explicit Rendezvous(int parties) : parties_(parties) {}
    bool arrive_and_wait() {
        std::unique_lock lock(m_);
        ++arrived_;
        cv_.notify_all();
        return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return arrived_ >= parties_; });
    }

private:
    std::mutex m_;
    std::condition_variable cv_;
    int parties_;
    int arrived_ = 0;
};

// The systems of cinder/ecs's schedule example (seeds 000, "Schedule"), as World& systems with
// declared access.
void integrate(ts::World& w) {
    w.each([](Position& p, const Velocity& v) {
        p.x += v.dx;
        p.y += v.dy;
    });
}
void decay(ts::World& w) {
    for (ts::Chunk& c : w.query<Health&>().chunks()) {
        for (Health& h : c.column<Health>()) --h.hp;
    }
}

ts::World cinder_world() {
    ts::World world;
    for (int i = 0; i < 8; ++i) world.spawn(Position{}, Velocity{1, 2}, Health{10});
    return world;
}

}  // namespace

// ----------------------------------------------------------- declared World& systems (shared)

TEST(ScheduleSharedWorld, CindersExampleTakesTwoStages) {
    float seen = 0;
    ts::Schedule s;
    s.add("integrate", integrate).reads<Velocity>().writes<Position>();
    s.add("decay", decay).writes<Health>();  // same stage
    s.add("read positions", [&](ts::World& w) {
         w.each([&](const Position& p) { seen += p.x; });
     }).reads<Position>();  // new stage
    EXPECT_EQ(s.stage_count(), 2u);
    ts::World world = cinder_world();
    s.run(world);
    EXPECT_EQ(seen, 8.0f);
}

TEST(ScheduleSharedWorld, TwoDeclaredWorldSystemsOverlapInTime) {
    ts::World world = cinder_world();
    const ts::Entity e = world.entities().front();
    (void)world.changed_tick<Position>(e);  // tracking on, from the main thread
    (void)world.changed_tick<Health>(e);
    Rendezvous both(2);
    std::atomic<int> met{0};
    ts::Schedule s(2);
    s.set_parallel_threshold(std::chrono::nanoseconds(0));  // parallel from the first run
    s.add("integrate",
          [&](ts::World& w) {
              if (both.arrive_and_wait()) ++met;
              integrate(w);
          })
        .reads<Velocity>()
        .writes<Position>();
    s.add("decay", [&](ts::World& w) {
         if (both.arrive_and_wait()) ++met;
         decay(w);
         w.get_mut<Health>(e).hp -= 5;
     }).writes<Health>();
    EXPECT_EQ(s.stage_count(), 1u);
    const std::uint64_t before = world.tick();
    s.run(world);
    EXPECT_EQ(met.load(), 2) << "the two systems did not run at the same time";
    EXPECT_EQ(world.get<Position>(e).x, 1.0f);
    EXPECT_EQ(world.get<Health>(e).hp, 4);
    // Each system's writes carry its own tick (in the phase's deterministic order), not the
    // world's: the same stamps as on one worker.
    EXPECT_EQ(world.changed_tick<Position>(e), before + 1);
    EXPECT_EQ(world.changed_tick<Health>(e), before + 2);
    EXPECT_GT(world.tick(), before + 2);
}

TEST(ScheduleSharedWorld, TicksAndValuesMatchOneWorker) {
    auto frames = [](std::size_t workers) {
        ts::World world = cinder_world();
        const ts::Entity e = world.entities().back();
        (void)world.changed_tick<Position>(e);
        (void)world.changed_tick<Health>(e);
        std::vector<std::set<ts::Entity>> changed;
        ts::Schedule s(workers);
        s.set_parallel_threshold(std::chrono::nanoseconds(0));
        s.add("watch", [&](ts::View<ts::Entity, const Position&, ts::Changed<Position>> v) {
            std::set<ts::Entity> seen;
            v.each([&](ts::Entity x, const Position&) { seen.insert(x); });
            changed.push_back(seen);
        });
        s.add("integrate", integrate).reads<Velocity>().writes<Position>();
        s.add("decay", decay).writes<Health>();
        for (int f = 0; f < 4; ++f) s.run(world);
        return std::make_tuple(world.tick(), world.changed_tick<Position>(e),
                               world.changed_tick<Health>(e), world.get<Position>(e).y, changed);
    };
    const auto one = frames(1);
    EXPECT_EQ(frames(2), one);
    EXPECT_EQ(std::get<4>(one).size(), 4u);
    EXPECT_EQ(std::get<4>(one)[1].size(), 8u);  // every write of integrate seen once, next frame
}

TEST(ScheduleSharedWorld, AConflictingDeclarationStillOrders) {
    ts::Schedule s;
    s.add("integrate", integrate).reads<Velocity>().writes<Position>();
    s.add("push", [](ts::World&) {}).writes<Velocity>();
    s.add("exclusive", [](ts::World&) {});
    EXPECT_EQ(s.stage_count(), 3u);  // integrate | push (writes what integrate reads) | alone
}

// ------------------------------------------------------------------------------ Status results

TEST(ScheduleStatus, AnErrorStatusFailsLikeAThrow) {
    ts::World world;
    const ts::Entity e = world.spawn(Ammo{0}, Position{});
    Lines log;
    ts::Schedule s(1);
    s.add("fire", [&](ts::View<Ammo&> ammo, ts::Commands cmds) -> ts::Status {
        cmds.spawn(Position{});  // dropped: the system failed
        int rounds = 0;
        ammo.each([&](Ammo& a) { rounds += a.rounds; });
        if (rounds == 0) return ts::Status::error("out of ammo");
        return ts::Status::ok();
    });
    s.add("after fire", [&](ts::View<Ammo&>) { log.push_back("after fire"); });  // depends
    s.add("apart", [&](ts::View<Position&>, ts::Commands cmds) {
        log.push_back("apart");
        cmds.add(e, Health{3});
    });
    s.add("later", [&] { log.push_back("later"); }).phase(ts::Phase::post_update);
    const std::size_t count = world.count();
    const ts::Error err = error_of([&] { s.run(world); });
    EXPECT_EQ(err.code(), ts::errc::system_failed);
    EXPECT_TRUE(contains(err.what(), "'fire'"));
    EXPECT_TRUE(contains(err.what(), "out of ammo"));
    EXPECT_EQ(log, (Lines{"apart"}));
    EXPECT_EQ(world.count(), count);        // fire's spawn dropped
    EXPECT_EQ(world.get<Health>(e).hp, 3);  // apart's command applied
    const ts::Error nested = nested_error_of([&] { s.run(world); });
    EXPECT_EQ(nested.code(), ts::errc::system_failed);
    EXPECT_STREQ(nested.what(), "out of ammo");
    world.set(e, Ammo{6});
    log.clear();
    s.run(world);  // usable again; ok runs everything
    EXPECT_EQ(log, (Lines{"after fire", "apart", "later"}));
    EXPECT_EQ(world.count(), count + 1);
}

TEST(ScheduleStatus, AStatusCarriesItsCodeAndRunSystemReportsIt) {
    ts::World world;
    ts::Schedule s;
    s.add("load", [](ts::World&) {
         return ts::Status::error("level.json is missing", ts::errc::invalid_argument);
     }).phase(ts::Phase::manual);
    const ts::Error err = error_of([&] { s.run_system("load", world); });
    EXPECT_EQ(err.code(), ts::errc::system_failed);
    EXPECT_TRUE(contains(err.what(), "'load'"));
    EXPECT_EQ(nested_error_of([&] { s.run_system("load", world); }).code(),
              ts::errc::invalid_argument);
}

namespace status_test {
struct Checker {
    int* calls;
    ts::Status on_update(ts::World&) {
        ++*calls;
        return *calls == 2 ? ts::Status::error("second call") : ts::Status{};
    }
};
}  // namespace status_test

TEST(ScheduleStatus, ClassSystemsMayReturnAStatus) {
    ts::World world;
    int calls = 0;
    ts::Schedule s;
    s.add<status_test::Checker>(status_test::Checker{&calls});
    s.run(world);
    EXPECT_EQ(error_of([&] { s.run(world); }).code(), ts::errc::system_failed);
    s.run(world);
    EXPECT_EQ(calls, 3);
}

TEST(ScheduleStatus, StatusBasics) {
    const ts::Status ok;
    EXPECT_TRUE(ok.is_ok());
    EXPECT_TRUE(static_cast<bool>(ts::Status::ok()));
    const ts::Status bad = ts::Status::error("why");
    EXPECT_FALSE(bad);
    EXPECT_EQ(bad.message(), "why");
    EXPECT_EQ(bad.code(), ts::errc::system_failed);
}

// ------------------------------------------------------------------------------------ groups

TEST(ScheduleGroups, RunsOnlyTheGroupWithPhasesAndOrder) {
    ts::World world;
    Lines log;
    ts::Schedule s;
    s.add("gravity", [&] { log.push_back("gravity"); });
    s.add("draw", [&] { log.push_back("draw"); }).group("render");
    s.add("cull", [&] { log.push_back("cull"); }).group("render").before("draw");
    s.add("begin", [&] { log.push_back("begin"); }).group("render").phase(ts::Phase::pre_update);
    s.add("present", [&] { log.push_back("present"); })
        .group("render")
        .phase(ts::Phase::post_update);
    s.run(world, 1.0f / 60);
    EXPECT_EQ(log, (Lines{"gravity"}));
    log.clear();
    s.run(world, 0.0f, "render");
    EXPECT_EQ(log, (Lines{"begin", "cull", "draw", "present"}));
    log.clear();
    s.enable("cull", false);
    s.run(world, 0.0f, "render");
    EXPECT_EQ(log, (Lines{"begin", "draw", "present"}));
    log.clear();
    s.run(world, 0.0f, "");  // "" is the default group
    EXPECT_EQ(log, (Lines{"gravity"}));
}

TEST(ScheduleGroups, AnUnknownGroupIsAnError) {
    ts::World world;
    ts::Schedule s;
    s.add("draw", [] {}).group("render");
    const ts::Error err = error_of([&] { s.run(world, 0.0f, "rendr"); });
    EXPECT_EQ(err.code(), ts::errc::unknown_system);
    EXPECT_TRUE(contains(err.what(), "'rendr'"));
    ts::Schedule empty;
    empty.run(world);  // the default group may be empty
}

TEST(ScheduleGroups, OrderThroughASystemOutsideTheGroupHolds) {
    // a before x before b, with x outside the group: a still runs before b, on any number of
    // workers, although a and b share no data; x does not run.
    for (const std::size_t workers : {1u, 2u}) {
        ts::World world;
        std::mutex m;
        Lines log;
        auto record = [&](const char* name) {
            const std::lock_guard lock(m);
            log.push_back(name);
        };
        ts::Schedule s(workers);
        s.set_parallel_threshold(std::chrono::nanoseconds(0));
        s.add("b", [&](ts::View<Health&>) { record("b"); }).group("g");
        s.add("x", [&] { record("x"); }).before("b");
        s.add("a", [&](ts::View<Position&>) { record("a"); }).group("g").before("x");
        s.add("c", [&](ts::View<Velocity&>) { record("c"); }).group("g");
        for (int frame = 0; frame < 20; ++frame) {
            log.clear();
            s.run(world, 0.0f, "g");
            ASSERT_EQ(log.size(), 3u);
            EXPECT_LT(std::find(log.begin(), log.end(), "a"),
                      std::find(log.begin(), log.end(), "b"));
            EXPECT_EQ(std::find(log.begin(), log.end(), "x"), log.end());
        }
    }
}

TEST(ScheduleGroups, StartRunsOncePerGroupAndTicksWaitForTheNextRun) {
    ts::World world;
    const ts::Entity e = world.spawn(Position{});
    Lines log;
    std::vector<std::size_t> seen;
    ts::Schedule s;
    s.add("boot", [&] { log.push_back("boot"); }).phase(ts::Phase::start);
    s.add("ui boot", [&] { log.push_back("ui boot"); }).phase(ts::Phase::start).group("ui");
    s.add("move", [&](ts::View<Position&> v) { v.each([](Position& p) { p.x += 1; }); });
    s.add("label", [&](ts::View<const Position&, ts::Changed<Position>> v) {
         std::size_t n = 0;
         v.each([&](const Position&) { ++n; });
         seen.push_back(n);
     }).group("ui");
    s.run(world);
    s.run(world);
    EXPECT_EQ(log, (Lines{"boot"}));
    s.run(world, 0.0f, "ui");
    s.run(world, 0.0f, "ui");  // nothing written since its last run
    s.run(world);
    s.run(world, 0.0f, "ui");
    EXPECT_EQ(log, (Lines{"boot", "ui boot"}));
    EXPECT_EQ(seen, (std::vector<std::size_t>{1, 0, 1}));
    EXPECT_EQ(world.get<Position>(e).x, 3.0f);
}

// ------------------------------------------------------------------- inline or parallel phase

TEST(ScheduleParallelChoice, TheAutomaticChoiceGivesTheSameWorldAsOneWorker) {
    // Over enough frames to probe both ways (every 32 runs), the automatic choice switches
    // between inline and parallel runs of the phase; the world is the same as on one worker.
    auto play = [](std::size_t workers) {
        ts::World world;
        for (int i = 0; i < 2000; ++i)
            world.spawn(Position{float(i), 0}, Velocity{1, float(i % 7)}, Health{i});
        ts::Schedule s(workers);
        s.add("move", [](ts::View<Position&, const Velocity&> v) {
            v.each([](Position& p, const Velocity& d) {
                p.x += d.dx;
                p.y += d.dy;
            });
        });
        s.add("heal", [](ts::View<Health&> v) { v.each([](Health& h) { h.hp += 1; }); });
        s.add("drag", [](ts::View<Velocity&> v) { v.each([](Velocity& d) { d.dy *= 0.5f; }); });
        for (int frame = 0; frame < 100; ++frame) s.run(world);
        std::vector<float> out;
        world.each([&](const Position& p, const Health& h) {
            out.push_back(p.x + p.y);
            out.push_back(float(h.hp));
        });
        return std::make_pair(out, world.tick());
    };
    EXPECT_EQ(play(2), play(1));
}

// ------------------------------------------------------------------------------------- traces

namespace trace_test {

/// A fresh path in the temporary directory, removed when the test ends.
struct TempFile {
    std::filesystem::path path;
    explicit TempFile(const std::string& name)
        : path(std::filesystem::temp_directory_path() /
               (name + "-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                ".json")) {
        std::filesystem::remove(path);
    }
    ~TempFile() { std::filesystem::remove(path); }
};

nlohmann::json read_json(const std::filesystem::path& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

/// The complete ("X") events of a trace.
std::vector<nlohmann::json> complete_events(const nlohmann::json& trace) {
    std::vector<nlohmann::json> out;
    for (const nlohmann::json& e : trace.at("traceEvents")) {
        if (e.at("ph") == "X") out.push_back(e);
    }
    return out;
}

/// Four systems that don't conflict (so a parallel phase overlaps them), each with some work.
void add_systems(ts::Schedule& s) {
    auto busy = [](auto& v, auto fn) {
        for (int round = 0; round < 20; ++round) v.each(fn);
    };
    s.add("move", [busy](ts::View<Position&> v) { busy(v, [](Position& p) { p.x += 1; }); });
    s.add("steer", [busy](ts::View<Velocity&> v) { busy(v, [](Velocity& d) { d.dy *= 0.5f; }); });
    s.add("heal", [busy](ts::View<Health&> v) { busy(v, [](Health& h) { h.hp += 1; }); });
    s.add("reload", [busy](ts::View<Ammo&> v) { busy(v, [](Ammo& a) { a.rounds += 1; }); });
}

void populate(ts::World& world) {
    for (int i = 0; i < 5000; ++i)
        world.spawn(Position{float(i), 0}, Velocity{1, 1}, Health{i}, Ammo{i});
}

}  // namespace trace_test

TEST(ScheduleTrace, RecordsOneEventPerSystemRunOnTheTrackOfItsWorker) {
    using namespace trace_test;
    const TempFile file("tessera-trace");
    ts::World world;
    populate(world);
    ts::Schedule s(4);
    add_systems(s);
    s.set_parallel_threshold(std::chrono::nanoseconds{0});  // every phase runs in parallel
    s.run(world);                                           // not traced
    s.trace_to(file.path.string(), 3);
    s.run(world);
    s.run(world);
    // Opened at once (a bad path throws from trace_to), written when the last frame ends.
    EXPECT_EQ(std::filesystem::file_size(file.path), 0u);
    s.run(world);
    s.run(world);  // not traced

    const nlohmann::json trace = read_json(file.path);
    const std::vector<nlohmann::json> events = complete_events(trace);
    ASSERT_EQ(events.size(), 4u * 3u);  // systems x frames
    std::map<std::string, int> runs;
    std::map<int, std::vector<std::pair<double, double>>> by_track;
    std::set<int> frames;
    for (const nlohmann::json& e : events) {
        ++runs[e.at("name").get<std::string>()];
        EXPECT_EQ(e.at("pid"), 1);
        EXPECT_EQ(e.at("cat"), "update");
        EXPECT_GE(e.at("dur").get<double>(), 0.0);
        EXPECT_GE(e.at("ts").get<double>(), 0.0);
        frames.insert(e.at("args").at("frame").get<int>());
        by_track[e.at("tid").get<int>()].emplace_back(
            e.at("ts").get<double>(), e.at("ts").get<double>() + e.at("dur").get<double>());
    }
    EXPECT_EQ(runs,
              (std::map<std::string, int>{{"heal", 3}, {"move", 3}, {"reload", 3}, {"steer", 3}}));
    EXPECT_EQ(frames, (std::set<int>{0, 1, 2}));
    // A worker runs one system at a time: the events of a track don't overlap.
    for (auto& [track, spans] : by_track) {
        EXPECT_GE(track, 0);
        std::sort(spans.begin(), spans.end());
        for (std::size_t i = 1; i < spans.size(); ++i)
            EXPECT_LE(spans[i - 1].second, spans[i].first + 1e-3) << "track " << track;
    }
    // Each track is named for the viewers.
    std::set<int> named;
    for (const nlohmann::json& e : trace.at("traceEvents")) {
        if (e.at("ph") == "M" && e.at("name") == "thread_name")
            named.insert(e.at("tid").get<int>());
    }
    for (const auto& [track, spans] : by_track) EXPECT_TRUE(named.count(track)) << track;
}

TEST(ScheduleTrace, OneWorkerRunsEverySystemOnTrackZero) {
    using namespace trace_test;
    const TempFile file("tessera-trace-one");
    ts::World world;
    populate(world);
    ts::Schedule s(1);
    add_systems(s);
    s.trace_to(file.path.string(), 2);
    s.run(world);
    s.run(world);
    const std::vector<nlohmann::json> events = complete_events(read_json(file.path));
    ASSERT_EQ(events.size(), 4u * 2u);
    for (const nlohmann::json& e : events) EXPECT_EQ(e.at("tid"), 0);
}

TEST(ScheduleTrace, TheDestructorWritesTheFramesTracedSoFar) {
    using namespace trace_test;
    const TempFile file("tessera-trace-partial");
    {
        ts::World world;
        populate(world);
        ts::Schedule s(2);
        add_systems(s);
        s.trace_to(file.path.string(), 10);
        s.run(world);
        s.run(world);
    }
    EXPECT_EQ(complete_events(read_json(file.path)).size(), 4u * 2u);
}

TEST(ScheduleTrace, ABadPathOrNoFramesIsInvalidArgument) {
    ts::Schedule s(1);
    const std::string bad = "/nonexistent-tessera-dir/trace.json";
    try {
        s.trace_to(bad, 3);
        FAIL() << "trace_to did not throw";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::invalid_argument);
        EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
    const trace_test::TempFile file("tessera-trace-zero");
    try {
        s.trace_to(file.path.string(), 0);
        FAIL() << "trace_to did not throw";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::invalid_argument);
    }
}

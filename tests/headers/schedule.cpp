// schedule.hpp alone: Schedule, SystemConfig, SystemStats and phase_name.
#include <tessera/schedule.hpp>
#include <tessera/system_stats.hpp>

#include <chrono>
#include <string>
#include <utility>

namespace ts = tessera;

namespace {
struct Pos {
    float x = 0;
};
struct Mover {
    int created = 0;
    void on_create(ts::World&) { ++created; }
    void on_update(ts::World&, float) {}
};
}  // namespace

int header_schedule() {
    ts::World w;
    w.spawn(Pos{});
    ts::Schedule s(1);
    s.add("move", [](ts::View<Pos&> v) { v.each([](Pos& p) { p.x += 1; }); })
        .phase(ts::Phase::update)
        .order(1)
        .group("sim")
        .reads<Pos>()
        .writes<Pos>();
    ts::SystemConfig first = s.add("first", [](ts::World&) {}).before("move");
    s.add("last", [](ts::World&) {}).after("move");
    if (first.name() != "first") return 1;
    s.add("start", [](ts::World&, float) {}).phase(ts::Phase::start);
    s.add<Mover>();
    s.set_parallel_threshold(std::chrono::nanoseconds(0));
    s.set_profiling(true);
    s.build();
    if (s.stage_count() == 0 || !s.profiling() || s.workers() != 1 || s.size() != 5) return 2;
    s.run(w);
    s.run(w, 0.5f, "sim");
    s.run_system("move", w);
    s.enable("first", false);
    if (s.is_enabled("first") || !s.contains("move") || s.skipped_commands() != 0) return 3;
    if (s.stats().size() != 5) return 4;
    s.remove("first");
    ts::Schedule moved(std::move(s));
    s = ts::Schedule::strict();
    ts::Schedule plain;
    return std::string(ts::phase_name(ts::Phase::update)).empty() || moved.size() != 4 ? 5 : 0;
}

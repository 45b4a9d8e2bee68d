// system.hpp alone: Status, the view filters and the system parameters, made by hand as a
// schedule makes them; Commands' relate and unrelate are in system_relation.cpp (system.hpp
// says to include relation.hpp for them).
#include <tessera/system.hpp>

#include <vector>

namespace ts = tessera;

namespace {
struct Pos {
    float x = 0;
};
struct Vel {
    float v = 0;
};
struct Gone {};
struct Clock {
    double t = 0;
};
struct Ping {
    int n = 0;
};
}  // namespace

int header_system() {
    const ts::Status ok = ts::Status::ok();
    const ts::Status bad = ts::Status::error("no", ts::errc::invalid_argument);
    if (!ok.is_ok() || bad || bad.code() != ts::errc::invalid_argument || bad.message() != "no")
        return 1;

    ts::World w;
    const ts::Entity e = w.spawn(Pos{1}, Vel{2});
    using V = ts::View<Pos&, const Vel&, ts::With<Vel>, ts::Without<Gone>, ts::Any<Pos>,
                       ts::Changed<Vel>, ts::Added<Pos>>;
    V::query_type q = w.query<Pos&, const Vel&>();
    V view(q);
    std::size_t n = 0;
    view.each([&](Pos& p, const Vel& v) {
        p.x += v.v;
        ++n;
    });
    view.par_each([](Pos&, const Vel&) {});
    view.each_chunk([&](ts::Chunk& c, auto...) { n += c.count(); });
    if (n != 2 || view.count() != 1 || view.query().count() != 1) return 2;

    Clock clock{1};
    const ts::Res<Clock> res(clock);
    const ts::ResMut<Clock> res_mut(clock);
    res_mut->t = res->t + (*res).t + res.get().t + (*res_mut).t + res_mut.get().t;

    ts::CommandBuffer buffer;
    ts::Commands cmds(buffer);
    const ts::Entity made = cmds.spawn(Pos{});
    cmds.add(made, Vel{});
    cmds.add<Gone>(e);
    cmds.remove<Gone>(e);
    cmds.despawn(made);
    if (cmds.buffer().size() < 5) return 3;

    std::vector<Ping> pending;
    ts::EventWriter<Ping> writer(pending);
    const Ping ping{1};
    writer.send(ping);
    writer.send(Ping{2});
    ts::Events<Ping> events;
    events.send(Ping{3});
    ts::EventCursor cursor;
    const ts::EventReader<Ping> reader(events, cursor);
    if (pending.size() != 2 || reader.size() != 1 || reader.empty()) return 4;
    if (reader.read().size() != 1) return 5;
    return 0;
}

// query.hpp alone: Query's members, and World's query, each, collect_chunks and despawn_all
// (world.hpp says to include query.hpp for them).
#include <tessera/query.hpp>

#include <cstddef>
#include <utility>
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
}  // namespace

int header_query() {
    ts::World w;
    const ts::Entity e = w.spawn(Pos{1}, Vel{2});
    w.spawn(Pos{3});

    ts::Query<ts::Entity, Pos&, const Vel*> q = w.query<ts::Entity, Pos&, const Vel*>();
    q.with<Pos>().without<Gone>().any<Pos, Vel>();
    std::size_t n = 0;
    q.each([&](ts::Entity, Pos& p, const Vel*) {
        p.x += 1;
        ++n;
    });
    q.par_each([](ts::Entity, Pos& p, const Vel*) { p.x += 1; });
    q.each_chunk([&](ts::Chunk& c, auto...) { n += c.count(); });
    for (ts::Chunk& c : q.chunks()) n += c.count();
    if (n != 6 || q.count() != 2 || !q || q.spec().all.empty()) return 1;
    (void)q.state();
    ts::Observer in = q.on_enter([](ts::World&, ts::Entity) {});
    ts::Observer out = q.on_exit([](ts::World&, ts::Entity) {});

    auto temp = w.query<const Pos&>().with<Vel>().without<Gone>().any<Pos>();
    auto changed = w.query<const Pos&>().changed<Pos>().added<Pos>();
    auto since = w.query<const Pos&>().changed_since<Pos>(0).added_since<Pos>(0);
    ts::Query<const Pos&> lvalue = w.query<const Pos&>();
    lvalue.changed<Pos>();
    lvalue.added<Pos>();
    lvalue.changed_since<Pos>(0);
    lvalue.added_since<Pos>(0);
    if (temp.count() != 1 || changed.count() != 2 || since.count() != 2) return 2;
    for (ts::Chunk& c : w.query<const Pos&>().chunks()) (void)c;
    ts::Query<const Pos&> empty;
    if (empty || empty.count() != 0) return 3;

    std::size_t each = 0;
    w.each([&](const Pos&) { ++each; });
    std::vector<ts::Chunk> chunks;
    w.collect_chunks(ts::QuerySpec{}.with<Pos>(), chunks);
    if (each != 2 || chunks.size() != 2) return 4;
    auto doomed = w.query<const Vel&>();
    if (w.despawn_all(doomed) != 1 || w.is_alive(e)) return 5;
    return 0;
}

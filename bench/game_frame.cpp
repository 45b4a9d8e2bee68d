// game_frame: a 7-system game update over a mix of entity kinds, in the shape of the outside
// suite of issue 21 (hero/monster entities). Components Position, Velocity, Data, Health,
// Damage, Sprite, Player; systems, each calling a small non-inlined body per entity:
//   movement (Position&, const Velocity&)           data (Data&)
//   combined (const Position&, Velocity&, Data&)    health (Health&)
//   damage   (Health&, const Damage&)               sprite (Sprite&, const Player&, const Health&)
//   render   (const Position&, const Sprite&)       (into a frame sink: a count and a hash)
// Six kinds (archetypes) in uneven proportions, entity i taking the kind of slot i % 64:
//   player  P V D H Dm S Pl   1/64  (slot 0: a world of one entity is one player)
//   monster P V D H Dm S     24/64
//   npc     P V D H S        12/64
//   prop    P S              10/64
//   particle P V             10/64
//   trigger P D               7/64
// Item = one entity (N per frame). `game_frame` runs at N = 1,000,000 (or the sweep's count),
// `game_frame_256` at 256 and `game_frame_1` at one entity (the schedule's fixed cost per run).
//
// Variants: `raw` = the same bodies over plain arrays, one table of arrays per kind, each system
// looping over the kinds that have its components; `tessera` = seven cached `Query`s, `each`
// in turn; `tessera_schedule` = the seven systems in a `Schedule(1)` (one worker: every system
// inline on the calling thread), one `run(world, dt)` per frame.
//
// Check: one untimed frame of each variant, then a hash of every component value (the bit
// patterns summed, so order does not matter) and the render sink must equal the raw baseline's
// after one frame of the same bodies.
#include "common.hpp"

#include <tessera/tessera.hpp>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tessera_bench {
namespace {

struct Health {
    int hp, max;
};
struct Damage {
    int amount;
};
struct Sprite {
    std::uint32_t glyph;
};
struct Player {
    std::uint32_t glyph;
};
/// What render writes: how many sprites it drew and a hash of them.
struct FrameSink {
    std::uint64_t count = 0;
    std::uint64_t hash = 0;
};

// ---- the system bodies, shared by every variant (never inlined: one call per entity) ----

[[gnu::noinline]] void movement_body(Position& p, const Velocity& v) {
    p.x += v.dx * kDt;
    p.y += v.dy * kDt;
}
[[gnu::noinline]] void data_body(Data& d) {
    d.v = d.v * 0.5f + 1.0f;
}
[[gnu::noinline]] void combined_body(const Position& p, Velocity& v, Data& d) {
    if (p.x > 1000.0f || p.x < -1000.0f) v.dx = -v.dx;
    d.v += v.dy * 0.25f;
}
[[gnu::noinline]] void health_body(Health& h) {
    if (h.hp < h.max) ++h.hp;
}
[[gnu::noinline]] void damage_body(Health& h, const Damage& d) {
    h.hp = h.hp > d.amount ? h.hp - d.amount : 0;
}
[[gnu::noinline]] void sprite_body(Sprite& s, const Player& p, const Health& h) {
    s.glyph = h.hp == 0 ? 'x' : p.glyph;
}
[[gnu::noinline]] void render_body(const Position& p, const Sprite& s, FrameSink& out) {
    ++out.count;
    out.hash += std::bit_cast<std::uint32_t>(p.x) ^ s.glyph;
}

enum Kind : std::size_t { player, monster, npc, prop, particle, trigger, kinds };
enum Has : unsigned { kP = 1, kV = 2, kD = 4, kH = 8, kDm = 16, kS = 32, kPl = 64 };
constexpr std::array<unsigned, kinds> kComponents = {kP | kV | kD | kH | kDm | kS | kPl,
                                                     kP | kV | kD | kH | kDm | kS,
                                                     kP | kV | kD | kH | kS,
                                                     kP | kS,
                                                     kP | kV,
                                                     kP | kD};

Kind kind_of(std::size_t i) {
    const std::size_t slot = i % 64;
    if (slot == 0) return player;
    if (slot <= 24) return monster;
    if (slot <= 36) return npc;
    if (slot <= 46) return prop;
    if (slot <= 56) return particle;
    return trigger;
}

// Entity i's starting values.
Position position_of(std::size_t i) {
    return {static_cast<float>(i % 2000) - 1000.0f, static_cast<float>(i % 100)};
}
Velocity velocity_of(std::size_t i) {
    return {static_cast<float>(i % 7) - 3.0f, 1.0f};
}
Data data_of(std::size_t i) {
    return {static_cast<float>(i % 10)};
}
Health health_of(std::size_t i) {
    return {static_cast<int>(i % 50), 100};
}
Damage damage_of(std::size_t i) {
    return {static_cast<int>(i % 3)};
}

/// An order-independent hash of values (their bit patterns summed).
struct Hash {
    std::uint64_t sum = 0;
    void add(float f) { sum += std::bit_cast<std::uint32_t>(f); }
    void add(int v) { sum += static_cast<std::uint32_t>(v) * 0x9E3779B1u; }
    void add(std::uint32_t v) { sum += v * 0x85EBCA77u; }
};

// ---- raw baseline ----

struct RawKind {
    unsigned has = 0;
    std::size_t n = 0;
    AlignedVector<Position> p;
    AlignedVector<Velocity> v;
    AlignedVector<Data> d;
    AlignedVector<Health> h;
    AlignedVector<Damage> dm;
    AlignedVector<Sprite> s;
    AlignedVector<Player> pl;
};

struct RawWorld {
    std::array<RawKind, kinds> k;
    explicit RawWorld(std::size_t n) {
        for (std::size_t i = 0; i < kinds; ++i) k[i].has = kComponents[i];
        for (std::size_t i = 0; i < n; ++i) {
            RawKind& t = k[kind_of(i)];
            ++t.n;
            t.p.push_back(position_of(i));
            if (t.has & kV) t.v.push_back(velocity_of(i));
            if (t.has & kD) t.d.push_back(data_of(i));
            if (t.has & kH) t.h.push_back(health_of(i));
            if (t.has & kDm) t.dm.push_back(damage_of(i));
            if (t.has & kS) t.s.push_back(Sprite{'m'});
            if (t.has & kPl) t.pl.push_back(Player{'@'});
        }
    }
    void frame(FrameSink& sink) {
        for (RawKind& t : k) {
            if ((t.has & (kP | kV)) != (kP | kV)) continue;
            for (std::size_t i = 0; i < t.n; ++i) movement_body(t.p[i], t.v[i]);
        }
        for (RawKind& t : k) {
            if ((t.has & kD) == 0) continue;
            for (std::size_t i = 0; i < t.n; ++i) data_body(t.d[i]);
        }
        for (RawKind& t : k) {
            if ((t.has & (kP | kV | kD)) != (kP | kV | kD)) continue;
            for (std::size_t i = 0; i < t.n; ++i) combined_body(t.p[i], t.v[i], t.d[i]);
        }
        for (RawKind& t : k) {
            if ((t.has & kH) == 0) continue;
            for (std::size_t i = 0; i < t.n; ++i) health_body(t.h[i]);
        }
        for (RawKind& t : k) {
            if ((t.has & (kH | kDm)) != (kH | kDm)) continue;
            for (std::size_t i = 0; i < t.n; ++i) damage_body(t.h[i], t.dm[i]);
        }
        for (RawKind& t : k) {
            if ((t.has & (kS | kPl | kH)) != (kS | kPl | kH)) continue;
            for (std::size_t i = 0; i < t.n; ++i) sprite_body(t.s[i], t.pl[i], t.h[i]);
        }
        for (RawKind& t : k) {
            if ((t.has & (kP | kS)) != (kP | kS)) continue;
            for (std::size_t i = 0; i < t.n; ++i) render_body(t.p[i], t.s[i], sink);
        }
    }
    [[nodiscard]] std::uint64_t hash() const {
        Hash h;
        for (const RawKind& t : k) {
            for (const Position& x : t.p) h.add(x.x), h.add(x.y);
            for (const Velocity& x : t.v) h.add(x.dx), h.add(x.dy);
            for (const Data& x : t.d) h.add(x.v);
            for (const Health& x : t.h) h.add(x.hp), h.add(x.max);
            for (const Damage& x : t.dm) h.add(x.amount);
            for (const Sprite& x : t.s) h.add(x.glyph);
            for (const Player& x : t.pl) h.add(x.glyph);
        }
        return h.sum;
    }
};

// ---- tessera ----

tessera::World make_world(std::size_t n) {
    tessera::World world;
    for (std::size_t i = 0; i < n; ++i) {
        switch (kind_of(i)) {
            case player:
                world.spawn(position_of(i), velocity_of(i), data_of(i), health_of(i), damage_of(i),
                            Sprite{'m'}, Player{'@'});
                break;
            case monster:
                world.spawn(position_of(i), velocity_of(i), data_of(i), health_of(i), damage_of(i),
                            Sprite{'m'});
                break;
            case npc:
                world.spawn(position_of(i), velocity_of(i), data_of(i), health_of(i), Sprite{'m'});
                break;
            case prop: world.spawn(position_of(i), Sprite{'m'}); break;
            case particle: world.spawn(position_of(i), velocity_of(i)); break;
            default: world.spawn(position_of(i), data_of(i)); break;
        }
    }
    return world;
}

std::uint64_t world_hash(tessera::World& world) {
    Hash h;
    world.each([&](const Position& x) { h.add(x.x), h.add(x.y); });
    world.each([&](const Velocity& x) { h.add(x.dx), h.add(x.dy); });
    world.each([&](const Data& x) { h.add(x.v); });
    world.each([&](const Health& x) { h.add(x.hp), h.add(x.max); });
    world.each([&](const Damage& x) { h.add(x.amount); });
    world.each([&](const Sprite& x) { h.add(x.glyph); });
    world.each([&](const Player& x) { h.add(x.glyph); });
    return h.sum;
}

/// The raw world's hash and sink after one frame over `n` entities.
std::pair<std::uint64_t, FrameSink> expected_after_one_frame(std::size_t n) {
    RawWorld raw(n);
    FrameSink sink;
    raw.frame(sink);
    return {raw.hash(), sink};
}

bool same(const FrameSink& a, const FrameSink& b) {
    return a.count == b.count && a.hash == b.hash;
}

void game_frame_raw(benchmark::State& state, std::size_t n) {
    RawWorld raw(n);
    FrameSink sink;
    raw.frame(sink);
    const auto [hash, first] = expected_after_one_frame(n);
    if (raw.hash() != hash || !same(sink, first)) {
        state.SkipWithError("game_frame/raw: wrong values after one frame");
        return;
    }
    for (auto _ : state) {
        raw.frame(sink);
        benchmark::DoNotOptimize(sink);
        benchmark::ClobberMemory();
    }
    set_items(state, n);
}

void game_frame_tessera(benchmark::State& state, std::size_t n) {
    tessera::World world = make_world(n);
    FrameSink sink;
    auto movement = world.query<Position&, const Velocity&>();
    auto data = world.query<Data&>();
    auto combined = world.query<const Position&, Velocity&, Data&>();
    auto health = world.query<Health&>();
    auto damage = world.query<Health&, const Damage&>();
    auto sprite = world.query<Sprite&, const Player&, const Health&>();
    auto render = world.query<const Position&, const Sprite&>();
    auto frame = [&] {
        // Lambdas, as users write them: a direct call of the body, as in the raw loops.
        movement.each([](Position& p, const Velocity& v) { movement_body(p, v); });
        data.each([](Data& d) { data_body(d); });
        combined.each([](const Position& p, Velocity& v, Data& d) { combined_body(p, v, d); });
        health.each([](Health& h) { health_body(h); });
        damage.each([](Health& h, const Damage& d) { damage_body(h, d); });
        sprite.each([](Sprite& s, const Player& p, const Health& h) { sprite_body(s, p, h); });
        render.each([&](const Position& p, const Sprite& s) { render_body(p, s, sink); });
    };
    frame();
    const auto [hash, first] = expected_after_one_frame(n);
    if (world_hash(world) != hash || !same(sink, first)) {
        state.SkipWithError("game_frame/tessera: wrong values after one frame");
        return;
    }
    for (auto _ : state) {
        frame();
        benchmark::DoNotOptimize(sink);
        benchmark::ClobberMemory();
    }
    set_items(state, n);
}

void game_frame_schedule(benchmark::State& state, std::size_t n) {
    tessera::World world = make_world(n);
    FrameSink sink;
    tessera::Schedule schedule(1);
    schedule.add("movement", [](tessera::View<Position&, const Velocity&> q) {
        q.each([](Position& p, const Velocity& v) { movement_body(p, v); });
    });
    schedule.add("data", [](tessera::View<Data&> q) { q.each([](Data& d) { data_body(d); }); });
    schedule.add("combined", [](tessera::View<const Position&, Velocity&, Data&> q) {
        q.each([](const Position& p, Velocity& v, Data& d) { combined_body(p, v, d); });
    });
    schedule.add("health",
                 [](tessera::View<Health&> q) { q.each([](Health& h) { health_body(h); }); });
    schedule.add("damage", [](tessera::View<Health&, const Damage&> q) {
        q.each([](Health& h, const Damage& d) { damage_body(h, d); });
    });
    schedule.add("sprite", [](tessera::View<Sprite&, const Player&, const Health&> q) {
        q.each([](Sprite& s, const Player& p, const Health& h) { sprite_body(s, p, h); });
    });
    schedule.add("render", [&sink](tessera::View<const Position&, const Sprite&> q) {
        q.each([&](const Position& p, const Sprite& s) { render_body(p, s, sink); });
    });
    schedule.run(world, kDt);
    const auto [hash, first] = expected_after_one_frame(n);
    if (world_hash(world) != hash || !same(sink, first)) {
        state.SkipWithError("game_frame/tessera_schedule: wrong values after one frame");
        return;
    }
    for (auto _ : state) {
        schedule.run(world, kDt);
        benchmark::DoNotOptimize(sink);
        benchmark::ClobberMemory();
    }
    set_items(state, n);
}

/// Registers the three variants of `scenario` at `n` entities (0: the sweep's count, else N).
void register_game_frame(const std::string& scenario, std::size_t n) {
    auto count = [n] { return n != 0 ? n : entity_count(kN); };
    auto add = [&](const char* variant, void (*fn)(benchmark::State&, std::size_t)) {
        benchmark::RegisterBenchmark((scenario + "/" + variant).c_str(), [fn, count](
                                                                             benchmark::State& s) {
            fn(s, count());
        })->Apply(steady);
    };
    add("raw", game_frame_raw);
    add("tessera", game_frame_tessera);
    add("tessera_schedule", game_frame_schedule);
}

[[maybe_unused]] const bool registered = [] {
    register_game_frame("game_frame", 0);
    register_game_frame("game_frame_256", 256);
    register_game_frame("game_frame_1", 1);
    return true;
}();

}  // namespace
}  // namespace tessera_bench

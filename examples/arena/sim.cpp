// arena: the battle simulation. See main.cpp for what it shows; the systems and their phases:
//
//   pre_update   clock          ResMut<Time>                      the frame counter
//                respawn        Res<Time> ResMut<Rng, Tally, RespawnQueue> Commands  (after clock)
//                stun_recover   World& declared writes<Stunned>   counts stuns down, switches off
//                index          View<..., const Stunned&> ResMut<Spatial>   (after stun_recover)
//   update       acquire        View<Position, Team, Unit, Without<Hunts>> Res<Spatial> Commands
//                steer          View<Velocity&, ...> par_each     chase / march / keep apart
//                attack         View<Weapon&, WorldTransform, ChildOf targets> EventWriter<Damage>
//                move           View<Position&, const Velocity&> par_each  (after acquire, steer)
//                sync_local     View<const Position&, LocalTransform&> par_each  (after move)
//   post_update  damage         World& (exclusive) EventReader<Damage> Commands (deaths deferred)
//                propagate      World& (exclusive) ts::propagate_transforms
//                census         View<const Health&, const Team&> ResMut<Census>
//
// In pre_update {clock -> respawn} runs beside {stun_recover -> index}; in update acquire, steer
// and attack run side by side, then move, then sync_local (beside attack when it is still
// running). Everything random is a hash of (seed, frame, entity) or, in the one sequential
// system that draws (respawn), the seeded Rng resource, so a run is bit-identical on any number
// of workers.
#include "sim.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace arena {

namespace {

constexpr float max_speed = 30.0f;           // arena units per second
constexpr float separation = 1.5f;           // units closer than this push apart
constexpr std::uint32_t acquire_every = 4;   // a unit without a target looks every 4 frames
constexpr std::uint32_t respawn_delay = 90;  // frames
constexpr std::int32_t spawn_daze = 15;      // frames a fresh unit is stunned
constexpr std::int32_t stun_frames = 20;
constexpr std::uint64_t stun_chance = 4;  // percent of hits that stun

std::uint64_t splitmix(std::uint64_t x) noexcept {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/// A deterministic hash of (seed, a, b, c): random numbers without shared state.
std::uint64_t noise(std::uint64_t seed, std::uint64_t a, std::uint64_t b = 0,
                    std::uint64_t c = 0) noexcept {
    return splitmix(splitmix(splitmix(seed ^ a) ^ b) ^ c);
}

float unit_float(std::uint64_t bits) noexcept {
    return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
}

struct UnitSpawn {
    Position position;
    Unit unit;
    Weapon weapon;
    ts::LocalTransform muzzle;  ///< the weapon's offset from its unit
};

/// A unit of `team` with stats drawn from `draw()` (uniform [0, 1) floats), placed in its
/// team's band [x0, x1) of the arena.
template <class Draw>
UnitSpawn make_unit(std::uint8_t team, const Bounds& b, float x0, float x1, Draw&& draw) {
    UnitSpawn s;
    const float fx = x0 + (x1 - x0) * draw();
    s.position = {team == 0 ? fx * b.width : (1.0f - fx) * b.width, draw() * b.height};
    const float range = 4.0f + 4.0f * draw();
    s.unit = {max_speed * (0.6f + 0.4f * draw()), 24.0f + 16.0f * draw(), range * 0.8f};
    const auto cooldown = static_cast<std::int32_t>(8 + 16 * draw());
    s.weapon = {static_cast<std::int32_t>(6 + 10 * draw()), range, cooldown,
                static_cast<std::int32_t>(static_cast<float>(cooldown) * draw()), 0};
    s.muzzle.matrix[3] = glm::vec4(team == 0 ? 0.5f : -0.5f, 0.0f, 0.25f, 1.0f);
    return s;
}

}  // namespace

std::uint64_t Rng::next() noexcept {
    state += 0x9E3779B97F4A7C15ull;
    std::uint64_t x = state;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

float Rng::uniform() noexcept {
    return unit_float(next());
}

void Grid::resize(float side, float cell_size) {
    cell = cell_size;
    w = std::max(1, static_cast<int>(std::ceil(side / cell)));
    h = w;
}

void Grid::build(const std::vector<Item>& units) {
    const std::size_t cells = static_cast<std::size_t>(w) * static_cast<std::size_t>(h);
    start.assign(cells + 1, 0);
    for (const Item& u : units) ++start[index(cx(u.x), cy(u.y)) + 1];
    for (std::size_t c = 0; c < cells; ++c) start[c + 1] += start[c];
    items.resize(units.size());
    fill.assign(start.begin(), start.end() - 1);
    for (const Item& u : units) items[fill[index(cx(u.x), cy(u.y))]++] = u;
}

std::size_t SystemTimes::add(std::string name, ts::Phase phase) {
    names_.push_back(std::move(name));
    phases_.push_back(phase);
    return names_.size() - 1;
}

void SystemTimes::take(std::vector<std::uint64_t>& out) {
    out.resize(names_.size());
    for (std::size_t i = 0; i < names_.size(); ++i) {
        out[i] = slots_[i].ns;
        slots_[i].ns = 0;
    }
}

Battle::Battle(const Config& config, int workers) : workers_(workers), arena_(workers) {
    populate(config);
    build_schedule();
}

Battle::~Battle() = default;

std::uint64_t Battle::spawned() const {
    return initial_ + 2 * world_.resource<Tally>().respawned;
}

void Battle::populate(const Config& config) {
    // The arena grows with the army: about ten square units per unit.
    const float side = std::max(64.0f, std::sqrt(static_cast<float>(config.units) * 10.0f));
    const Bounds bounds{side, side};
    world_.insert_resource(Time{});
    world_.insert_resource(Rng{config.seed, config.seed});
    world_.insert_resource(bounds);
    world_.insert_resource(Tally{});
    world_.insert_resource(Targeting{});
    world_.insert_resource(RespawnQueue{});
    world_.insert_resource(Census{});
    Spatial spatial;
    for (Grid& g : spatial.grid) g.resize(side, 8.0f);
    world_.insert_resource(std::move(spatial));

    // Units in one batch (one table, storage grown once), then their weapons, then the
    // hierarchy. Every unit starts stunned for a few frames, a staggered start.
    const std::size_t n = config.units;
    std::vector<UnitSpawn> plan(n);
    for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t k = 0;
        plan[i] = make_unit(static_cast<std::uint8_t>(i % 2), bounds, 0.1f, 0.4f,
                            [&] { return unit_float(noise(config.seed, 0x5eed, i, k++)); });
    }
    const std::span<const ts::Entity> made =
        world_.spawn_many(n, [&](std::size_t i, Position& p, Velocity&, Health& h, Team& t, Unit& u,
                                 Stunned& s, ts::LocalTransform& local, ts::WorldTransform&) {
            p = plan[i].position;
            h = {100, 100};
            t = {static_cast<std::uint8_t>(i % 2)};
            u = plan[i].unit;
            s = {1 + static_cast<std::int32_t>(noise(config.seed, 0xda2e, i) % spawn_daze)};
            local.matrix[3] = glm::vec4(p.x, p.y, 0.0f, 1.0f);
        });
    const std::vector<ts::Entity> units(made.begin(), made.end());
    const std::span<const ts::Entity> arms = world_.spawn_many(
        n, [&](std::size_t i, Weapon& w, ts::LocalTransform& local, ts::WorldTransform&) {
            w = plan[i].weapon;
            local = plan[i].muzzle;
        });
    const std::vector<ts::Entity> weapons(arms.begin(), arms.end());
    for (std::size_t i = 0; i < n; ++i) world_.relate(weapons[i], ts::ChildOf{}, units[i]);
    initial_ = 2 * n;

    // The kill counter: the one observer. A unit's Health goes when it dies (the weapon goes
    // with it, a cascade of ChildOf), so count the death and queue the respawn here.
    kill_counter_ = world_.on_remove<Health>([](ts::World& w, ts::Entity e, Health&) {
        const std::uint8_t team = w.get<Team>(e).id;
        ++w.resource<Tally>().deaths[team];
        w.resource<RespawnQueue>().entries.push_back(
            {w.resource<Time>().frame + respawn_delay, team});
    });
}

// The battle's systems come in two modules (module.hpp), imported in this order, so the
// schedule is the one a single list of systems made: the upkeep of the pre_update phase, then
// the fighting of update and post_update. A module is default-constructed: it finds the
// timing slots in the world (the Timing resource).

void Upkeep::build(ts::World& world, ts::Schedule& schedule) {
    SystemTimes* const times = world.resource<Timing>().times;
    using ts::Phase;

    // ----- pre_update -----
    std::size_t slot = times->add("clock", Phase::pre_update);
    schedule
        .add("clock",
             [times, slot](ts::ResMut<Time> time) {
                 const Stopwatch sw(times->slot(slot));
                 ++time->frame;
             })
        .phase(Phase::pre_update);

    slot = times->add("respawn", Phase::pre_update);
    schedule
        .add("respawn",
             [times, slot](ts::Res<Time> time, ts::Res<Bounds> bounds, ts::ResMut<Rng> rng,
                           ts::ResMut<RespawnQueue> queue, ts::ResMut<Tally> tally,
                           ts::Commands cmds) {
                 const Stopwatch sw(times->slot(slot));
                 auto& q = queue->entries;
                 while (queue->head < q.size() && q[queue->head].due <= time->frame) {
                     const std::uint8_t team = q[queue->head++].team;
                     const UnitSpawn s =
                         make_unit(team, *bounds, 0.0f, 0.1f, [&] { return rng->uniform(); });
                     ts::LocalTransform local;
                     local.matrix[3] = glm::vec4(s.position.x, s.position.y, 0.0f, 1.0f);
                     // Placeholders: the weapon is related to a unit that exists only once the
                     // sync point applies the buffer.
                     const ts::Entity unit =
                         cmds.spawn(s.position, Velocity{}, Health{100, 100}, Team{team}, s.unit,
                                    Stunned{spawn_daze}, local, ts::WorldTransform{});
                     const ts::Entity weapon = cmds.spawn(s.weapon, s.muzzle, ts::WorldTransform{});
                     cmds.relate(weapon, ts::ChildOf{}, unit);
                     ++tally->respawned;
                 }
                 if (queue->head > 4096 && queue->head * 2 > q.size()) {
                     q.erase(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(queue->head));
                     queue->head = 0;
                 }
             })
        .phase(Phase::pre_update);

    // A World& system with declared access: it runs beside the systems that don't touch
    // Stunned (clock, respawn). Switching a component on or off is not a structural change.
    slot = times->add("stun_recover", Phase::pre_update);
    schedule
        .add("stun_recover",
             [times, slot](ts::World& w, ts::View<ts::Entity, Stunned&> stunned) {
                 const Stopwatch sw(times->slot(slot));
                 // `each` visits enabled rows only: the units that are stunned now.
                 stunned.each([&](ts::Entity e, Stunned& s) {
                     if (--s.frames <= 0) {
                         s.frames = 0;
                         w.enable<Stunned>(e, false);
                     }
                 });
             })
        .writes<Stunned>()
        .phase(Phase::pre_update);

    slot = times->add("index", Phase::pre_update);
    schedule
        .add("index",
             [times, slot](ts::View<ts::Entity, const Position&, const Team&, const Stunned&,
                                    const ts::Targets<Hunts>*>
                               units,
                           ts::ResMut<Spatial> spatial) {
                 const Stopwatch sw(times->slot(slot));
                 Spatial& sp = *spatial;
                 ++sp.build;
                 for (std::vector<Item>& m : sp.members) m.clear();
                 // Chunks see every row and the enable flags (each would skip the unstunned).
                 units.each_chunk(
                     [&](ts::Chunk& chunk, auto ents, auto pos, auto team, auto, auto hunts) {
                         const std::span<const std::uint8_t> stunned = chunk.enabled<Stunned>();
                         for (std::size_t r = 0; r < ents.size(); ++r) {
                             const std::uint32_t i = ents[r].index;
                             if (i >= sp.units.size()) {
                                 sp.units.resize(std::max<std::size_t>(i + 1, sp.units.size() * 2));
                             }
                             Spatial::Entry& u = sp.units[i];
                             u.build = sp.build;
                             u.generation = ents[r].generation;
                             u.x = pos[r].x;
                             u.y = pos[r].y;
                             u.target = hunts.empty() ? ts::Entity::null() : hunts[r].front();
                             u.team = team[r].id;
                             u.stunned = stunned[r];
                             sp.members[team[r].id].push_back({pos[r].x, pos[r].y, i});
                         }
                     });
                 for (std::size_t t = 0; t < 2; ++t) {
                     sp.grid[t].build(sp.members[t]);
                 }
             })
        .phase(Phase::pre_update);
}

void Combat::build(ts::World& world, ts::Schedule& schedule) {
    SystemTimes* const times = world.resource<Timing>().times;
    using ts::Phase;
    std::size_t slot = 0;

    // ----- update -----
    slot = times->add("acquire", Phase::update);
    schedule.add(
        "acquire",
        [times, slot](
            ts::View<ts::Entity, const Position&, const Team&, const Unit&, ts::Without<Hunts>>
                hunters,
            ts::Res<Spatial> spatial, ts::Res<Time> time, ts::ResMut<Targeting> targeting,
            ts::Commands cmds) {
            const Stopwatch sw(times->slot(slot));
            const Spatial& sp = *spatial;
            const std::uint32_t frame = time->frame;
            hunters.each([&](ts::Entity e, const Position& p, const Team& t, const Unit& u) {
                if ((e.index + frame) % acquire_every != 0) return;  // staggered
                const Spatial::Entry* self = sp.find(e);
                if (self != nullptr && self->stunned != 0) return;
                const Grid& enemies = sp.grid[t.id ^ 1u];
                const int cx = enemies.cx(p.x);
                const int cy = enemies.cy(p.y);
                const int rings = static_cast<int>(std::ceil(u.sight / enemies.cell));
                float best = u.sight * u.sight;
                std::uint32_t found = std::numeric_limits<std::uint32_t>::max();
                // Ring by ring outwards; a cell in ring r is at least (r - 1) cells away.
                for (int r = 0; r <= rings; ++r) {
                    const float near = static_cast<float>(std::max(0, r - 1)) * enemies.cell;
                    if (found != std::numeric_limits<std::uint32_t>::max() && near * near > best)
                        break;
                    for (int y = cy - r; y <= cy + r; ++y) {
                        if (y < 0 || y >= enemies.h) continue;
                        const bool edge = y == cy - r || y == cy + r;
                        for (int x = cx - r; x <= cx + r; x += edge ? 1 : 2 * r) {
                            if (x >= 0 && x < enemies.w) {
                                for (const Item& it : enemies.at(x, y)) {
                                    const float dx = it.x - p.x;
                                    const float dy = it.y - p.y;
                                    const float d2 = dx * dx + dy * dy;
                                    if (d2 < best || (d2 == best && it.index < found)) {
                                        best = d2;
                                        found = it.index;
                                    }
                                }
                            }
                            if (r == 0) break;
                        }
                    }
                }
                if (found != std::numeric_limits<std::uint32_t>::max()) {
                    cmds.relate(e, Hunts{frame}, ts::Entity{found, sp.units[found].generation});
                    ++targeting->acquired;
                }
            });
        });

    slot = times->add("steer", Phase::update);
    schedule.add("steer", [times, slot](
                              ts::View<ts::Entity, const Position&, Velocity&, const Team&,
                                       const Unit&, const ts::Targets<Hunts>*>
                                  units,
                              ts::Res<Spatial> spatial, ts::Res<Bounds> bounds, ts::Res<Rng> rng) {
        const Stopwatch sw(times->slot(slot));
        const Spatial& sp = *spatial;
        const Bounds b = *bounds;
        const std::uint64_t seed = rng->seed;
        units.par_each([&](ts::Entity e, const Position& p, Velocity& v, const Team& t,
                           const Unit& u, const ts::Targets<Hunts>* hunts) {
            const Spatial::Entry* self = sp.find(e);
            if (self != nullptr && self->stunned != 0) {
                v = {0, 0};
                return;
            }
            float gx = 0;
            float gy = 0;
            float speed = u.speed;
            const Spatial::Entry* prey = hunts != nullptr ? sp.find(hunts->front()) : nullptr;
            if (prey != nullptr) {
                gx = prey->x - p.x;
                gy = prey->y - p.y;
                // Close in to the reach, then hold (and shoot).
                speed = gx * gx + gy * gy > u.reach * u.reach ? u.speed : 0.0f;
            } else {
                // March on the far side, each unit towards its own point there.
                const float lane = unit_float(noise(seed, 0x1a9e, e.index, e.generation));
                gx = (t.id == 0 ? 0.95f * b.width : 0.05f * b.width) - p.x;
                gy = lane * b.height - p.y;
            }
            const float len = std::sqrt(gx * gx + gy * gy);
            float vx = len > 1e-4f ? gx / len * speed : 0.0f;
            float vy = len > 1e-4f ? gy / len * speed : 0.0f;
            // Keep apart from allies closer than separation: the cells that radius touches
            // (usually one, at most four).
            const Grid& allies = sp.grid[t.id];
            float px = 0;
            float py = 0;
            const int y1 = allies.cy(p.y + separation);
            const int x1 = allies.cx(p.x + separation);
            for (int y = allies.cy(p.y - separation); y <= y1; ++y) {
                for (int x = allies.cx(p.x - separation); x <= x1; ++x) {
                    for (const Item& it : allies.at(x, y)) {
                        const float dx = p.x - it.x;
                        const float dy = p.y - it.y;
                        const float d2 = dx * dx + dy * dy;
                        if (it.index == e.index || d2 >= separation * separation || d2 <= 1e-8f) {
                            continue;
                        }
                        const float w = (separation - std::sqrt(d2)) / separation;
                        px += dx * w;
                        py += dy * w;
                    }
                }
            }
            v = {vx + px * u.speed * 0.5f, vy + py * u.speed * 0.5f};
        });
    });

    slot = times->add("attack", Phase::update);
    schedule.add("attack", [times, slot](ts::View<ts::Entity, Weapon&, const ts::WorldTransform&,
                                                  const ts::Targets<ts::ChildOf>&>
                                             weapons,
                                         ts::Res<Spatial> spatial, ts::Res<Time> time,
                                         ts::Res<Rng> rng, ts::EventWriter<Damage> hits,
                                         ts::ResMut<Tally> tally, ts::Commands cmds) {
        const Stopwatch sw(times->slot(slot));
        const Spatial& sp = *spatial;
        const std::uint32_t frame = time->frame;
        const std::uint64_t seed = rng->seed;
        weapons.each([&](ts::Entity self, Weapon& w, const ts::WorldTransform& at,
                         const ts::Targets<ts::ChildOf>& owner) {
            if (w.ready_in > 0) --w.ready_in;
            const Spatial::Entry* unit = sp.find(owner.front());
            if (unit == nullptr || unit->stunned != 0) return;
            const Spatial::Entry* prey = sp.find(unit->target);
            if (prey == nullptr) return;
            const ts::Entity target = unit->target;
            const float dx = prey->x - at.matrix[3].x;
            const float dy = prey->y - at.matrix[3].y;
            const float d2 = dx * dx + dy * dy;
            if (d2 > w.range * w.range) {
                // Lost it: give up when it is far out of sight, and look again.
                if (d2 > 4.0f * 48.0f * 48.0f) {
                    cmds.unrelate<Hunts>(owner.front());
                    ++tally->lost;
                }
                return;
            }
            if (w.ready_in > 0) return;
            const std::uint64_t roll = noise(seed, 0xa77a, self.index, frame);
            const std::int32_t stun = roll % 100 < stun_chance ? stun_frames : 0;
            hits.send(Damage{target, self, w.damage, stun});
            w.ready_in = w.cooldown;
            ++w.shots;
            ++tally->shots;
        });
    });

    slot = times->add("move", Phase::update);
    schedule.add("move", [times, slot](ts::View<Position&, const Velocity&> bodies,
                                       ts::Res<Time> time, ts::Res<Bounds> bounds) {
        const Stopwatch sw(times->slot(slot));
        const float dt = time->dt;
        const float w = bounds->width;
        const float h = bounds->height;
        bodies.par_each([&](Position& p, const Velocity& v) {
            p.x = std::clamp(p.x + v.dx * dt, 0.0f, w - 0.001f);
            p.y = std::clamp(p.y + v.dy * dt, 0.0f, h - 0.001f);
        });
    });

    slot = times->add("sync_local", Phase::update);
    schedule.add("sync_local", [times, slot](ts::View<const Position&, ts::LocalTransform&> q) {
        const Stopwatch sw(times->slot(slot));
        q.par_each([](const Position& p, ts::LocalTransform& local) {
            local.matrix[3] = glm::vec4(p.x, p.y, 0.0f, 1.0f);
        });
    });

    // ----- post_update -----
    slot = times->add("damage", Phase::post_update);
    schedule
        .add("damage",
             [times, slot](ts::World& w, ts::EventReader<Damage> hits, ts::Commands cmds) {
                 const Stopwatch sw(times->slot(slot));
                 Tally& tally = w.resource<Tally>();
                 for (const Damage& d : hits.read()) {
                     ++tally.damage_events;
                     if (!w.is_alive(d.target)) continue;
                     Health& h = w.get_mut<Health>(d.target);
                     if (h.hp <= 0) continue;  // already dying this frame
                     h.hp -= d.amount;
                     if (h.hp <= 0) {
                         cmds.despawn(d.target);  // deferred to the sync point
                     } else if (d.stun > 0) {
                         Stunned& s = w.get_mut<Stunned>(d.target);
                         s.frames = std::max(s.frames, d.stun);
                         w.enable<Stunned>(d.target, true);
                         ++tally.stuns;
                     }
                 }
             })
        .phase(Phase::post_update);

    slot = times->add("propagate", Phase::post_update);
    schedule
        .add("propagate",
             [times, slot](ts::World& w) {
                 const Stopwatch sw(times->slot(slot));
                 ts::propagate_transforms(w);
             })
        .phase(Phase::post_update);

    slot = times->add("census", Phase::post_update);
    schedule
        .add("census",
             [times, slot](ts::View<const Health&, const Team&> units, ts::ResMut<Census> census) {
                 const Stopwatch sw(times->slot(slot));
                 Census c;
                 units.each([&](const Health& h, const Team& t) {
                     if (h.hp <= 0) return;  // dying: despawned at this phase's sync point
                     ++c.alive[t.id];
                     c.hp[t.id] += h.hp;
                 });
                 *census = c;
             })
        .phase(Phase::post_update);
}

void Battle::build_schedule() {
    world_.insert_resource(Timing{&times_});
    world_.import <Upkeep>(schedule_);
    world_.import <Combat>(schedule_);
}

void Battle::step() {
    schedule_.run(world_, arena_);
    skipped_ += schedule_.skipped_commands();
    times_.take(frame_ns_);
}

}  // namespace arena

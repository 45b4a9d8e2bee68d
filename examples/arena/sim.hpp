// arena: the battle simulation (components, resources, systems). main.cpp is the command line.
#pragma once

#include <tessera/tessera.hpp>
#include <tessera/transform.hpp>

#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ts = tessera;

namespace arena {

// ----- components -------------------------------------------------------------------------

struct Position {
    float x = 0;
    float y = 0;
};
struct Velocity {
    float dx = 0;
    float dy = 0;
};
struct Health {
    std::int32_t hp = 0;
    std::int32_t max = 0;
};
/// 0 = red ('R'), 1 = blue ('B').
struct Team {
    std::uint8_t id = 0;
};
/// A unit's own stats (the weapon is a child entity).
struct Unit {
    float speed = 0;  ///< arena units per second
    float sight = 0;  ///< how far it looks for an enemy to hunt
    float reach = 0;  ///< the distance it closes to before it stops and shoots
};
/// On a weapon entity, a `ChildOf` its unit, with a `LocalTransform` offset from the unit.
struct Weapon {
    std::int32_t damage = 0;
    float range = 0;
    std::int32_t cooldown = 0;  ///< frames between shots
    std::int32_t ready_in = 0;  ///< frames until the next shot
    std::uint32_t shots = 0;
};
/// Enableable: enabled = the unit is stunned for `frames` more frames (a stunned unit neither
/// moves nor shoots). Every unit has one; it is switched, never added or removed.
struct Stunned {
    std::int32_t frames = 0;
};
/// The custom relation: a unit hunts its target (`frame` = when it locked on).
struct Hunts {
    std::uint32_t frame = 0;
};

// ----- events -----------------------------------------------------------------------------

struct Damage {
    ts::Entity target;
    ts::Entity source;  ///< the weapon
    std::int32_t amount = 0;
    std::int32_t stun = 0;  ///< frames of stun, 0 = none
};

// ----- resources --------------------------------------------------------------------------

struct Time {
    float dt = 1.0f / 30.0f;
    std::uint32_t frame = 0;  ///< the frame being simulated (1 in the first run)
};

/// The seeded random stream for the one system that draws in sequence (respawn). Parallel
/// systems don't draw from it: they hash (seed, frame, entity) with `noise`.
struct Rng {
    std::uint64_t seed = 0;
    std::uint64_t state = 0;
    std::uint64_t next() noexcept;
    float uniform() noexcept;  ///< [0, 1)
};

struct Bounds {
    float width = 0;
    float height = 0;
};

/// Totals kept by the systems and the kill-counter observer.
struct Tally {
    std::array<std::uint64_t, 2> deaths{};  ///< per team of the dead unit
    std::uint64_t respawned = 0;
    std::uint64_t shots = 0;
    std::uint64_t damage_events = 0;
    std::uint64_t stuns = 0;
    std::uint64_t lost = 0;  ///< targets given up (out of sight)
};

/// Targets acquired (its own resource, so `acquire` and `attack` don't conflict over `Tally`).
struct Targeting {
    std::uint64_t acquired = 0;
};

/// Units waiting to respawn (pushed by the kill counter, popped by `respawn`): FIFO by frame.
struct RespawnQueue {
    struct Entry {
        std::uint32_t due = 0;
        std::uint8_t team = 0;
    };
    std::vector<Entry> entries;
    std::size_t head = 0;
};

/// Per-frame census (post_update).
struct Census {
    std::array<std::uint32_t, 2> alive{};
    std::array<std::int64_t, 2> hp{};
};

/// A unit in a grid cell: its position beside its index, so a cell scan streams.
struct Item {
    float x;
    float y;
    std::uint32_t index;
};

/// A uniform grid of one team's units, rebuilt each frame by a counting sort (cells in order,
/// units in table order inside a cell: deterministic).
struct Grid {
    float cell = 8.0f;
    int w = 0;
    int h = 0;
    std::vector<std::uint32_t> start;  ///< w*h+1 prefix sums into `items`
    std::vector<Item> items;           ///< cell by cell
    std::vector<std::uint32_t> fill;   ///< scratch

    void resize(float side, float cell_size);
    void build(const std::vector<Item>& units);
    [[nodiscard]] int cx(float x) const noexcept {
        return std::clamp(static_cast<int>(x / cell), 0, w - 1);
    }
    [[nodiscard]] int cy(float y) const noexcept {
        return std::clamp(static_cast<int>(y / cell), 0, h - 1);
    }
    /// The index of cell (x, y) in `start` (row-major).
    [[nodiscard]] std::size_t index(int x, int y) const noexcept {
        return static_cast<std::size_t>(y) * static_cast<std::size_t>(w) +
               static_cast<std::size_t>(x);
    }
    [[nodiscard]] std::span<const Item> at(int x, int y) const noexcept {
        const std::size_t c = index(x, y);
        return {items.data() + start[c], items.data() + start[c + 1]};
    }
};

/// A snapshot of every unit at the start of the frame, by entity index, plus a grid per team
/// (for finding enemies and keeping apart from allies): the broadphase that the random-access
/// systems (targeting, steering, shooting) read. One record per entity index, so a lookup is
/// one cache line.
struct Spatial {
    struct Entry {
        std::uint32_t build = 0;  ///< valid when equal to `Spatial::build`
        std::uint32_t generation = 0;
        float x = 0;
        float y = 0;
        ts::Entity target;  ///< the unit's Hunts target, or null
        std::uint8_t team = 0;
        std::uint8_t stunned = 0;
    };
    std::uint32_t build = 0;
    std::vector<Entry> units;
    std::array<Grid, 2> grid;                  ///< per team, 8-unit cells
    std::array<std::vector<Item>, 2> members;  ///< scratch: each team's units in table order

    /// The entry of `e` when it was a unit at the last build, else null.
    [[nodiscard]] const Entry* find(ts::Entity e) const noexcept {
        if (e.index >= units.size()) return nullptr;
        const Entry& u = units[e.index];
        return u.build == build && u.generation == e.generation ? &u : nullptr;
    }
};

// ----- the simulation ---------------------------------------------------------------------

struct Config {
    std::size_t units = 100000;
    std::uint32_t frames = 360;
    int workers = 0;  ///< 0 = the machine's hardware concurrency
    std::uint64_t seed = 42;
};

/// Per-system wall time of the current frame. Each system writes only its own slot (padded to
/// a cache line), so systems running in parallel never share one.
class SystemTimes {
public:
    struct alignas(64) Slot {
        std::uint64_t ns = 0;
    };
    std::size_t add(std::string name, ts::Phase phase);
    [[nodiscard]] std::size_t size() const noexcept { return names_.size(); }
    [[nodiscard]] const std::string& name(std::size_t i) const { return names_[i]; }
    [[nodiscard]] ts::Phase phase(std::size_t i) const { return phases_[i]; }
    Slot& slot(std::size_t i) noexcept { return slots_[i]; }
    /// Moves this frame's times (ns) to `out` (one per system) and zeroes the slots.
    void take(std::vector<std::uint64_t>& out);

private:
    std::vector<std::string> names_;
    std::vector<ts::Phase> phases_;
    std::unique_ptr<Slot[]> slots_ = std::make_unique<Slot[]>(64);
};

/// Measures the enclosing scope into a slot.
class Stopwatch {
public:
    explicit Stopwatch(SystemTimes::Slot& slot) noexcept
        : slot_(&slot), start_(std::chrono::steady_clock::now()) {}
    ~Stopwatch() {
        slot_->ns +=
            static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           std::chrono::steady_clock::now() - start_)
                                           .count());
    }
    Stopwatch(const Stopwatch&) = delete;
    Stopwatch& operator=(const Stopwatch&) = delete;

private:
    SystemTimes::Slot* slot_;
    std::chrono::steady_clock::time_point start_;
};

/// The systems' timing slots, for the modules below (a resource: a module is
/// default-constructed and finds what it needs in the world).
struct Timing {
    SystemTimes* times = nullptr;
};

/// The pre_update systems: the clock, respawns, stun recovery and the spatial index.
struct Upkeep {
    static constexpr std::string_view name = "arena.upkeep";
    void build(ts::World& world, ts::Schedule& schedule);
};

/// The update and post_update systems: targets, steering, attacks, movement, damage, the
/// transforms and the census.
struct Combat {
    static constexpr std::string_view name = "arena.combat";
    void build(ts::World& world, ts::Schedule& schedule);
};

/// One battle: a world, its schedule and the engine's task arena.
class Battle {
public:
    Battle(const Config& config, int workers);
    ~Battle();
    Battle(const Battle&) = delete;
    Battle& operator=(const Battle&) = delete;

    /// Runs one frame.
    void step();

    [[nodiscard]] ts::World& world() noexcept { return world_; }
    /// The battle's schedule (for tools: the inspector reads its per-system times).
    [[nodiscard]] ts::Schedule& schedule() noexcept { return schedule_; }
    [[nodiscard]] const SystemTimes& times() const noexcept { return times_; }
    /// This frame's per-system times in ns (index as in `times()`).
    [[nodiscard]] const std::vector<std::uint64_t>& frame_times() const noexcept {
        return frame_ns_;
    }
    /// Entities spawned since the world was made (units and weapons).
    [[nodiscard]] std::uint64_t spawned() const;
    [[nodiscard]] std::uint64_t hash() const { return ts::state_hash(world_); }
    [[nodiscard]] std::size_t stage_count() { return schedule_.stage_count(); }
    [[nodiscard]] int workers() const noexcept { return workers_; }
    /// Commands skipped at sync points so far (their entity had died first).
    [[nodiscard]] std::uint64_t skipped_commands() const noexcept { return skipped_; }

private:
    void populate(const Config& config);
    void build_schedule();

    int workers_;
    ts::World world_;
    ts::Schedule schedule_;
    tbb::task_arena arena_;
    SystemTimes times_;
    std::vector<std::uint64_t> frame_ns_;
    std::uint64_t initial_ = 0;
    std::uint64_t skipped_ = 0;
    ts::Observer kill_counter_;
};

}  // namespace arena

TESSERA_REFLECT(arena::Position, x, y)
TESSERA_REFLECT(arena::Velocity, dx, dy)
TESSERA_REFLECT(arena::Health, hp, max)
TESSERA_REFLECT(arena::Team, id)
TESSERA_REFLECT(arena::Unit, speed, sight, reach)
TESSERA_REFLECT(arena::Weapon, damage, range, cooldown, ready_in, shots)
TESSERA_REFLECT(arena::Stunned, frames)
TESSERA_REFLECT(arena::Hunts, frame)

template <>
struct tessera::component_traits<arena::Stunned> {
    static constexpr bool enableable = true;
};

// Schedule internals: a system's entry, a phase's graph, and Schedule::Impl. Building the phases'
// graphs is in schedule_build.cpp, running them (inline or on oneTBB, sync points) in
// schedule_run.cpp, the public members of Schedule and SystemConfig in schedule.cpp, traces of
// frames (trace_to, and the frame entry point that records them) in schedule_trace.cpp.
#pragma once

#include <tessera/error.hpp>
#include <tessera/schedule.hpp>

#include "schedule_trace.hpp"
#include "utf8.hpp"

#include <tbb/task_arena.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {
namespace detail {

constexpr std::size_t phase_count = 4;  // start, pre_update, update, post_update
/// A phase that chose one way (inline or parallel) tries the other after this many runs; each
/// try that confirms the choice doubles the wait, up to `probe_period_max` runs.
constexpr std::uint32_t probe_period = 4;
constexpr std::uint32_t probe_period_max = 256;
constexpr std::size_t history_size = 128;  // runs kept per system for Schedule::stats

struct SystemEntry {
    std::string name;
    std::unique_ptr<detail::SystemBase> system;
    Phase phase = Phase::update;
    int order = 0;
    std::vector<std::string> before;
    std::vector<std::string> after;
    std::vector<ComponentId> declared_reads;
    std::vector<ComponentId> declared_writes;
    bool declared = false;
    bool enabled = true;
    bool active = false;           ///< runs in this frame (enabled and in the frame's group)
    std::string group;             ///< "" is the default group
    World* created_on = nullptr;   ///< on_create ran on this world
    World* prepared_on = nullptr;  ///< its parameters were last prepared for this world
    std::uint64_t last_tick = 0;   ///< the tick of its previous run
    CommandBuffer commands;
    std::uint64_t duration_ns = 0;  ///< its last run, when measured
    std::uint64_t runs = 0;         ///< every measured run (see `history`)
    std::size_t position = 0;       ///< in its phase's deterministic order
    bool takes_world = false;       ///< it has a World& parameter (exclusive or declared)
    /// A World& parameter with declared access: it shares the world with the systems running
    /// beside it, so its world reads and writes carry its tick through detail::thread_system.
    bool shared_world = false;

    /// The access the schedule uses: deduced, plus what was declared; a `World&` system with
    /// declared access is trusted not to need exclusivity.
    detail::Access access;

    /// The last `history_size` measured run times (ns), a ring; `runs` counts every measured
    /// run. Last, so that the fields a run reads share fewer cache lines.
    std::array<std::uint64_t, history_size> history{};
};

/// What one phase run produced, per position.
struct PhaseRun {
    std::vector<std::uint64_t> ticks;   ///< 0: did not run (disabled)
    std::vector<std::uint8_t> skipped;  ///< after a failure
    std::vector<std::exception_ptr> errors;
    bool had_errors = false;  ///< some entry of `errors` is set (cleared at the next run)
};

/// One phase's graph, and the scratch of its runs (sized once per build: running a phase
/// allocates nothing). Positions index `order` (the deterministic order).
struct PhaseGraph {
    std::vector<SystemEntry*> order;
    std::vector<std::vector<std::uint32_t>> successors;
    std::vector<std::uint32_t> predecessors;
    std::size_t layers = 0;
    PhaseRun run;
    std::unique_ptr<std::atomic<std::uint32_t>[]> remaining;  // parallel runs
    std::unique_ptr<std::atomic<std::uint8_t>[]> skipped;
    std::vector<std::uint32_t> pending;  ///< predecessors inside the segment being started
    std::vector<std::uint64_t> finish;   ///< scratch: measured critical path to each position
    /// Positions in registration order: the order of the sync point.
    std::vector<std::uint32_t> sync_order;
    /// Whether it has a `World&` system that is exclusive (run alone, on the calling thread).
    bool has_exclusive = false;

    // The automatic choice between inline and parallel (Schedule::set_parallel_threshold):
    // smoothed wall times of the phase's recent inline and parallel runs (0: none yet).
    std::uint64_t inline_ns = 0;
    std::uint64_t parallel_ns = 0;
    std::uint32_t since_probe = 0;  ///< runs since the way not chosen was last tried
    std::uint32_t probe_every = probe_period;
    /// Parallel runs measured so far, up to 2: the first (the arena's threads starting, caches
    /// cold) is not taken as the figure, the second replaces it.
    std::uint8_t parallel_samples = 0;
    bool probing = false;         ///< this run tries the way not chosen
    bool probe_first = false;     ///< ... and is the first of the try's two runs
    std::uint8_t probe_runs = 0;  ///< runs of the try still to come after this one
    bool probe_from = false;      ///< ... and parallel was the faster before it
};

/// Throws `system_failed` with `context` and the original's message, the original nested.
[[noreturn]] void throw_system_failed(const std::string& context, const std::exception_ptr& e);

}  // namespace detail

/// The schedule's state: its systems (registration order) and the phases' graphs.
struct Schedule::Impl {
    using SystemEntry = detail::SystemEntry;
    using PhaseGraph = detail::PhaseGraph;
    using PhaseRun = detail::PhaseRun;

    std::vector<std::unique_ptr<SystemEntry>> systems;  // registration order
    bool strict = false;
    bool dirty = true;
    std::vector<std::string> started;  ///< groups whose `start` phase has run
    PhaseGraph phases[detail::phase_count];
    std::size_t skipped = 0;
    std::optional<std::chrono::nanoseconds> threshold;  ///< nullopt: decide from measured times
    bool profiling = false;
    std::size_t workers = 0;                 ///< Schedule(workers); 0: oneTBB's default arena
    std::unique_ptr<tbb::task_arena> arena;  ///< for workers > 1, made on the first run
    detail::ArenaRef arena_ref;              ///< `arena`, as the runs take it
    std::unique_ptr<detail::Trace> trace;    ///< `trace_to` in progress (schedule_trace.cpp)
    /// The trace recording the frame that runs now, else null: `run_one` records into it.
    detail::Trace* tracing = nullptr;

    /// The schedule's own arena (workers > 1; made on first use), else null.
    const detail::ArenaRef* own_arena();

    SystemEntry* find(std::string_view name) const noexcept {
        for (const auto& s : systems) {
            if (s->name == name) return s.get();
        }
        return nullptr;
    }
    SystemEntry& get(std::string_view name, const char* op) const {
        if (SystemEntry* s = find(name)) return *s;
        throw Error(errc::unknown_system,
                    std::string(op) + ": no system named " + detail::quote(name));
    }

    void build();
    void build_phase(std::size_t p);
    void run_phase(std::size_t p, World& w, int workers, const detail::ArenaRef* arena, float dt);
    void prepare(SystemEntry& s, World& w);
    void check_resources(SystemEntry& s, const World& w, const char* op) const;
    void run_one(SystemEntry& s, World& w, std::uint64_t tick, float dt, bool measure);
    /// Whether phase `g` runs in parallel this time (workers > 1), given its active systems.
    bool choose_parallel(PhaseGraph& g, std::size_t active, std::uint64_t work,
                         int workers) noexcept;
    void run_inline(PhaseGraph& g, PhaseRun& r, World& w, float dt, bool measure);
    void run_parallel(PhaseGraph& g, PhaseRun& r, World& w, float dt, int workers,
                      const detail::ArenaRef* arena);
    void run_segment(PhaseGraph& g, PhaseRun& r, World& w, float dt, int workers,
                     const detail::ArenaRef* arena, std::uint32_t first, std::uint32_t last);
    /// The sync point of one system: applies its commands and events (`ok`) or drops them.
    /// Returns what applying them threw (the rest of them dropped), or null.
    std::exception_ptr sync(SystemEntry& s, World& w, bool ok) noexcept;
    /// One frame, traced when a trace is in progress (schedule_trace.cpp).
    void run(World& w, int workers, const detail::ArenaRef* arena, float dt,
             std::string_view group);
    void run_frame(World& w, int workers, const detail::ArenaRef* arena, float dt,
                   std::string_view group);
};

}  // namespace tessera

/// @file schedule.hpp
/// `Schedule`: systems in phases, run in parallel where their access allows, with deterministic
/// sync points. System parameters are in system.hpp.
///
/// **Phases.** `start` runs once, on the first `run`; then every `run` runs `pre_update`,
/// `update`, `post_update`, and ends the frame with `world.update_events()`. `manual` systems
/// run only through `run_system`.
///
/// **Order.** Inside a phase, two systems conflict when one writes a component or resource the
/// other reads or writes, or either is exclusive (`World&`). Conflicting systems run one after
/// the other: by `before`/`after` (transitively), else by `order(n)`, else by registration.
/// The rest run in parallel on oneTBB. The phase's *deterministic order* is the topological
/// order of the `before`/`after` constraints, ties broken by (`order`, registration); it
/// assigns the systems' ticks and is what one worker runs.
///
/// **Sync points.** Each system records commands (`Commands`) and events (`EventWriter`) into
/// its own buffers. At the end of its phase they are applied system by system in registration
/// order (commands with `on_dead::skip`, counted by `skipped_commands()`), so the world after a
/// frame is the same on any number of workers. Events are visible from the next phase on.
///
/// **Change ticks.** Each system run gets its own tick, in the deterministic order; its writes
/// are stamped with it and its `Added`/`Changed` filters see what was written after its previous
/// run, exactly once. After a phase the world's tick is past every tick the phase used.
///
/// **Errors.** `build()`, `run()` and `stage_count()` report `unknown_system` (a `before`/`after`
/// naming no system), `schedule_cycle` and, in a `strict()` schedule, `ambiguous_order`, before
/// anything runs. At the start of a phase a missing `Res`/`ResMut` resource is
/// `missing_resource`, before any of its systems runs. An exception from a system becomes
/// `system_failed` (naming the system, the original nested) thrown from `run` after the phase
/// settles: the other systems' commands are applied, the failed system's are dropped, the
/// systems after it in the phase's graph and every later phase are skipped that frame. An
/// exception while a system's commands are applied at the sync point (an observer's, say) is
/// `system_failed` naming that system too: what was applied before it stands, the rest of that
/// system's commands and events are dropped, the other systems' are applied, and every later
/// phase is skipped that frame. A system that threw is reported before a failed sync.
///
/// **Groups.** A system belongs to one group (`SystemConfig::group`, default ""); `run(world,
/// dt)` runs the default group, `run(world, dt, group)` another, with phases and ordering
/// applying as for a disabled system outside the group.
///
/// **Results.** A system returns `void` or `Status`; a failed `Status` is reported like an
/// exception thrown by the system. Any other return type does not compile.
///
/// **Workers.** `Schedule(1)` runs everything on the calling thread (no task arena, no oneTBB
/// thread); `Schedule(n)` on an arena of n it owns; `Schedule()` on oneTBB's default arena.
#pragma once

#include <tessera/system.hpp>
#include <tessera/world.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera {

namespace detail {
/// What `Schedule::run(world, arena)` needs of a `tbb::task_arena`.
template <class A>
concept task_arena_like = requires(A& a) {
    a.max_concurrency();
    a.is_active();
    a.initialize();
};
/// An engine's task arena with its type erased (`Schedule::run(world, arena)`), so that
/// schedule.hpp declares nothing of oneTBB's: `prepare` initialises it and returns its
/// concurrency, `execute` runs `fn(context)` inside it.
struct ArenaRef {
    void* arena = nullptr;
    int (*prepare)(void* arena) = nullptr;
    void (*execute)(void* arena, void (*fn)(void*), void* context) = nullptr;

    /// Runs `f()` inside the arena.
    template <class F>
    void run(F&& f) const {
        using Fn = std::remove_reference_t<F>;
        execute(
            arena, [](void* c) { (*static_cast<Fn*>(c))(); },
            const_cast<void*>(static_cast<const void*>(std::addressof(f))));
    }
    template <class A>
    static ArenaRef of(A& a) noexcept {
        return {&a,
                [](void* p) {
                    A& x = *static_cast<A*>(p);
                    if (!x.is_active()) x.initialize();
                    return static_cast<int>(x.max_concurrency());
                },
                [](void* p, void (*fn)(void*), void* context) {
                    static_cast<A*>(p)->execute([fn, context] { fn(context); });
                }};
    }
};
}  // namespace detail

/// When a system runs.
enum class Phase : std::uint8_t {
    start,        ///< once, on the first `run`
    pre_update,   ///< every `run`, first
    update,       ///< every `run` (the default)
    post_update,  ///< every `run`, last
    manual,       ///< only through `Schedule::run_system`
};

/// The phase's name as written in code: "start", "pre_update", "update", "post_update" or
/// "manual" (error messages and tools use it).
[[nodiscard]] const char* phase_name(Phase p) noexcept;

class Schedule;

/// What `Schedule::stats` reports about one system: defined in tessera/system_stats.hpp
/// (include it to call `stats`), which brings `<chrono>`.
struct SystemStats;

/// Configures one system of a schedule (returned by `Schedule::add`; calls chain). Valid until
/// the schedule's next `add`/`remove`. Changes take effect at the next build.
class SystemConfig {
public:
    /// Configures system `index` of `schedule` (made by `Schedule::add`).
    SystemConfig(Schedule& schedule, std::size_t index) noexcept
        : schedule_(&schedule), index_(index) {}

    /// The phase the system runs in (default `update`).
    SystemConfig& phase(Phase p);
    /// Priority among systems of its phase that are not ordered otherwise (lower first;
    /// default 0; ties by registration).
    SystemConfig& order(int n);
    /// Runs before / after the system named `name` (in the same or a later / earlier phase).
    SystemConfig& before(std::string_view name);
    /// Runs after the system named `name` (in the same or an earlier phase).
    SystemConfig& after(std::string_view name);
    /// Puts the system in the group named `name`; "" is the default group,
    /// the one `run(world, dt)` runs. `run(world, dt, name)` runs only the group's systems,
    /// phases and ordering still applying (see `Schedule::run`).
    SystemConfig& group(std::string_view name);
    /// Declares (trusted) access: read / write `Ts`. A system taking `World&` with declared
    /// access is no longer exclusive: it runs in parallel with
    /// every system it doesn't conflict with, declared `World&` ones included. While it runs,
    /// the world's tick reads as the system's own on its thread (its writes are stamped with
    /// it) and its queries neither defer the world nor advance its tick; it must touch nothing
    /// but what it declared, and make no structural change (use `Commands`).
    template <class... Ts>
    SystemConfig& reads() {
        const ComponentId ids[] = {component_id<Ts>()...};
        return declare(ids, false);
    }
    /// Declares (trusted) write access to `Ts` (see `reads`).
    template <class... Ts>
    SystemConfig& writes() {
        const ComponentId ids[] = {component_id<Ts>()...};
        return declare(ids, true);
    }
    /// The system's name.
    [[nodiscard]] const std::string& name() const;

private:
    SystemConfig& declare(std::span<const ComponentId> ids, bool write);
    Schedule* schedule_;
    std::size_t index_;
};

/// An ordered set of systems, run over a world frame after frame. Owned by the engine, not by
/// the world; it holds no thread and no reference into a world between runs (beyond the
/// systems' cached queries for the last world it ran on). Not thread-safe: one `run` at a time.
class Schedule {
public:
    /// A schedule on oneTBB's default arena (as many workers as oneTBB gives it).
    Schedule();
    /// A schedule that runs on `workers` threads, so the program needs no `tbb::task_arena`:
    /// 1 runs every system, and the `par_each` loops inside them, on the thread that calls
    /// `run`, with no task arena and no oneTBB worker thread; n > 1 runs on a `tbb::task_arena`
    /// of n the schedule owns (made on its first run); 0 is the default constructor's
    /// behaviour. `run(world, arena)` uses the arena it is given instead. The result is the
    /// same world on any number of workers. @throws Error(invalid_argument) past INT_MAX.
    explicit Schedule(std::size_t workers);
    ~Schedule();
    /// Takes over the other schedule's systems and their state; the moved-from schedule may
    /// then only be destroyed or assigned to.
    Schedule(Schedule&&) noexcept;
    /// Destroys this schedule's systems, then takes over the other's (like the move constructor).
    Schedule& operator=(Schedule&&) noexcept;
    Schedule(const Schedule&) = delete;
    Schedule& operator=(const Schedule&) = delete;

    /// A schedule in which two conflicting systems with no `before`/`after` path between them
    /// and the same `order` are an `ambiguous_order` build error; `workers` as in
    /// `Schedule(workers)`.
    static Schedule strict(std::size_t workers = 0);
    /// The worker count it was made with (0: oneTBB's default arena).
    [[nodiscard]] std::size_t workers() const noexcept;

    /// Adds a function system (a lambda, function or function object) named `name`; its
    /// access is deduced from its parameter types (system.hpp). @throws Error(invalid_argument)
    /// when the name is taken or empty.
    template <class F>
    SystemConfig add(std::string name, F&& fn) {
        using Fn = std::decay_t<F>;
        using S = typename detail::function_system<Fn, detail::callable_args_t<Fn>>::type;
        return add_system(std::move(name), std::make_unique<S>(std::forward<F>(fn)));
    }

    /// Adds a class system `T` constructed from `args`, named after `T`. `T` has `on_update`
    /// taking `(World&, float dt)`, `(World&)` or system parameters; optional
    /// `on_create(World&)` runs before its first update, `on_destroy(World&)` when it is removed
    /// (on the world it was created on, which must still be alive).
    template <class T, class... Args>
    SystemConfig add(Args&&... args);

    /// Runs one frame: `start` (first time only), `pre_update`, `update`, `post_update`, then
    /// `world.update_events()`. Runs on the schedule's workers (`Schedule(workers)`; by default
    /// oneTBB's default arena); `dt` is passed to `float` parameters.
    /// @throws Error (build errors, missing_resource, system_failed: a system threw, or an
    /// observer or command threw while a system's commands were applied at a sync point),
    /// Error(invalid_argument) from the workers of a `par_each` on `world` (nothing runs).
    void run(World& world, float dt = 0.0f);
    /// Runs one frame of the systems in group `group` only (`SystemConfig::group`; "" is the
    /// default group, what `run(world, dt)` runs), with everything `run(world, dt)` does: the
    /// group's `start` systems on the group's first run, its phases in order, sync points and
    /// `world.update_events()`. Ordering constraints keep their meaning: a system outside the
    /// group does not run, and it is not pulled in by a `before`/`after` naming it, but the order
    /// it imposes between two systems of the group (a before x before b) still holds, as for a
    /// disabled system. Systems not run keep their tick, so their `Changed`/`Added` filters see,
    /// at their next run, everything written since their previous one.
    /// @throws Error(unknown_system) when `group` is not "" and no system belongs to it; the
    /// errors of `run(world, dt)`
    void run(World& world, float dt, std::string_view group);
    /// `run` on the engine's `tbb::task_arena` (include `<tbb/task_arena.h>` to make one),
    /// whatever the schedule's worker count: the arena's concurrency is the number of workers
    /// (1 runs every system inline on the calling thread). A template over the arena's type, so
    /// this header declares nothing of oneTBB's.
    template <class Arena>
    requires detail::task_arena_like<Arena>
    void run(World& world, Arena& arena, float dt = 0.0f) {
        const detail::ArenaRef ref = detail::ArenaRef::of(arena);
        run_group(world, &ref, dt, {});
    }
    /// `run(world, dt, group)` on the engine's arena (see `run(world, arena, dt)`).
    template <class Arena>
    requires detail::task_arena_like<Arena>
    void run(World& world, Arena& arena, float dt, std::string_view group) {
        const detail::ArenaRef ref = detail::ArenaRef::of(arena);
        run_group(world, &ref, dt, group);
    }
    /// Runs one system now (any phase, `manual` included), alone, with its sync point, on the
    /// calling thread (its `par_each` loops on the schedule's workers).
    /// @throws Error(unknown_system), Error(system_failed), Error(invalid_argument) from the
    /// workers of a `par_each` on `world`.
    void run_system(std::string_view name, World& world, float dt = 0.0f);

    /// Turns a system on or off (an off system doesn't run and keeps its tick).
    /// @throws Error(unknown_system)
    void enable(std::string_view name, bool on = true);
    /// Whether the system named `name` is on. @throws Error(unknown_system)
    [[nodiscard]] bool is_enabled(std::string_view name) const;
    /// Removes a system (calling a class system's `on_destroy`). @throws Error(unknown_system)
    void remove(std::string_view name);
    /// Whether a system is named `name`.
    [[nodiscard]] bool contains(std::string_view name) const noexcept;
    /// Number of systems.
    [[nodiscard]] std::size_t size() const noexcept;

    /// Validates the systems and builds the phases' graphs (done by `run` when needed).
    void build();
    /// The number of layers of the phases' dependency graphs (start, pre_update, update,
    /// post_update), each system in the earliest layer after everything it must follow.
    [[nodiscard]] std::size_t stage_count();
    /// Commands skipped at the sync points of the last `run` or `run_system` (their entity had
    /// died).
    [[nodiscard]] std::size_t skipped_commands() const noexcept;
    /// Each system's change tick (its previous run's, which its `Added`/`Changed` filters
    /// compare with), in registration order, into `out` (resized: no allocation once it has the
    /// capacity). With `set_system_ticks`, what a rollback (net/rollback.hpp) saves with each
    /// frame, so that a replayed frame's filters see what they saw the first time.
    void system_ticks(std::vector<std::uint64_t>& out) const;
    /// Sets each system's change tick, in registration order, from `ticks` (read by
    /// `system_ticks`). @throws Error(invalid_argument) when `ticks.size() != size()` (nothing
    /// changes then).
    void set_system_ticks(std::span<const std::uint64_t> ticks);

    /// How a phase chooses, with two or more workers, between running its systems in parallel
    /// and inline in its deterministic order (the same world either way). By default
    /// (`std::nullopt`) it decides from measured times: each phase keeps the wall time of its
    /// recent inline runs and of its recent parallel runs (every system run and every phase run
    /// is timed while there are two or more workers) and takes the faster, trying the other way
    /// again after 4 runs of the phase (then less often, up to every 256 runs, while the other
    /// way keeps losing) so that the choice follows the workload; a phase whose
    /// graph leaves nothing to overlap, or whose measured system times say parallel could not
    /// win (its critical path is nearly its total), stays inline. A fixed `threshold` replaces
    /// that: the phase runs in parallel when its systems took at least `threshold` in total the
    /// last time they ran (zero: every phase whose graph allows it). `threshold` is a
    /// `std::chrono::duration` (a template, so this header needs no `<chrono>`), or
    /// `std::nullopt` for the automatic choice.
    template <class Duration>
    requires requires(const Duration& d) {
        d.count();
        Duration::period::num;
    }
    void set_parallel_threshold(const Duration& threshold) noexcept {
        using P = typename Duration::period;
        const long double ns = static_cast<long double>(threshold.count()) * P::num * 1e9L / P::den;
        // Clamped: a duration past 2^63 ns (`nanoseconds::max()`) is "never parallel".
        set_threshold_ns(ns >= 9.2e18L ? std::numeric_limits<std::int64_t>::max()
                         : ns <= 0     ? std::int64_t{0}
                                       : static_cast<std::int64_t>(ns));
    }
    /// Back to the automatic choice (the default).
    void set_parallel_threshold(std::nullopt_t) noexcept;

    /// Turns per-system timing on or off (default off). While on, every system run is timed
    /// (two clock reads, tens of nanoseconds) and `stats` reports the times.
    void set_profiling(bool on) noexcept;
    /// Whether per-system timing is on.
    [[nodiscard]] bool profiling() const noexcept;
    /// One entry per system: those of the phases in run order (start, pre_update, update,
    /// post_update; each in its deterministic order), then the `manual` ones in registration
    /// order. Builds the schedule when needed (@throws its build errors). O(systems x 128).
    [[nodiscard]] std::vector<SystemStats> stats();

    /// Traces the next `frames` runs (`run`, any group; not `run_system`) to `path` as Chrome
    /// trace-event JSON, which chrome://tracing and ui.perfetto.dev open (docs/systems.md): one
    /// complete event per system run, named after the system, on the track (`tid`) of the worker
    /// thread that ran it. The file is written when the last of those frames ends, or, with the
    /// frames traced so far, by a later `trace_to` or the schedule's destructor. Not tracing
    /// costs a branch per system run. @throws Error(invalid_argument) naming `path` when it
    /// can't be opened for writing (and from the last traced `run` when writing fails), or for
    /// 0 frames.
    void trace_to(const std::string& path, std::size_t frames);

    struct Impl;

private:
    friend class SystemConfig;
    SystemConfig add_system(std::string name, std::unique_ptr<detail::SystemBase> system);
    void run_group(World& world, const detail::ArenaRef* arena, float dt, std::string_view group);
    void set_threshold_ns(std::int64_t ns) noexcept;
    std::unique_ptr<Impl> impl_;
};

namespace detail {

template <class T>
concept has_on_create = requires(T& t, World& w) {
    t.on_create(w);
};
template <class T>
concept has_on_destroy = requires(T& t, World& w) {
    t.on_destroy(w);
};

/// A class system: `T` held by value, `on_update` deduced like a function system's parameters.
template <class T, class Args>
class ClassSystem;
template <class T, class... A>
class ClassSystem<T, std::tuple<A...>> : public SystemBase {
public:
    template <class... CArgs>
    explicit ClassSystem(CArgs&&... args)
        : inner_(Call{nullptr}), object_(std::forward<CArgs>(args)...) {
        inner_.fn_.self = &object_;
        access = inner_.access;
        prepare_always = inner_.prepare_always;
        syncs = inner_.syncs;
    }
    void prepare(World& w) override { inner_.prepare(w); }
    void run(const SystemRun& r) override { inner_.run(r); }
    void sync(World& w) override { inner_.sync(w); }
    void drop() noexcept override { inner_.drop(); }
    void create(World& w) override {
        if constexpr (has_on_create<T>) object_.on_create(w);
    }
    void destroy(World& w) override {
        if constexpr (has_on_destroy<T>) object_.on_destroy(w);
    }

private:
    struct Call {
        T* self;
        decltype(auto) operator()(A... a) const { return self->on_update(std::forward<A>(a)...); }
    };
    struct Inner : FunctionSystem<Call, A...> {
        using FunctionSystem<Call, A...>::FunctionSystem;
        using FunctionSystem<Call, A...>::fn_;
    };
    Inner inner_;
    T object_;
};

}  // namespace detail

template <class T, class... Args>
SystemConfig Schedule::add(Args&&... args) {
    using S = detail::ClassSystem<T, detail::callable_args_t<decltype(&T::on_update)>>;
    return add_system(std::string(detail::raw_type_name<T>()),
                      std::make_unique<S>(std::forward<Args>(args)...));
}

}  // namespace tessera

// Schedule: building the phases' graphs, running them (inline or on oneTBB), sync points.
#include <tessera/detail/parallel.hpp>
#include <tessera/error.hpp>
#include <tessera/schedule.hpp>

#include <tbb/task_group.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <sstream>
#include <thread>

namespace tessera {

namespace {

constexpr std::size_t phase_count = 4;  // start, pre_update, update, post_update
constexpr std::chrono::nanoseconds default_threshold{50'000};
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
    World* created_on = nullptr;  ///< on_create ran on this world
    std::uint64_t last_tick = 0;  ///< the tick of its previous run
    CommandBuffer commands;
    std::uint64_t duration_ns = 0;  ///< its last run, when measured
    /// The last `history_size` measured run times (ns), a ring; `runs` counts every measured run.
    std::array<std::uint64_t, history_size> history{};
    std::uint64_t runs = 0;
    std::size_t position = 0;  ///< in its phase's deterministic order
    bool takes_world = false;  ///< it has a World& parameter (exclusive or declared)

    /// The access the schedule uses: deduced, plus what was declared; a `World&` system with
    /// declared access is trusted not to need exclusivity.
    detail::Access access;
};

/// What one phase run produced, per position.
struct PhaseRun {
    std::vector<std::uint64_t> ticks;   ///< 0: did not run (disabled)
    std::vector<std::uint8_t> skipped;  ///< after a failure
    std::vector<std::exception_ptr> errors;
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
};

bool always_present(const World&) noexcept {
    return true;
}

bool contains_id(const std::vector<ComponentId>& v, ComponentId id) {
    return std::find(v.begin(), v.end(), id) != v.end();
}

/// The first datum through which `a` and `b` conflict ("" when they don't); "everything" when
/// one is exclusive.
std::string conflict(const detail::Access& a, const detail::Access& b) {
    if (a.exclusive || b.exclusive) return "the whole world (World&)";
    for (const ComponentId id : a.writes) {
        if (contains_id(b.writes, id) || contains_id(b.reads, id))
            return std::string(component_info(id).name);
    }
    for (const ComponentId id : b.writes) {
        if (contains_id(a.reads, id)) return std::string(component_info(id).name);
    }
    for (const detail::ResourceAccess& ra : a.resources) {
        for (const detail::ResourceAccess& rb : b.resources) {
            if (ra.type == rb.type && (ra.write || rb.write))
                return "resource " + std::string(ra.name);
        }
    }
    return {};
}

/// Throws `system_failed` with `context` and the original's message, the original nested.
[[noreturn]] void throw_system_failed(const std::string& context, const std::exception_ptr& e) {
    std::string what;
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        what = x.what();
    } catch (...) {
        what = "an exception that is not a std::exception";
    }
    try {
        std::rethrow_exception(e);
    } catch (...) {
        std::throw_with_nested(Error(errc::system_failed, context + ": " + what));
    }
}

}  // namespace

const char* phase_name(Phase p) noexcept {
    switch (p) {
        case Phase::start: return "start";
        case Phase::pre_update: return "pre_update";
        case Phase::update: return "update";
        case Phase::post_update: return "post_update";
        case Phase::manual: return "manual";
    }
    return "?";
}

struct Schedule::Impl {
    std::vector<std::unique_ptr<SystemEntry>> systems;  // registration order
    bool strict = false;
    bool dirty = true;
    bool started = false;
    PhaseGraph phases[phase_count];
    std::size_t skipped = 0;
    std::chrono::nanoseconds threshold = default_threshold;
    bool profiling = false;

    SystemEntry* find(std::string_view name) const noexcept {
        for (const auto& s : systems) {
            if (s->name == name) return s.get();
        }
        return nullptr;
    }
    SystemEntry& get(std::string_view name, const char* op) const {
        if (SystemEntry* s = find(name)) return *s;
        throw Error(errc::unknown_system,
                    std::string(op) + ": no system named '" + std::string(name) + "'");
    }

    void build();
    void build_phase(std::size_t p);
    void run_phase(std::size_t p, World& w, int workers, tbb::task_arena* arena, float dt);
    void prepare(SystemEntry& s, World& w);
    void check_resources(SystemEntry& s, const World& w, const char* op) const;
    void run_one(SystemEntry& s, World& w, std::uint64_t tick, float dt, bool measure);
    void run_inline(PhaseGraph& g, PhaseRun& r, World& w, float dt, bool measure);
    void run_parallel(PhaseGraph& g, PhaseRun& r, World& w, float dt, int workers,
                      tbb::task_arena* arena);
    void run_segment(PhaseGraph& g, PhaseRun& r, World& w, float dt, int workers,
                     tbb::task_arena* arena, std::uint32_t first, std::uint32_t last);
    void sync(SystemEntry& s, World& w, bool ok);
    void run(World& w, int workers, tbb::task_arena* arena, float dt);
};

// ------------------------------------------------------------------------------------ build

void Schedule::Impl::build() {
    if (!dirty) return;
    for (auto& s : systems) {
        s->access = s->system->access;
        s->takes_world = s->access.exclusive;
        if (s->declared) {
            s->access.exclusive = false;  // trusted: the declaration replaces World&'s claim
            if (s->takes_world) {
                // Its direct writes go through the world, stamped with the world's tick, which
                // it sets to its own while it runs: two such systems never overlap.
                s->access.resources.push_back(
                    {std::type_index(typeid(World)), "World (its tick)", &always_present, true});
            }
            s->access.reads.insert(s->access.reads.end(), s->declared_reads.begin(),
                                   s->declared_reads.end());
            s->access.writes.insert(s->access.writes.end(), s->declared_writes.begin(),
                                    s->declared_writes.end());
        }
        for (const std::string& n : s->before) get(n, "Schedule::build");
        for (const std::string& n : s->after) get(n, "Schedule::build");
    }
    // Constraints across phases must agree with the order of the phases.
    for (auto& s : systems) {
        auto check = [&](const SystemEntry& first, const SystemEntry& second) {
            if (first.phase == Phase::manual || second.phase == Phase::manual) return;
            if (first.phase > second.phase) {
                throw Error(errc::schedule_cycle, "Schedule::build: '" + first.name + "' (phase " +
                                                      phase_name(first.phase) +
                                                      ") must run before '" + second.name +
                                                      "' (phase " + phase_name(second.phase) +
                                                      "), which runs in an earlier phase");
            }
        };
        for (const std::string& n : s->before) check(*s, *find(n));
        for (const std::string& n : s->after) check(*find(n), *s);
    }
    for (std::size_t p = 0; p < phase_count; ++p) build_phase(p);
    dirty = false;
}

void Schedule::Impl::build_phase(std::size_t p) {
    const auto phase = static_cast<Phase>(p);
    std::vector<SystemEntry*> members;
    for (auto& s : systems) {
        if (s->phase == phase) members.push_back(s.get());
    }
    const std::size_t n = members.size();
    auto index_of = [&](const SystemEntry* s) {
        return static_cast<std::size_t>(std::find(members.begin(), members.end(), s) -
                                        members.begin());
    };
    // Explicit edges (by member index), then the deterministic order: topological, ties by
    // (order, registration).
    std::vector<std::vector<std::size_t>> edges(n);
    std::vector<std::size_t> indegree(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
        for (const std::string& name : members[i]->before) {
            const std::size_t j = index_of(find(name));
            if (j < n) edges[i].push_back(j);
        }
        for (const std::string& name : members[i]->after) {
            const std::size_t j = index_of(find(name));
            if (j < n) edges[j].push_back(i);
        }
    }
    for (const auto& e : edges) {
        for (const std::size_t j : e) ++indegree[j];
    }
    std::vector<std::size_t> linear;
    std::vector<std::uint8_t> placed(n, 0);
    for (std::size_t step = 0; step < n; ++step) {
        std::size_t best = n;
        for (std::size_t i = 0; i < n; ++i) {
            if (placed[i] || indegree[i] != 0) continue;
            if (best == n || members[i]->order < members[best]->order) best = i;
        }
        if (best == n) {
            std::string cycle;
            for (std::size_t i = 0; i < n; ++i) {
                if (!placed[i]) cycle += (cycle.empty() ? "'" : ", '") + members[i]->name + "'";
            }
            throw Error(errc::schedule_cycle,
                        std::string("Schedule::build: the before/after constraints of phase ") +
                            phase_name(phase) + " form a cycle among " + cycle);
        }
        placed[best] = 1;
        linear.push_back(best);
        for (const std::size_t j : edges[best]) --indegree[j];
    }
    // Reachability through explicit constraints (transitive).
    std::vector<std::vector<std::uint8_t>> reach(n, std::vector<std::uint8_t>(n, 0));
    for (auto it = linear.rbegin(); it != linear.rend(); ++it) {
        for (const std::size_t j : edges[*it]) {
            reach[*it][j] = 1;
            for (std::size_t k = 0; k < n; ++k) reach[*it][k] |= reach[j][k];
        }
    }
    PhaseGraph& g = phases[p];
    g = PhaseGraph{};
    std::vector<std::size_t> position(n);
    for (std::size_t k = 0; k < n; ++k) {
        position[linear[k]] = k;
        g.order.push_back(members[linear[k]]);
        members[linear[k]]->position = k;
    }
    g.successors.assign(n, {});
    g.predecessors.assign(n, 0);
    auto add_edge = [&](std::size_t from, std::size_t to) {  // positions
        auto& succ = g.successors[from];
        if (std::find(succ.begin(), succ.end(), to) != succ.end()) return;
        succ.push_back(static_cast<std::uint32_t>(to));
        ++g.predecessors[to];
    };
    for (std::size_t i = 0; i < n; ++i) {
        for (const std::size_t j : edges[i]) add_edge(position[i], position[j]);
    }
    for (std::size_t a = 0; a < n; ++a) {
        for (std::size_t b = a + 1; b < n; ++b) {
            SystemEntry& x = *g.order[a];
            SystemEntry& y = *g.order[b];
            const std::string data = conflict(x.access, y.access);
            if (data.empty()) continue;
            const std::size_t ix = index_of(&x);
            const std::size_t iy = index_of(&y);
            if (reach[ix][iy] || reach[iy][ix]) continue;  // ordered by before/after
            if (strict && x.order == y.order) {
                throw Error(errc::ambiguous_order,
                            "Schedule::build: systems '" + x.name + "' and '" + y.name +
                                "' both access " + data + " (at least one writes it) in phase " +
                                phase_name(phase) +
                                " and nothing orders them; add before/after or order()");
            }
            add_edge(a, b);
        }
    }
    g.run.ticks.assign(n, 0);
    g.run.skipped.assign(n, 0);
    g.run.errors.assign(n, nullptr);
    g.remaining = std::make_unique<std::atomic<std::uint32_t>[]>(n);
    g.skipped = std::make_unique<std::atomic<std::uint8_t>[]>(n);
    g.pending.assign(n, 0);
    std::vector<std::size_t> layer(n, 0);
    for (std::size_t a = 0; a < n; ++a) {
        for (const std::uint32_t b : g.successors[a]) layer[b] = std::max(layer[b], layer[a] + 1);
        g.layers = std::max(g.layers, layer[a] + 1);
    }
}

// -------------------------------------------------------------------------------------- run

void Schedule::Impl::prepare(SystemEntry& s, World& w) {
    if (s.created_on == nullptr) {
        s.system->create(w);
        s.created_on = &w;
    }
    s.system->prepare(w);
}

void Schedule::Impl::check_resources(SystemEntry& s, const World& w, const char* op) const {
    for (const detail::ResourceAccess& r : s.access.resources) {
        if (r.present(w)) continue;
        throw Error(errc::missing_resource, std::string(op) + ": system '" + s.name +
                                                "' needs the resource " + std::string(r.name) +
                                                ", which the world lacks (insert_resource it "
                                                "before the phase runs)");
    }
}

void Schedule::Impl::run_one(SystemEntry& s, World& w, std::uint64_t tick, float dt, bool measure) {
    detail::Storage& storage = w.storage();
    const detail::SystemRun run{&w, &s.commands, dt, tick, s.last_tick, s.access.exclusive};
    const auto start =
        measure ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (s.takes_world) {
        // Its direct writes and immediate changes carry its own tick (it runs alone, or with
        // systems that never touch the world's tick: a declared World& system; two of those
        // conflict through their "World (its tick)" pseudo-resource). Only World& systems read
        // or write the tick here, so a parallel phase has no race on it.
        const std::uint64_t world_tick = storage.tick();
        storage.set_tick(tick);
        struct Restore {
            detail::Storage& s;
            std::uint64_t t;
            ~Restore() { s.set_tick(t); }
        } restore{storage, world_tick};
        s.system->run(run);
    } else {
        s.system->run(run);
    }
    if (measure) {
        s.duration_ns =
            static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           std::chrono::steady_clock::now() - start)
                                           .count());
        if (profiling) s.history[s.runs++ % history_size] = s.duration_ns;
    }
}

void Schedule::Impl::run_inline(PhaseGraph& g, PhaseRun& r, World& w, float dt, bool measure) {
    for (std::size_t k = 0; k < g.order.size(); ++k) {
        if (r.skipped[k] || r.ticks[k] == 0) {
            if (r.skipped[k]) {
                for (const std::uint32_t s : g.successors[k]) r.skipped[s] = 1;
            }
            continue;
        }
        try {
            run_one(*g.order[k], w, r.ticks[k], dt, measure);
        } catch (...) {
            r.errors[k] = std::current_exception();
            for (const std::uint32_t s : g.successors[k]) r.skipped[s] = 1;
        }
    }
}

// A parallel phase. Its exclusive (`World&`) systems run on the calling thread, the thread
// that owns the world: every system before one in the deterministic order precedes it and every
// system after it follows it (it conflicts with all), so the phase splits there into segments
// that run in parallel, with the exclusive system inline between them.
void Schedule::Impl::run_parallel(PhaseGraph& g, PhaseRun& r, World& w, float dt, int workers,
                                  tbb::task_arena* arena) {
    const auto n = static_cast<std::uint32_t>(g.order.size());
    std::atomic<std::uint8_t>* skipped = g.skipped.get();
    for (std::uint32_t k = 0; k < n; ++k) skipped[k].store(0, std::memory_order_relaxed);
    std::uint32_t first = 0;
    for (std::uint32_t k = 0; k < n; ++k) {
        if (!g.order[k]->access.exclusive || r.ticks[k] == 0) continue;
        if (first < k) run_segment(g, r, w, dt, workers, arena, first, k);
        first = k + 1;
        bool ok = skipped[k].load(std::memory_order_relaxed) == 0;
        if (ok) {
            try {
                if (arena != nullptr)
                    arena->execute([&] { run_one(*g.order[k], w, r.ticks[k], dt, true); });
                else
                    run_one(*g.order[k], w, r.ticks[k], dt, true);
            } catch (...) {
                r.errors[k] = std::current_exception();
                ok = false;
            }
        }
        if (!ok) {
            for (const std::uint32_t s : g.successors[k])
                skipped[s].store(1, std::memory_order_relaxed);
        }
    }
    if (first < n) run_segment(g, r, w, dt, workers, arena, first, n);
    for (std::size_t k = 0; k < n; ++k) r.skipped[k] = skipped[k].load(std::memory_order_relaxed);
}

// Runs positions [first, last) of a phase in parallel; those before `first` are done.
void Schedule::Impl::run_segment(PhaseGraph& g, PhaseRun& r, World& w, float dt, int workers,
                                 tbb::task_arena* arena, std::uint32_t first, std::uint32_t last) {
    std::atomic<std::uint32_t>* remaining = g.remaining.get();
    std::atomic<std::uint8_t>* skipped = g.skipped.get();
    std::uint32_t* const pending = g.pending.data();
    for (std::uint32_t k = first; k < last; ++k) pending[k] = 0;
    for (std::uint32_t k = first; k < last; ++k) {
        for (const std::uint32_t s : g.successors[k]) {
            if (s < last) ++pending[s];
        }
    }
    for (std::uint32_t k = first; k < last; ++k)
        remaining[k].store(pending[k], std::memory_order_relaxed);
    // Runs system k, then releases its successors (a failed or skipped one marks them skipped);
    // `spawn` starts each successor that became ready.
    auto execute = [&](std::uint32_t k, auto&& spawn) {
        bool ok = skipped[k].load(std::memory_order_acquire) == 0;
        if (ok && r.ticks[k] != 0) {
            try {
                run_one(*g.order[k], w, r.ticks[k], dt, true);
            } catch (...) {
                r.errors[k] = std::current_exception();
                ok = false;
            }
        }
        for (const std::uint32_t s : g.successors[k]) {
            if (!ok) skipped[s].store(1, std::memory_order_release);
            if (s < last && remaining[s].fetch_sub(1, std::memory_order_acq_rel) == 1) spawn(s);
        }
    };
#ifdef TESSERA_TSAN
    // oneTBB's scheduler is not instrumented for TSan: run the same graph on plain threads
    // taking ready systems from a shared FIFO.
    (void)arena;
    std::mutex m;
    std::condition_variable cv;
    std::vector<std::uint32_t> ready;
    std::size_t head = 0;
    std::size_t done = 0;
    const std::size_t n = last - first;
    for (std::uint32_t k = first; k < last; ++k) {
        if (pending[k] == 0) ready.push_back(k);
    }
    auto lane = [&] {
        std::unique_lock lock(m);
        for (;;) {
            cv.wait(lock, [&] { return head < ready.size() || done == n; });
            if (head == ready.size()) return;
            const std::uint32_t k = ready[head++];
            lock.unlock();
            std::vector<std::uint32_t> released;
            execute(k, [&](std::uint32_t s) { released.push_back(s); });
            lock.lock();
            ready.insert(ready.end(), released.begin(), released.end());
            ++done;
            cv.notify_all();
        }
    };
    const std::size_t lanes =
        std::min<std::size_t>(static_cast<std::size_t>(std::max(workers, 1)), n);
    std::vector<std::thread> threads;
    for (std::size_t k = 1; k < lanes; ++k) threads.emplace_back(lane);
    lane();
    for (std::thread& t : threads) t.join();
#else
    (void)workers;
    // One task per system, spawned when its last predecessor finishes: a worker with no
    // system to run goes back to the scheduler and helps the running ones' par_each, instead
    // of waiting for a system to become ready.
    tbb::task_group tasks;
    struct Spawn {
        tbb::task_group& tasks;
        const decltype(execute)& run;
        void operator()(std::uint32_t k) const {
            tasks.run([*this, k] {
                // Isolated: while the system waits inside (a par_each), this thread runs only
                // that wait's tasks, never another system, which would delay the wait's return.
                tbb::this_task_arena::isolate([&] { run(k, *this); });
            });
        }
    };
    const Spawn spawn{tasks, execute};
    auto body = [&] {
        for (std::uint32_t k = first; k < last; ++k) {
            if (pending[k] == 0) spawn(k);
        }
        tasks.wait();
    };
    if (arena != nullptr)
        arena->execute(body);
    else
        body();
#endif
}

void Schedule::Impl::sync(SystemEntry& s, World& w, bool ok) {
    if (!ok) {
        s.commands.clear();
        s.system->drop();
        return;
    }
    if (s.commands.size() != 0) {
        s.commands.apply(w, on_dead::skip);
        skipped += s.commands.skipped();
    }
    s.system->sync(w);
}

void Schedule::Impl::run_phase(std::size_t p, World& w, int workers, tbb::task_arena* arena,
                               float dt) {
    PhaseGraph& g = phases[p];
    const std::size_t n = g.order.size();
    if (n == 0) return;
    for (SystemEntry* s : g.order) {
        if (s->enabled) prepare(*s, w);
    }
    for (SystemEntry* s : g.order) {
        if (s->enabled) check_resources(*s, w, "Schedule::run");
    }
    PhaseRun& r = g.run;
    std::fill(r.ticks.begin(), r.ticks.end(), 0);
    std::fill(r.skipped.begin(), r.skipped.end(), 0);
    std::fill(r.errors.begin(), r.errors.end(), nullptr);
    detail::Storage& storage = w.storage();
    const std::uint64_t base = storage.tick();
    std::uint64_t next = base;
    std::uint64_t work = 0;
    std::size_t enabled = 0;
    for (std::size_t k = 0; k < n; ++k) {
        if (!g.order[k]->enabled) continue;
        r.ticks[k] = ++next;
        work += g.order[k]->duration_ns;
        ++enabled;
    }
    const bool parallel = workers > 1 && enabled > 1 && g.layers < n &&
                          work >= static_cast<std::uint64_t>(threshold.count());
    const bool measure = workers > 1 || profiling;
    if (parallel) {
        run_parallel(g, r, w, dt, workers, arena);
    } else if (arena != nullptr) {
        // Inside the engine's arena, so a par_each in a system uses its workers.
        arena->execute([&] { run_inline(g, r, w, dt, measure); });
    } else {
        run_inline(g, r, w, dt, measure);
    }
    // Sync point: the phase's writes are all stamped at most `next`; what follows is newer.
    storage.set_tick(next + 1);
    std::size_t failed = n;
    for (const auto& s : systems) {  // registration order
        if (s->phase != static_cast<Phase>(p)) continue;
        const std::size_t k = s->position;
        const bool ran = r.ticks[k] != 0 && !r.skipped[k];
        const bool ok = ran && !r.errors[k];
        if (ran) sync(*s, w, ok);
        if (ok) s->last_tick = r.ticks[k];
        if (r.errors[k] && (failed == n || k < failed)) failed = k;
    }
    if (failed == n) return;
    throw_system_failed("Schedule::run: system '" + g.order[failed]->name + "' failed in phase " +
                            phase_name(static_cast<Phase>(p)),
                        r.errors[failed]);
}

void Schedule::Impl::run(World& w, int workers, tbb::task_arena* arena, float dt) {
    build();
    skipped = 0;
    struct EndFrame {  // the frame ends with the event queues' update, failure or not
        World& w;
        ~EndFrame() { w.update_events(); }
    } end{w};
    if (!started) {
        try {
            run_phase(static_cast<std::size_t>(Phase::start), w, workers, arena, dt);
        } catch (const Error& e) {
            // A missing resource stops the phase before any of its systems ran: try again on
            // the next run. Any other failure happened while it ran: it ran.
            if (e.code() != errc::missing_resource) started = true;
            throw;
        }
        started = true;
    }
    for (const Phase p : {Phase::pre_update, Phase::update, Phase::post_update})
        run_phase(static_cast<std::size_t>(p), w, workers, arena, dt);
}

// ----------------------------------------------------------------------------- Schedule API

Schedule::Schedule() : impl_(std::make_unique<Impl>()) {}
Schedule::~Schedule() = default;
Schedule::Schedule(Schedule&&) noexcept = default;
Schedule& Schedule::operator=(Schedule&&) noexcept = default;

Schedule Schedule::strict() {
    Schedule s;
    s.impl_->strict = true;
    return s;
}

SystemConfig Schedule::add_system(std::string name, std::unique_ptr<detail::SystemBase> system) {
    if (name.empty())
        throw Error(errc::invalid_argument, "Schedule::add: a system needs a non-empty name");
    if (impl_->find(name) != nullptr) {
        throw Error(errc::invalid_argument,
                    "Schedule::add: a system named '" + name + "' is already in the schedule");
    }
    auto entry = std::make_unique<SystemEntry>();
    entry->name = std::move(name);
    entry->system = std::move(system);
    impl_->systems.push_back(std::move(entry));
    impl_->dirty = true;
    return SystemConfig(*this, impl_->systems.size() - 1);
}

void Schedule::run(World& world, float dt) {
#ifdef TESSERA_TSAN
    const int workers = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
#else
    const int workers = tbb::this_task_arena::max_concurrency();
#endif
    impl_->run(world, workers, nullptr, dt);
}

void Schedule::run(World& world, tbb::task_arena& arena, float dt) {
    if (!arena.is_active()) arena.initialize();
    impl_->run(world, arena.max_concurrency(), &arena, dt);
}

void Schedule::run_system(std::string_view name, World& world, float dt) {
    impl_->build();
    SystemEntry& s = impl_->get(name, "Schedule::run_system");
    impl_->skipped = 0;
    impl_->prepare(s, world);
    impl_->check_resources(s, world, "Schedule::run_system");
    detail::Storage& storage = world.storage();
    const std::uint64_t tick = storage.tick() + 1;
    std::exception_ptr error;
    try {
        impl_->run_one(s, world, tick, dt, impl_->profiling);
    } catch (...) {
        error = std::current_exception();
    }
    storage.set_tick(tick + 1);
    impl_->sync(s, world, !error);
    if (!error) {
        s.last_tick = tick;
        return;
    }
    throw_system_failed("Schedule::run_system: system '" + s.name + "' failed", error);
}

void Schedule::enable(std::string_view name, bool on) {
    impl_->get(name, "Schedule::enable").enabled = on;
}

bool Schedule::is_enabled(std::string_view name) const {
    return impl_->get(name, "Schedule::is_enabled").enabled;
}

void Schedule::remove(std::string_view name) {
    SystemEntry& s = impl_->get(name, "Schedule::remove");
    if (s.created_on != nullptr) s.system->destroy(*s.created_on);
    auto& v = impl_->systems;
    v.erase(std::find_if(v.begin(), v.end(), [&](const auto& p) { return p.get() == &s; }));
    impl_->dirty = true;
}

bool Schedule::contains(std::string_view name) const noexcept {
    return impl_->find(name) != nullptr;
}

std::size_t Schedule::size() const noexcept {
    return impl_->systems.size();
}

void Schedule::build() {
    impl_->build();
}

std::size_t Schedule::stage_count() {
    impl_->build();
    std::size_t total = 0;
    for (const PhaseGraph& g : impl_->phases) total += g.layers;
    return total;
}

std::size_t Schedule::skipped_commands() const noexcept {
    return impl_->skipped;
}

void Schedule::set_parallel_threshold(std::chrono::nanoseconds threshold) noexcept {
    impl_->threshold = threshold;
}

void Schedule::set_profiling(bool on) noexcept {
    impl_->profiling = on;
}

bool Schedule::profiling() const noexcept {
    return impl_->profiling;
}

std::vector<SystemStats> Schedule::stats() {
    impl_->build();
    std::vector<SystemStats> out;
    out.reserve(impl_->systems.size());
    auto add = [&](const SystemEntry& s) {
        SystemStats st;
        st.name = s.name;
        st.phase = s.phase;
        st.position = s.position;
        st.enabled = s.enabled;
        st.exclusive = s.access.exclusive;
        for (const ComponentId id : s.access.reads) st.reads.emplace_back(component_info(id).name);
        for (const ComponentId id : s.access.writes)
            st.writes.emplace_back(component_info(id).name);
        for (const detail::ResourceAccess& r : s.access.resources) {
            (r.write ? st.writes : st.reads).push_back("resource " + std::string(r.name));
        }
        // A component named by two parameters (or deduced and declared) is listed once.
        for (std::vector<std::string>* list : {&st.reads, &st.writes}) {
            for (std::size_t i = 0; i < list->size(); ++i) {
                const auto first = list->begin() + static_cast<std::ptrdiff_t>(i) + 1;
                list->erase(std::remove(first, list->end(), (*list)[i]), list->end());
            }
        }
        st.runs = s.runs;
        if (s.runs != 0) {
            const std::size_t kept =
                static_cast<std::size_t>(std::min<std::uint64_t>(s.runs, history_size));
            std::array<std::uint64_t, history_size> times = s.history;
            std::sort(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(kept));
            st.last = std::chrono::nanoseconds(s.history[(s.runs - 1) % history_size]);
            st.median = std::chrono::nanoseconds(times[(kept - 1) / 2]);
            st.p99 = std::chrono::nanoseconds(times[std::min(kept - 1, kept * 99 / 100)]);
        }
        out.push_back(std::move(st));
    };
    for (const PhaseGraph& g : impl_->phases) {
        for (const SystemEntry* s : g.order) add(*s);
    }
    for (const auto& s : impl_->systems) {
        if (s->phase == Phase::manual) add(*s);
    }
    return out;
}

// ------------------------------------------------------------------------------ SystemConfig

namespace {
SystemEntry& entry(Schedule::Impl& impl, std::size_t index) {
    return *impl.systems[index];
}
}  // namespace

SystemConfig& SystemConfig::phase(Phase p) {
    entry(*schedule_->impl_, index_).phase = p;
    schedule_->impl_->dirty = true;
    return *this;
}

SystemConfig& SystemConfig::order(int n) {
    entry(*schedule_->impl_, index_).order = n;
    schedule_->impl_->dirty = true;
    return *this;
}

SystemConfig& SystemConfig::before(std::string_view name) {
    entry(*schedule_->impl_, index_).before.emplace_back(name);
    schedule_->impl_->dirty = true;
    return *this;
}

SystemConfig& SystemConfig::after(std::string_view name) {
    entry(*schedule_->impl_, index_).after.emplace_back(name);
    schedule_->impl_->dirty = true;
    return *this;
}

SystemConfig& SystemConfig::declare(std::span<const ComponentId> ids, bool write) {
    SystemEntry& s = entry(*schedule_->impl_, index_);
    auto& list = write ? s.declared_writes : s.declared_reads;
    list.insert(list.end(), ids.begin(), ids.end());
    s.declared = true;
    schedule_->impl_->dirty = true;
    return *this;
}

const std::string& SystemConfig::name() const {
    return entry(*schedule_->impl_, index_).name;
}

}  // namespace tessera

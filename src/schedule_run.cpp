// Schedule: running the phases (inline or on oneTBB), sync points and failures.
#include "schedule_impl.hpp"

#include <tessera/detail/parallel.hpp>

#include <tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace tessera {

using detail::history_size;
using detail::phase_count;
using detail::PhaseGraph;
using detail::PhaseRun;
using detail::SystemEntry;
using detail::throw_system_failed;

/// Throws `system_failed` with `context` and the original's message, the original nested.
void detail::throw_system_failed(const std::string& context, const std::exception_ptr& e) {
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

void detail::throw_status(const Status& status) {
    throw Error(status.code(), status.message());
}

void Schedule::Impl::prepare(SystemEntry& s, World& w) {
    // Prepared for this world already: only event parameters need it again (their queue may
    // have been removed or replaced since).
    if (s.prepared_on == &w && !s.system->prepare_always) return;
    if (s.created_on == nullptr) {
        s.system->create(w);
        s.created_on = &w;
    }
    s.system->prepare(w);
    if (s.shared_world) {
        // Recorded here, on the thread that owns the world: its queries, on a worker, then
        // only read the world's component table.
        for (const ComponentId id : s.declared_reads) w.storage().ensure_component(id);
        for (const ComponentId id : s.declared_writes) w.storage().ensure_component(id);
    }
    s.prepared_on = &w;
}

void Schedule::Impl::check_resources(SystemEntry& s, const World& w, const char* op) const {
    for (const detail::ResourceAccess& r : s.access.resources) {
        if (r.present(w)) continue;
        throw Error(errc::missing_resource, std::string(op) + ": system " + detail::quote(s.name) +
                                                " needs the resource " + std::string(r.name) +
                                                ", which the world lacks (insert_resource it "
                                                "before the phase runs)");
    }
}

void Schedule::Impl::run_one(SystemEntry& s, World& w, std::uint64_t tick, float dt, bool measure) {
    detail::Storage& storage = w.storage();
    const detail::SystemRun run{&w, &s.commands, dt, tick, s.last_tick, s.access.exclusive};
    detail::Trace* const trace = tracing;
    const auto start = measure || trace != nullptr ? std::chrono::steady_clock::now()
                                                   : std::chrono::steady_clock::time_point{};
    if (s.shared_world) {
        // A declared World& system shares the world with the systems beside it: on this thread
        // the world's tick reads as its own (its writes are stamped with it), and its queries
        // neither defer the world nor advance its tick. Nothing shared is written.
        const detail::ThreadSystem saved = detail::thread_system;
        detail::thread_system = {&storage, tick};
        struct Restore {
            detail::ThreadSystem saved;
            ~Restore() { detail::thread_system = saved; }
        } restore{saved};
        s.system->run(run);
    } else if (s.takes_world) {
        // An exclusive World& system runs alone on the calling thread: its direct writes and
        // immediate changes carry its own tick, set as the world's while it runs.
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
    if (measure || trace != nullptr) {
        const auto end = std::chrono::steady_clock::now();
        if (trace != nullptr) [[unlikely]]
            trace->record(s.name, s.phase, start, end);
        if (measure) {
            s.duration_ns = static_cast<std::uint64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
            if (profiling) s.history[s.runs++ % history_size] = s.duration_ns;
        }
    }
}

void Schedule::Impl::run_inline(PhaseGraph& g, PhaseRun& r, World& w, float dt, bool measure) {
    const bool plain = !measure && tracing == nullptr;  // neither timed nor traced
    for (std::size_t k = 0; k < g.order.size(); ++k) {
        if (r.skipped[k] || r.ticks[k] == 0) {
            if (r.skipped[k]) {
                for (const std::uint32_t s : g.successors[k]) r.skipped[s] = 1;
            }
            continue;
        }
        try {
            SystemEntry& s = *g.order[k];
            if (plain && !s.takes_world) {  // run_one's common case, inline
                const detail::SystemRun run{&w, &s.commands, dt, r.ticks[k], s.last_tick, false};
                s.system->run(run);
            } else {
                run_one(s, w, r.ticks[k], dt, measure);
            }
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
                                  const detail::ArenaRef* arena) {
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
                    arena->run([&] { run_one(*g.order[k], w, r.ticks[k], dt, true); });
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
                                 const detail::ArenaRef* arena, std::uint32_t first,
                                 std::uint32_t last) {
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
        arena->run(body);
    else
        body();
#endif
}

std::exception_ptr Schedule::Impl::sync(SystemEntry& s, World& w, bool ok) noexcept {
    if (!ok) {
        s.commands.clear();
        s.system->drop();
        return nullptr;
    }
    try {
        if (s.commands.size() != 0) {
            s.commands.apply(w, on_dead::skip);
            skipped += s.commands.skipped();
        }
        if (s.system->syncs) s.system->sync(w);
    } catch (...) {
        // An observer (or a command) threw while its commands were applied: what was applied
        // stands, the rest of its commands and its events are dropped, as for a failed system.
        skipped += s.commands.skipped();
        s.commands.clear();
        s.system->drop();
        return std::current_exception();
    }
    return nullptr;
}

bool Schedule::Impl::choose_parallel(PhaseGraph& g, std::size_t active, std::uint64_t work,
                                     int workers) noexcept {
    const std::size_t n = g.order.size();
    g.probing = false;
    if (workers < 2 || active < 2 || g.layers >= n) return false;  // nothing can overlap
    if (threshold) return work >= static_cast<std::uint64_t>(threshold->count());
    if (work == 0) return false;  // nothing measured yet: this inline run measures
    // The measured critical path (positions are a topological order of the graph): parallel
    // can take no less than it, nor less than the work shared by the workers.
    std::uint64_t longest = 0;
    std::fill(g.finish.begin(), g.finish.end(), 0);
    for (std::size_t k = 0; k < n; ++k) {
        const SystemEntry& s = *g.order[k];
        const std::uint64_t end = g.finish[k] + (s.active ? s.duration_ns : 0);
        longest = std::max(longest, end);
        for (const std::uint32_t next : g.successors[k])
            g.finish[next] = std::max(g.finish[next], end);
    }
    const std::uint64_t bound = std::max(longest, work / static_cast<std::uint64_t>(workers));
    if (bound * 20 >= work * 19) return false;  // at most 5% to gain: not worth the tasks
    if (g.parallel_samples < 2) return true;    // not measured twice yet: measure it
    if (g.inline_ns == 0) return false;
    if (g.probe_runs != 0) {  // the second run of a try of the other way
        --g.probe_runs;
        g.probing = true;
        return !g.probe_from;
    }
    const bool faster = g.parallel_ns < g.inline_ns;
    if (++g.since_probe >= g.probe_every) {  // try the other way now and then, two runs
        g.since_probe = 0;
        g.probing = true;
        g.probe_first = true;
        g.probe_runs = 1;
        g.probe_from = faster;
        return !faster;
    }
    return faster;
}

void Schedule::Impl::run_phase(std::size_t p, World& w, int workers, const detail::ArenaRef* arena,
                               float dt) {
    PhaseGraph& g = phases[p];
    const std::size_t n = g.order.size();
    if (n == 0) return;
    for (SystemEntry* s : g.order) {  // the check of Impl::prepare, inline: the common case
        if (s->active && (s->prepared_on != &w || s->system->prepare_always)) prepare(*s, w);
    }
    // Resources are checked (all of them, before anything runs) while the ticks are assigned.
    PhaseRun& r = g.run;
    detail::Storage& storage = w.storage();
    const std::uint64_t base = storage.tick();
    std::uint64_t next = base;
    std::uint64_t work = 0;
    std::size_t active = 0;
    for (std::size_t k = 0; k < n; ++k) {
        SystemEntry& s = *g.order[k];
        r.ticks[k] = s.active ? ++next : 0;
        if (!s.active) continue;
        if (!s.access.resources.empty()) check_resources(s, w, "Schedule::run");
        work += s.duration_ns;
        ++active;
    }
    std::fill(r.skipped.begin(), r.skipped.end(), 0);
    if (r.had_errors) {
        std::fill(r.errors.begin(), r.errors.end(), nullptr);
        r.had_errors = false;
    }
    if (active == 0) {  // nothing runs: the phase still takes its tick, as a run would
        storage.set_tick(next + 1);
        return;
    }
    const bool parallel = choose_parallel(g, active, work, workers);
    const bool timed = workers > 1;  // the automatic choice measures both ways
    const bool measure = timed || profiling;
    const auto start =
        timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (parallel) {
        run_parallel(g, r, w, dt, workers, arena);
    } else if (arena != nullptr) {
        // Inside the engine's arena, so a par_each in a system uses its workers.
        arena->run([&] { run_inline(g, r, w, dt, measure); });
    } else {
        run_inline(g, r, w, dt, measure);
    }
    if (timed) {
        const auto ns =
            static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           std::chrono::steady_clock::now() - start)
                                           .count());
        if (parallel && g.parallel_samples < 2) {
            // The first parallel runs start the arena's threads on cold caches: the second
            // one's figure is the one kept.
            ++g.parallel_samples;
            g.parallel_ns = std::max<std::uint64_t>(ns, 1);
        } else {
            // Each way's figure is a minimum that forgets slowly (1/16 per run): a run slowed by
            // another process (steal on a VM) does not count against the way it ran. A try of
            // the way not chosen (two runs) replaces its old figure, which may be from long ago.
            std::uint64_t& figure = parallel ? g.parallel_ns : g.inline_ns;
            const std::uint64_t sample = std::max<std::uint64_t>(ns, 1);
            if (figure == 0 || (g.probing && g.probe_first))
                figure = sample;
            else
                figure = std::min(g.probing ? figure : figure + figure / 16 + 1, sample);
            g.probe_first = false;
            if (g.probing && g.probe_runs == 0) {  // a try that confirms the choice waits
                const bool flipped = (g.parallel_ns < g.inline_ns) != g.probe_from;
                g.probe_every = flipped ? detail::probe_period
                                        : std::min(2 * g.probe_every, detail::probe_period_max);
            }
        }
        g.probing = false;
    }
    // Sync point: the phase's writes are all stamped at most `next`; what follows is newer.
    storage.set_tick(next + 1);
    std::size_t failed = n;
    const SystemEntry* sync_failed = nullptr;  // the first whose commands failed to apply
    std::exception_ptr sync_error;
    for (const std::uint32_t k : g.sync_order) {  // registration order
        SystemEntry& s = *g.order[k];
        const bool ran = r.ticks[k] != 0 && !r.skipped[k];
        const bool ok = ran && !r.errors[k];
        if (ok && s.commands.size() == 0 && !s.system->syncs) {
            s.last_tick = r.ticks[k];  // nothing to apply: the common case, inline
            continue;
        }
        if (ran) {
            if (std::exception_ptr e = sync(s, w, ok); e && !sync_error) {
                sync_error = std::move(e);
                sync_failed = &s;
            }
        }
        if (ok) s.last_tick = r.ticks[k];
        if (r.errors[k] && (failed == n || k < failed)) failed = k;
    }
    r.had_errors = failed != n;
    // A system that threw is reported first (it failed before any sync point work).
    const char* phase = phase_name(static_cast<Phase>(p));
    if (failed != n) {
        throw_system_failed("Schedule::run: system " + detail::quote(g.order[failed]->name) +
                                " failed in phase " + phase,
                            r.errors[failed]);
    }
    if (sync_error) {
        throw_system_failed("Schedule::run: applying the commands of system " +
                                detail::quote(sync_failed->name) +
                                " failed at the sync point of phase " + phase,
                            sync_error);
    }
}

void Schedule::Impl::run_frame(World& w, int workers, const detail::ArenaRef* arena, float dt,
                               std::string_view group) {
    build();
    // A frame takes at most a tick per system and one per phase: refuse it, before anything
    // runs, when that would take the world tick past World::max_tick.
    if (w.tick() > World::max_tick - (systems.size() + phase_count)) {
        throw Error(errc::limit_exceeded,
                    "Schedule::run: the world tick is too close to World::max_tick for a frame");
    }
    bool known = group.empty();
    for (const auto& s : systems) {
        const bool member = s->group == group;
        known = known || member;
        s->active = member && s->enabled;
    }
    if (!known) {
        throw Error(errc::unknown_system,
                    "Schedule::run: no system is in group " + detail::quote(group));
    }
    skipped = 0;
    struct EndFrame {  // the frame ends with the event queues' update, failure or not
        World& w;
        ~EndFrame() { w.update_events(); }
    } end{w};
    if (std::find(started.begin(), started.end(), group) == started.end()) {
        try {
            run_phase(static_cast<std::size_t>(Phase::start), w, workers, arena, dt);
        } catch (const Error& e) {
            // A missing resource stops the phase before any of its systems ran: try again on
            // the next run. Any other failure happened while it ran: it ran.
            if (e.code() != errc::missing_resource) started.emplace_back(group);
            throw;
        }
        started.emplace_back(group);
    }
    for (const Phase p : {Phase::pre_update, Phase::update, Phase::post_update})
        run_phase(static_cast<std::size_t>(p), w, workers, arena, dt);
}

}  // namespace tessera

// Schedule and SystemConfig: the public members (schedule.hpp), forwarding to Schedule::Impl
// (schedule_impl.hpp: building in schedule_build.cpp, running in schedule_run.cpp).
#include "schedule_impl.hpp"

#include <tessera/detail/parallel.hpp>
#include <tessera/system_stats.hpp>

#include <algorithm>
#include <array>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

// Schedule::run(world, arena) takes oneTBB's arena as a template (schedule.hpp declares nothing
// of oneTBB's): it must keep doing so.
static_assert(tessera::detail::task_arena_like<tbb::task_arena>,
              "tessera: tbb::task_arena no longer has what Schedule::run(world, arena) uses");

namespace tessera {

using detail::history_size;
using detail::PhaseGraph;
using detail::SystemEntry;
using detail::throw_system_failed;

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

Schedule::Schedule() : impl_(std::make_unique<Impl>()) {}
Schedule::Schedule(std::size_t workers) : Schedule() {
    if (workers > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
        throw Error(errc::invalid_argument,
                    "Schedule: " + std::to_string(workers) + " workers is more than an int holds");
    }
    impl_->workers = workers;
}
Schedule::~Schedule() = default;
Schedule::Schedule(Schedule&&) noexcept = default;
Schedule& Schedule::operator=(Schedule&&) noexcept = default;

Schedule Schedule::strict(std::size_t workers) {
    Schedule s(workers);
    s.impl_->strict = true;
    return s;
}

std::size_t Schedule::workers() const noexcept {
    return impl_->workers;
}

namespace {
// While a one-worker schedule runs, par_each loops stay on the calling thread too.
struct SerialScope {
    detail::Storage* s;
    bool was;
    SerialScope(World& w, bool on) noexcept
        : s(on ? &w.storage() : nullptr), was(on && w.storage().serial()) {
        if (on) s->set_serial(true);
    }
    SerialScope(const SerialScope&) = delete;
    SerialScope& operator=(const SerialScope&) = delete;
    ~SerialScope() {
        if (s != nullptr) s->set_serial(was);
    }
};
}  // namespace

const detail::ArenaRef* Schedule::Impl::own_arena() {
    if (workers < 2) return nullptr;
    if (!arena) {
        auto made = std::make_unique<tbb::task_arena>(static_cast<int>(workers));
        made->initialize();
        arena = std::move(made);
        arena_ref = detail::ArenaRef::of(*arena);
    }
    return &arena_ref;
}

SystemConfig Schedule::add_system(std::string name, std::unique_ptr<detail::SystemBase> system) {
    if (name.empty())
        throw Error(errc::invalid_argument, "Schedule::add: a system needs a non-empty name");
    if (impl_->find(name) != nullptr) {
        throw Error(errc::invalid_argument, "Schedule::add: a system named " + detail::quote(name) +
                                                " is already in the schedule");
    }
    auto entry = std::make_unique<SystemEntry>();
    entry->name = std::move(name);
    entry->system = std::move(system);
    impl_->systems.push_back(std::move(entry));
    impl_->dirty = true;
    return SystemConfig(*this, impl_->systems.size() - 1);
}

void Schedule::run(World& world, float dt) {
    run_group(world, nullptr, dt, {});
}

void Schedule::run(World& world, float dt, std::string_view group) {
    run_group(world, nullptr, dt, group);
}

void Schedule::run_group(World& world, const detail::ArenaRef* given, float dt,
                         std::string_view group) {
    // A run changes the whole world (systems, ticks, sync points): not from par_each workers.
    detail::check_not_parallel(world.storage(), "Schedule::run");
    if (given != nullptr) {
        impl_->run(world, given->prepare(given->arena), given, dt, group);
        return;
    }
    if (impl_->workers == 1) {
        const SerialScope serial(world, true);
        impl_->run(world, 1, nullptr, dt, group);
        return;
    }
    if (const detail::ArenaRef* arena = impl_->own_arena()) {
        impl_->run(world, static_cast<int>(impl_->workers), arena, dt, group);
        return;
    }
#ifdef TESSERA_TSAN
    const int workers = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
#else
    const int workers = tbb::this_task_arena::max_concurrency();
#endif
    impl_->run(world, workers, nullptr, dt, group);
}

void Schedule::run_system(std::string_view name, World& world, float dt) {
    detail::check_not_parallel(world.storage(), "Schedule::run_system");
    impl_->build();
    SystemEntry& s = impl_->get(name, "Schedule::run_system");
    if (world.tick() > World::max_tick - 2) {  // the system's tick and the one after
        throw Error(errc::limit_exceeded,
                    "Schedule::run_system: the world tick is too close to World::max_tick");
    }
    impl_->skipped = 0;
    impl_->prepare(s, world);
    impl_->check_resources(s, world, "Schedule::run_system");
    detail::Storage& storage = world.storage();
    const std::uint64_t tick = storage.tick() + 1;
    std::exception_ptr error;
    try {
        const SerialScope serial(world, impl_->workers == 1);
        if (const detail::ArenaRef* arena = impl_->own_arena())
            arena->run([&] { impl_->run_one(s, world, tick, dt, impl_->profiling); });
        else
            impl_->run_one(s, world, tick, dt, impl_->profiling);
    } catch (...) {
        error = std::current_exception();
    }
    storage.set_tick(tick + 1);
    const std::exception_ptr sync_error = impl_->sync(s, world, !error);
    if (!error) s.last_tick = tick;
    if (error)
        throw_system_failed("Schedule::run_system: system " + detail::quote(s.name) + " failed",
                            error);
    if (sync_error) {
        throw_system_failed("Schedule::run_system: applying the commands of system " +
                                detail::quote(s.name) + " failed",
                            sync_error);
    }
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

void Schedule::system_ticks(std::vector<std::uint64_t>& out) const {
    out.resize(impl_->systems.size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = impl_->systems[i]->last_tick;
}

void Schedule::set_system_ticks(std::span<const std::uint64_t> ticks) {
    if (ticks.size() != impl_->systems.size()) {
        throw Error(errc::invalid_argument,
                    "Schedule::set_system_ticks: " + std::to_string(ticks.size()) + " ticks for " +
                        std::to_string(impl_->systems.size()) +
                        " systems (systems were added or removed since they were read)");
    }
    for (std::size_t i = 0; i < ticks.size(); ++i) impl_->systems[i]->last_tick = ticks[i];
}

void Schedule::set_parallel_threshold(std::nullopt_t) noexcept {
    impl_->threshold = std::nullopt;
}

void Schedule::set_threshold_ns(std::int64_t ns) noexcept {
    impl_->threshold = std::chrono::nanoseconds(ns);
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

SystemConfig& SystemConfig::group(std::string_view name) {
    entry(*schedule_->impl_, index_).group = std::string(name);
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

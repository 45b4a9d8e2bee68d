// Schedule::trace_to: records the system runs of a schedule's next frames and writes them as
// Chrome trace-event JSON (the format chrome://tracing and ui.perfetto.dev open): one complete
// event ("ph": "X") per system run, ts and dur in microseconds, pid 1, tid the worker thread.
#include "schedule_trace.hpp"

#include "schedule_impl.hpp"

#include <tbb/task_arena.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <set>
#include <utility>

namespace tessera {
namespace detail {

Trace::Trace(std::string path, std::size_t frames) : path_(std::move(path)), frames_(frames) {
    if (frames == 0) {
        throw Error(errc::invalid_argument, "Schedule::trace_to: 0 frames to trace to " +
                                                quote(path_) + " (give 1 or more)");
    }
    file_ = std::fopen(path_.c_str(), "wb");
    if (file_ == nullptr) {
        throw Error(errc::invalid_argument, "Schedule::trace_to: cannot open " + quote(path_) +
                                                " for writing: " + std::strerror(errno));
    }
}

Trace::~Trace() {
    if (file_ == nullptr) return;
    try {
        write();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor reports nothing
    }
    if (file_ != nullptr) std::fclose(file_);
}

void Trace::begin_frame() noexcept {
    caller_ = std::this_thread::get_id();
    if (!started_) {
        started_ = true;
        origin_ = Clock::now();
    }
}

int Trace::track() noexcept {
    const int index = tbb::this_task_arena::current_thread_index();
    if (index >= 0) return index;
    // Outside oneTBB's arenas: the thread that runs the frame (a one-worker schedule), or a
    // plain thread of the ThreadSanitizer build's executor.
    const std::thread::id me = std::this_thread::get_id();
    if (me == caller_) return 0;
    const auto it = std::find(lanes_.begin(), lanes_.end(), me);
    if (it != lanes_.end()) return static_cast<int>(it - lanes_.begin()) + 1;
    lanes_.push_back(me);
    return static_cast<int>(lanes_.size());
}

void Trace::record(const std::string& name, Phase phase, Clock::time_point start,
                   Clock::time_point end) noexcept {
    try {
        const std::lock_guard lock(mutex_);
        const auto ns = [](Clock::duration d) {
            return static_cast<std::int64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
        };
        events_.push_back(Event{name, phase, done_, ns(start - origin_), ns(end - start), track()});
    } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory, the run is not recorded
    }
}

void Trace::write() {
    // Microseconds, to the nanosecond.
    const auto us = [](std::int64_t ns) { return static_cast<double>(ns) / 1000.0; };
    nlohmann::json events = nlohmann::json::array();
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", 1},
                      {"tid", 0},
                      {"args", {{"name", "tessera schedule"}}}});
    std::set<int> tracks;
    for (const Event& e : events_) tracks.insert(e.track);
    for (const int t : tracks) {
        events.push_back({{"name", "thread_name"},
                          {"ph", "M"},
                          {"pid", 1},
                          {"tid", t},
                          {"args", {{"name", "worker " + std::to_string(t)}}}});
    }
    for (const Event& e : events_) {
        events.push_back({{"name", e.name},
                          {"cat", phase_name(e.phase)},
                          {"ph", "X"},
                          {"ts", us(e.start_ns)},
                          {"dur", us(e.duration_ns)},
                          {"pid", 1},
                          {"tid", e.track},
                          {"args", {{"frame", e.frame}}}});
    }
    const nlohmann::json doc = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
    const std::string text = doc.dump() + "\n";
    std::FILE* f = std::exchange(file_, nullptr);
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok) {
        throw Error(errc::invalid_argument,
                    "Schedule::trace_to: cannot write the trace to " + quote(path_));
    }
}

}  // namespace detail

void Schedule::trace_to(const std::string& path, std::size_t frames) {
    auto next = std::make_unique<detail::Trace>(path, frames);
    // A trace in progress is written first, with the frames it has.
    if (std::unique_ptr<detail::Trace> previous = std::exchange(impl_->trace, nullptr))
        previous->write();
    impl_->trace = std::move(next);
}

void Schedule::Impl::run(World& w, int workers, const detail::ArenaRef* arena, float dt,
                         std::string_view group) {
    if (trace == nullptr) [[likely]] {
        run_frame(w, workers, arena, dt, group);
        return;
    }
    tracing = trace.get();
    tracing->begin_frame();
    std::exception_ptr error;
    try {
        run_frame(w, workers, arena, dt, group);
    } catch (...) {
        error = std::current_exception();
    }
    tracing = nullptr;
    if (trace->end_frame()) {
        // The last traced frame: the file is written now. A failed frame's error comes first.
        const std::unique_ptr<detail::Trace> done = std::move(trace);
        if (error == nullptr) done->write();
    }
    if (error != nullptr) std::rethrow_exception(error);
}

}  // namespace tessera

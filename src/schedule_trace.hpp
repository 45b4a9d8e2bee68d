// Schedule::trace_to: the Chrome trace-event recorder of a schedule's frames. The schedule
// (src/schedule_run.cpp) calls `record` after each system run of a traced frame, from the
// thread that ran it; src/schedule_trace.cpp writes the JSON.
#pragma once

#include <tessera/schedule.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tessera::detail {

/// The runs of a trace in progress and the file they go to (opened when the trace starts, so a
/// bad path is reported then).
class Trace {
public:
    using Clock = std::chrono::steady_clock;

    /// Opens `path` for writing. @throws Error(invalid_argument) naming it when it can't be.
    Trace(std::string path, std::size_t frames);
    /// Writes what was recorded when `write` has not run (errors ignored), closes the file.
    ~Trace();
    Trace(const Trace&) = delete;
    Trace& operator=(const Trace&) = delete;

    /// A traced frame starts on the calling thread (track 0 where oneTBB gives it no index).
    void begin_frame() noexcept;
    /// A traced frame ended; true when it was the last one (then `write`).
    bool end_frame() noexcept { return ++done_ >= frames_; }
    /// Records one system run: thread-safe, never throws (a run it can't store is dropped).
    void record(const std::string& name, Phase phase, Clock::time_point start,
                Clock::time_point end) noexcept;
    /// Writes the JSON and closes the file. @throws Error(invalid_argument) naming the path when
    /// writing fails.
    void write();

private:
    struct Event {
        std::string name;
        Phase phase;
        std::uint64_t frame;
        std::int64_t start_ns;  ///< from the first traced frame's start
        std::int64_t duration_ns;
        int track;
    };
    int track() noexcept;  // under mutex_

    std::string path_;
    std::FILE* file_ = nullptr;
    std::size_t frames_;
    std::size_t done_ = 0;
    bool started_ = false;
    Clock::time_point origin_{};
    std::thread::id caller_;
    std::mutex mutex_;
    std::vector<Event> events_;
    std::vector<std::thread::id> lanes_;  ///< threads outside oneTBB's arenas, tracks 1, 2, ...
};

}  // namespace tessera::detail

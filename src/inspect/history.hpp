// The Systems tab's charts (internal, not API): per frame, the frame time and the entity and
// archetype counts (always: a few stores per `update`), and each system's time (read from
// `Schedule::stats` only while someone watches: for `watch_for` after a GET /api/history).
// World thread only.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {
class Schedule;
}

namespace tessera::detail::inspector {

/// The last `capacity` frames, as `update` saw them.
class FrameHistory {
public:
    /// Frames kept.
    static constexpr std::size_t capacity = 300;
    /// How long after a GET /api/history the systems' times keep being recorded.
    static constexpr std::chrono::seconds watch_for{10};

    /// Records frame `frame` (its time `ms`, the counts) and, while watched, the time of each
    /// system of `schedule` that ran since the previous record.
    void record(std::uint64_t frame, double ms, std::size_t entities, std::size_t archetypes,
                Schedule* schedule, std::chrono::steady_clock::time_point now);

    /// Starts (or extends) the watch: system times are recorded until `now + watch_for`.
    void watch(std::chrono::steady_clock::time_point now) { watched_until_ = now + watch_for; }

    /// {"first_frame", "frames", "frame_ms": [...], "entities": [...], "archetypes": [...],
    /// "systems": [{"name", "ns": [... null where not recorded]}]}, oldest first, the arrays
    /// aligned.
    [[nodiscard]] nlohmann::json to_json() const;

private:
    struct Sample {
        std::uint64_t frame = 0;
        double ms = 0;
        std::uint64_t entities = 0;
        std::uint64_t archetypes = 0;
    };
    /// One system's times, aligned with `samples_` (-1: not recorded).
    struct Series {
        std::string name;
        std::vector<std::int64_t> ns;
        std::uint64_t runs = 0;  ///< its run count at the previous record
        bool seen = false;       ///< listed by the last `stats()`
    };

    std::vector<Sample> samples_;  ///< a ring once full
    std::size_t next_ = 0;         ///< the slot the next record takes
    std::vector<Series> systems_;
    std::chrono::steady_clock::time_point watched_until_{};
};

}  // namespace tessera::detail::inspector

// The charts' frame history (history.hpp).
#include "history.hpp"

#include <tessera/schedule.hpp>
#include <tessera/system_stats.hpp>

#include <algorithm>

namespace tessera::detail::inspector {

using json = nlohmann::json;

void FrameHistory::record(std::uint64_t frame, double ms, std::size_t entities,
                          std::size_t archetypes, Schedule* schedule,
                          std::chrono::steady_clock::time_point now) {
    const std::size_t slot = next_;
    const Sample sample{frame, ms, entities, archetypes};
    if (samples_.size() < capacity)
        samples_.push_back(sample);
    else
        samples_[slot] = sample;
    next_ = (next_ + 1) % capacity;
    for (Series& s : systems_) {
        if (s.ns.size() < samples_.size()) s.ns.resize(samples_.size(), -1);
        s.ns[slot] = -1;
        s.seen = false;
    }
    if (schedule == nullptr || now >= watched_until_) return;
    for (const SystemStats& st : schedule->stats()) {
        auto it = std::find_if(systems_.begin(), systems_.end(),
                               [&](const Series& s) { return s.name == st.name; });
        if (it == systems_.end()) {
            // New to the charts: its time shows from its next run on.
            systems_.push_back(
                Series{st.name, std::vector<std::int64_t>(samples_.size(), -1), st.runs, true});
            continue;
        }
        if (st.runs > it->runs) it->ns[slot] = st.last.count();
        it->runs = st.runs;
        it->seen = true;
    }
    // Systems the schedule no longer has go once nothing of theirs is left to draw.
    std::erase_if(systems_, [](const Series& s) {
        return !s.seen &&
               std::all_of(s.ns.begin(), s.ns.end(), [](std::int64_t v) { return v < 0; });
    });
}

json FrameHistory::to_json() const {
    const std::size_t n = samples_.size();
    const std::size_t oldest = n < capacity ? 0 : next_;
    json ms = json::array(), entities = json::array(), archetypes = json::array();
    for (std::size_t i = 0; i < n; ++i) {
        const Sample& s = samples_[(oldest + i) % n];
        ms.push_back(s.ms);
        entities.push_back(s.entities);
        archetypes.push_back(s.archetypes);
    }
    json systems = json::array();
    for (const Series& series : systems_) {
        json ns = json::array();
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t at = (oldest + i) % n;
            const std::int64_t v = at < series.ns.size() ? series.ns[at] : -1;
            ns.push_back(v < 0 ? json(nullptr) : json(v));
        }
        systems.push_back({{"name", series.name}, {"ns", std::move(ns)}});
    }
    return {{"first_frame", n == 0 ? 0 : samples_[oldest].frame},
            {"frames", n},
            {"capacity", capacity},
            {"frame_ms", std::move(ms)},
            {"entities", std::move(entities)},
            {"archetypes", std::move(archetypes)},
            {"systems", std::move(systems)}};
}

}  // namespace tessera::detail::inspector

/// @file system_stats.hpp
/// `SystemStats`, what `Schedule::stats` reports about each system. Its own header because its
/// times are `std::chrono::nanoseconds`: schedule.hpp (and tessera.hpp) stay without `<chrono>`.
#pragma once

#include <tessera/schedule.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

/// What `Schedule::stats` reports about one system.
struct SystemStats {
    std::string name;             ///< the system's name
    Phase phase = Phase::update;  ///< the phase it runs in
    std::size_t position = 0;     ///< in its phase's deterministic order
    bool enabled = true;          ///< off systems don't run (`Schedule::enable`)
    bool exclusive = false;       ///< takes `World&` without declared access: runs alone
    /// Component names it reads / writes (deduced and declared), then "resource <T>" entries.
    std::vector<std::string> reads;
    /// Component names it writes, then "resource <T>" entries.
    std::vector<std::string> writes;
    std::uint64_t runs = 0;  ///< runs timed while profiling was on
    /// Over its last (up to) 128 timed runs; zero before the first.
    std::chrono::nanoseconds last{0};
    std::chrono::nanoseconds median{0};  ///< median of those runs
    std::chrono::nanoseconds p99{0};     ///< 99th percentile of those runs
};

}  // namespace tessera

// Shared pieces of the tessera benchmark suite (docs/benchmarks.md, "How the figures are
// made", defines each scenario): components, constants, the aligned allocator used by the raw
// baselines, and small helpers for timing and RSS.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <new>
#include <string_view>
#include <vector>

#include <unistd.h>

namespace tessera_bench {

// Components of the scenarios: 8 bytes for Position and Velocity, 4 for A and B.
struct Position {
    float x, y;
};
struct Velocity {
    float dx, dy;
};
struct A {
    float v;
};
struct B {
    float v;
};
struct Data {
    float v;
};
/// Column-major 4x4 matrix (heavy_compute).
struct Transform {
    float m[16];
};
struct Rotation {
    float x, y, z;
};
/// A component no scenario uses: the `*_unrelated_observer` variants observe it, so their
/// world has a subscription that never fires (the cost of observers to the code that does not
/// use them).
struct Unrelated {
    int v;
};

/// Observers on a scenario's world: `tessera` (none), `tessera_unrelated_observer` (one on a
/// type the scenario never touches), `tessera_observed` (one that fires on every item).
enum class Observed { none, unrelated, every };

/// Entity count of every scenario unless said otherwise, in the standard run.
inline constexpr std::size_t kN = 1'000'000;
/// Entity count given by `--tessera-n=<count>` (main.cpp) for a size sweep; 0 in the standard
/// run. Read it through entity_count().
inline std::size_t sweep_n = 0;

/// Entity count of a scenario that scales with the sweep, whose standard size is `standard`:
/// the sweep's count when one is given, else `standard`. Scenarios whose size is the point of
/// the scenario (iter_frag, heavy_compute, frame_overhead) keep their own constants. Copy it
/// into a local before a hot loop (the global would be reloaded after every opaque call).
inline std::size_t entity_count(std::size_t standard = kN) {
    return sweep_n != 0 ? sweep_n : standard;
}

/// Time step of the iteration scenarios.
inline constexpr float kDt = 1.0f / 60.0f;
/// Entity count of add_remove.
inline constexpr std::size_t kAddRemoveN = 10'000;
/// Seed of every shuffle.
inline constexpr unsigned kSeed = 42;
/// Iterations of the setup-heavy scenarios (one fresh world each).
inline constexpr benchmark::IterationCount kSetupIterations = 5;
/// Column alignment policy of the library: the raw baselines allocate the same way, since array
/// placement alone can change a simple loop's speed several times (docs/benchmarks.md).
inline constexpr std::size_t kColumnAlignment = 64;

/// std::allocator replacement aligning every block to kColumnAlignment.
template <class T>
struct AlignedAllocator {
    using value_type = T;

    AlignedAllocator() noexcept = default;
    template <class U>
    AlignedAllocator(const AlignedAllocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{kColumnAlignment}));
    }
    void deallocate(T* p, std::size_t) noexcept {
        ::operator delete (p, std::align_val_t{kColumnAlignment});
    }

    template <class U>
    friend bool operator==(const AlignedAllocator&, const AlignedAllocator<U>&) noexcept {
        return true;
    }
};

/// The raw baselines' arrays.
template <class T>
using AlignedVector = std::vector<T, AlignedAllocator<T>>;

/// Resident set size of this process in bytes (second field of /proc/self/statm), or -1.
inline long long resident_bytes() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) return -1;
    long long size = 0;
    long long resident = -1;
    if (std::fscanf(f, "%lld %lld", &size, &resident) != 2) resident = -1;
    std::fclose(f);
    return resident < 0 ? -1 : resident * static_cast<long long>(sysconf(_SC_PAGESIZE));
}

/// Command-line flag that turns the binary into a memory-scenario child (see memory.cpp): the
/// memory figures are taken in a freshly exec'd process so that the heap state is "default
/// glibc, process start" whatever ran before.
inline constexpr std::string_view kMemoryChildFlag = "--tessera-memory-child=";

/// Body of a memory child: creates entity_count() entities with the given variant ("raw" or
/// "tessera") and prints "<rss growth in bytes> <entity count> <seconds>" on stdout. Returns the
/// exit status.
int memory_child(std::string_view variant);

/// Wall-clock stopwatch for manual timing (UseManualTime).
class Stopwatch {
public:
    Stopwatch() : start_(std::chrono::steady_clock::now()) {}
    /// Seconds since construction.
    [[nodiscard]] double seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }

private:
    std::chrono::steady_clock::time_point start_;
};

/// Items processed (one item = one entity, or one add+remove pair: one per entity) and the
/// `entities` counter: the scenario's entity count, the x axis of tools/bench_report.py's plots.
inline void set_items(benchmark::State& state, std::size_t entities) {
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(entities));
    state.counters["entities"] = static_cast<double>(entities);
}

/// The setup-heavy benchmarks registered so far: main.cpp raises their iteration count for a
/// sweep at small N (see setup_iterations).
inline std::vector<benchmark::internal::Benchmark*>& setup_heavy_benchmarks() {
    static std::vector<benchmark::internal::Benchmark*> all;
    return all;
}

/// Iterations of the setup-heavy scenarios for `n` entities: kSetupIterations from N up; below N,
/// kSetupIterations x N / n, so that a run covers as many entities as at N (5 fresh worlds of
/// 1,000 entities take microseconds: too short to time).
inline benchmark::IterationCount setup_iterations(std::size_t n) {
    return kSetupIterations * static_cast<benchmark::IterationCount>(n < kN ? kN / n : 1);
}

/// Registers a setup-heavy scenario: one fresh world per iteration, timed by hand.
inline void setup_heavy(benchmark::internal::Benchmark* b) {
    b->UseManualTime()->Iterations(kSetupIterations)->Unit(benchmark::kMillisecond);
    setup_heavy_benchmarks().push_back(b);
}

/// Registers a scenario over a world built once, timed in real time.
inline void steady(benchmark::internal::Benchmark* b) {
    b->UseRealTime()->Unit(benchmark::kMillisecond);
}

/// Registers a scenario over a world built once whose iterations time only part of their body
/// with a Stopwatch (SetIterationTime). PauseTiming/ResumeTiming would do the same, but they
/// read the process CPU clock through system calls, and on these VMs (kernel page-table
/// isolation without PCID) every system call empties the TLB: a sub-millisecond figure would
/// include refilling it, and the timer's own cost (about 2 us a pause).
inline void steady_manual(benchmark::internal::Benchmark* b) {
    b->UseManualTime()->Unit(benchmark::kMillisecond);
}

}  // namespace tessera_bench

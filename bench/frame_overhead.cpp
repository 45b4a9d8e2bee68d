// frame_overhead: what a schedule costs per system when the systems do nothing. 20 systems
// with no parameters in one phase (`update`), each only incrementing its own counter (so the
// check can see that every system ran once per frame); one iteration = one
// `Schedule::run(world, arena)` on an empty world. Item = one system run (20 per frame).
//
// Variants: `tessera` = a `tbb::task_arena(1)`; `tessera_par` = a `tbb::task_arena(2)` with the
// schedule's default, automatic parallel choice (these systems take far less than scheduling
// tasks costs, so after one parallel try the phase runs inline, trying parallel again ever more
// rarely, and the figure includes the cost of timing the systems and the phase to decide
// that); `tessera_par_always` = the same with the threshold at zero, so the 20 systems really
// spread over both workers (the cost of the parallel path per system). Raw baseline: the same
// 20 callables called in turn through `std::function<void()>` (one indirect call each): a
// floor, not an equivalent (no phases, ticks, sync point or event update).
#include "common.hpp"

#include <tessera/tessera.hpp>

#include <tbb/task_arena.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace tessera_bench {
namespace {

inline constexpr std::size_t kFrameSystems = 20;

/// Whether every counter equals `frames`.
bool all_ran(const std::array<std::uint64_t, kFrameSystems>& counts, std::uint64_t frames) {
    for (const std::uint64_t c : counts) {
        if (c != frames) return false;
    }
    return true;
}

void frame_overhead_raw(benchmark::State& state) {
    std::array<std::uint64_t, kFrameSystems> counts{};
    std::array<std::function<void()>, kFrameSystems> systems;
    for (std::size_t k = 0; k < kFrameSystems; ++k) systems[k] = [c = &counts[k]] { ++*c; };
    std::uint64_t frames = 0;
    for (auto _ : state) {
        for (const std::function<void()>& s : systems) s();
        ++frames;
        benchmark::ClobberMemory();
    }
    if (!all_ran(counts, frames)) state.SkipWithError("frame_overhead/raw: a system did not run");
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kFrameSystems));
}

/// `always`: parallel threshold zero (the phase runs on the workers however short it is).
void frame_overhead_run(benchmark::State& state, int workers, bool always = false) {
    tessera::World world;
    std::array<std::uint64_t, kFrameSystems> counts{};
    tessera::Schedule schedule;
    for (std::size_t k = 0; k < kFrameSystems; ++k)
        schedule.add("empty" + std::to_string(k), [c = &counts[k]] { ++*c; });
    if (always) schedule.set_parallel_threshold(std::chrono::nanoseconds{0});
    tbb::task_arena arena(workers);

    std::uint64_t frames = 0;
    schedule.run(world, arena);  // builds the schedule, outside the timing
    ++frames;
    if (!all_ran(counts, frames)) {
        state.SkipWithError("frame_overhead/tessera: a system did not run in the first frame");
        return;
    }
    for (auto _ : state) {
        schedule.run(world, arena);
        ++frames;
        benchmark::ClobberMemory();
    }
    if (!all_ran(counts, frames))
        state.SkipWithError("frame_overhead/tessera: a system did not run once per frame");
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kFrameSystems));
}

void frame_overhead_tessera(benchmark::State& state) {
    frame_overhead_run(state, 1);
}
void frame_overhead_tessera_par(benchmark::State& state) {
    frame_overhead_run(state, 2);
}
void frame_overhead_tessera_par_always(benchmark::State& state) {
    frame_overhead_run(state, 2, true);
}

BENCHMARK(frame_overhead_raw)
    ->Name("frame_overhead/raw")
    ->Apply(steady)
    ->Unit(benchmark::kNanosecond);
BENCHMARK(frame_overhead_tessera)
    ->Name("frame_overhead/tessera")
    ->Apply(steady)
    ->Unit(benchmark::kNanosecond);
BENCHMARK(frame_overhead_tessera_par)
    ->Name("frame_overhead/tessera_par")
    ->Apply(steady)
    ->Unit(benchmark::kNanosecond);
BENCHMARK(frame_overhead_tessera_par_always)
    ->Name("frame_overhead/tessera_par_always")
    ->Apply(steady)
    ->Unit(benchmark::kNanosecond);

}  // namespace
}  // namespace tessera_bench

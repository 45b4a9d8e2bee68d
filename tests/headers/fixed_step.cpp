// fixed_step.hpp alone, with schedule.hpp for the Schedule it drives.
#include <tessera/fixed_step.hpp>
#include <tessera/schedule.hpp>

namespace ts = tessera;

int header_fixed_step() {
    ts::World w;
    ts::Schedule s(1);
    int runs = 0;
    s.add("count", [&runs](ts::World&) { ++runs; });
    ts::FixedStep step(4.0, ts::FixedStepOptions{.max_frames = 2});
    if (step.run(s, w, 0.5) != 2 || runs != 2) return 1;
    if (step.run(1.0, [&runs](float) { ++runs; }) != 2 || runs != 4) return 2;
    if (step.dropped_frames() != 2 || step.remainder() != 0.0 || step.alpha() != 0.0) return 3;
    if (step.hz() != 4.0 || step.step() != 0.25 || step.max_frames() != 2 || step.frames() != 4)
        return 4;
    step.reset();
    return 0;
}

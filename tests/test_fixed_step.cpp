// FixedStep (fixed_step.hpp): frames per call, the remainder and alpha, the cap on frames per
// call and the time it drops, errors, and the schedule form.
#include <tessera/fixed_step.hpp>
#include <tessera/tessera.hpp>

#include "common/error_of.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <vector>

namespace ts = tessera;
using ts::test::error_of;

namespace {

struct Counter {
    int frames = 0;
    float dt_sum = 0.0f;
};

}  // namespace

TEST(FixedStep, RunsWholeFramesAndKeepsTheRemainder) {
    ts::FixedStep step(4.0);  // 0.25 s, exact in binary
    EXPECT_DOUBLE_EQ(step.step(), 0.25);
    EXPECT_DOUBLE_EQ(step.hz(), 4.0);
    std::vector<float> steps;
    const auto frame = [&](float s) { steps.push_back(s); };

    EXPECT_EQ(step.run(0.1, frame), 0u);
    EXPECT_DOUBLE_EQ(step.remainder(), 0.1);
    EXPECT_EQ(step.run(0.2, frame), 1u);  // 0.3: one frame, 0.05 left
    EXPECT_NEAR(step.remainder(), 0.05, 1e-12);
    EXPECT_EQ(step.run(0.7, frame), 3u);  // 0.75: three frames
    EXPECT_NEAR(step.remainder(), 0.0, 1e-12);
    EXPECT_EQ(step.run(0.0, frame), 0u);
    EXPECT_EQ(step.frames(), 4u);
    ASSERT_EQ(steps.size(), 4u);
    for (float s : steps) EXPECT_EQ(s, 0.25f);
    EXPECT_EQ(step.dropped_frames(), 0u);
}

TEST(FixedStep, ExactMultiplesOfARoundedStepRunExactly) {
    // 1/60 is not exact in binary; 60 calls of dt = 1/60 must give 60 frames, never 59 or a
    // double frame, and calls of 2/60 two frames each.
    ts::FixedStep step(60.0);
    std::size_t n = 0;
    for (int i = 0; i < 600; ++i) {
        const std::size_t ran = step.run(1.0 / 60.0, [](float) {});
        EXPECT_EQ(ran, 1u) << "call " << i;
        n += ran;
    }
    EXPECT_EQ(n, 600u);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(step.run(2.0 / 60.0, [](float) {}), 2u);
    EXPECT_LT(step.remainder(), step.step());
}

TEST(FixedStep, AlphaIsTheRemainderOverTheStep) {
    ts::FixedStep step(10.0);  // 0.1 s
    step.run(0.125, [](float) {});
    EXPECT_NEAR(step.remainder(), 0.025, 1e-12);
    EXPECT_NEAR(step.alpha(), 0.25, 1e-9);
    step.run(0.05, [](float) {});
    EXPECT_NEAR(step.alpha(), 0.75, 1e-9);
    EXPECT_GE(step.alpha(), 0.0);
    EXPECT_LT(step.alpha(), 1.0);
}

TEST(FixedStep, CapsFramesPerCallAndDropsTheExcess) {
    ts::FixedStep step(4.0, {.max_frames = 3});
    EXPECT_EQ(step.max_frames(), 3u);
    int frames = 0;
    // 2.6 s is 10 frames and 0.1 s: 3 run, 7 dropped, the 0.1 s kept.
    EXPECT_EQ(step.run(2.6, [&](float) { ++frames; }), 3u);
    EXPECT_EQ(frames, 3);
    EXPECT_EQ(step.dropped_frames(), 7u);
    EXPECT_NEAR(step.remainder(), 0.1, 1e-9);
    // The stall does not spill into the next call.
    EXPECT_EQ(step.run(0.15, [&](float) { ++frames; }), 1u);
    EXPECT_NEAR(step.remainder(), 0.0, 1e-9);
    // Exactly the cap runs without dropping.
    EXPECT_EQ(step.run(0.75, [&](float) { ++frames; }), 3u);
    EXPECT_EQ(step.dropped_frames(), 7u);
    EXPECT_EQ(step.frames(), 7u);
}

TEST(FixedStep, DefaultCapIsEight) {
    ts::FixedStep step(100.0);
    EXPECT_EQ(step.max_frames(), 8u);
    EXPECT_EQ(step.run(10.0, [](float) {}), 8u);
    EXPECT_EQ(step.dropped_frames(), 992u);
    EXPECT_LT(step.remainder(), step.step());
}

TEST(FixedStep, AnEnormousDtKeepsTheInvariants) {
    ts::FixedStep step(1000.0);
    EXPECT_EQ(step.run(1e300, [](float) {}), 8u);
    EXPECT_GT(step.dropped_frames(), 0u);
    EXPECT_GE(step.remainder(), 0.0);
    EXPECT_LT(step.remainder(), step.step());
}

TEST(FixedStep, RejectsABadRate) {
    EXPECT_EQ(error_of([] { ts::FixedStep s(0.0); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([] { ts::FixedStep s(-30.0); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([] { ts::FixedStep s(std::numeric_limits<double>::infinity()); }),
              ts::errc::invalid_argument);
    EXPECT_EQ(error_of([] { ts::FixedStep s(std::numeric_limits<double>::quiet_NaN()); }),
              ts::errc::invalid_argument);
    EXPECT_EQ(error_of([] { ts::FixedStep s(60.0, {.max_frames = 0}); }),
              ts::errc::invalid_argument);
}

TEST(FixedStep, RejectsABadDtAndChangesNothing) {
    ts::FixedStep step(4.0);
    step.run(0.3, [](float) {});
    const double before = step.remainder();
    int frames = 0;
    const auto frame = [&](float) { ++frames; };
    EXPECT_EQ(error_of([&] { step.run(-0.1, frame); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { step.run(std::numeric_limits<double>::quiet_NaN(), frame); }),
              ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { step.run(std::numeric_limits<double>::infinity(), frame); }),
              ts::errc::invalid_argument);
    EXPECT_EQ(frames, 0);
    EXPECT_EQ(step.remainder(), before);
    EXPECT_EQ(step.frames(), 1u);
}

TEST(FixedStep, AThrowingFrameSpendsItsTimeAndKeepsTheRest) {
    ts::FixedStep step(4.0);
    int calls = 0;
    EXPECT_THROW(step.run(1.0,
                          [&](float) {
                              if (++calls == 2) throw std::runtime_error("frame failed");
                          }),
                 std::runtime_error);
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(step.frames(), 2u);
    EXPECT_NEAR(step.remainder(), 0.5, 1e-12);  // the two frames after it
    EXPECT_EQ(step.run(0.0, [&](float) { ++calls; }), 2u);
    EXPECT_EQ(calls, 4);
}

TEST(FixedStep, ResetForgetsTimeAndCounts) {
    ts::FixedStep step(4.0, {.max_frames = 1});
    step.run(1.1, [](float) {});
    step.reset();
    EXPECT_EQ(step.remainder(), 0.0);
    EXPECT_EQ(step.frames(), 0u);
    EXPECT_EQ(step.dropped_frames(), 0u);
}

TEST(FixedStep, RunsAScheduleWithTheStepAsDt) {
    ts::World world;
    world.insert_resource(Counter{});
    ts::Schedule schedule(1);
    schedule.add("count", [](ts::ResMut<Counter> c, float dt) {
        ++c->frames;
        c->dt_sum += dt;
    });
    ts::FixedStep step(50.0);  // 0.02 s
    EXPECT_EQ(step.run(schedule, world, 0.05), 2u);
    EXPECT_EQ(step.run(schedule, world, 0.01), 1u);
    EXPECT_EQ(step.run(schedule, world, 0.0), 0u);
    EXPECT_EQ(world.resource<Counter>().frames, 3);
    EXPECT_NEAR(world.resource<Counter>().dt_sum, 0.06f, 1e-6f);
    EXPECT_EQ(error_of([&] { step.run(schedule, world, -1.0); }), ts::errc::invalid_argument);
    EXPECT_EQ(world.resource<Counter>().frames, 3);
}

/// @file fixed_step.hpp
/// `FixedStep`: runs a schedule (or any callable) at a fixed tick rate from variable frame
/// times. Opt-in: `tessera.hpp` does not include it.
///
/// Each `run(..., dt)` adds `dt` seconds to an accumulator and runs as many whole frames of
/// `step() = 1 / hz` seconds as it holds, at most `FixedStepOptions::max_frames` of them; the
/// rest of the time stays for the next call (`remainder()`, and `alpha()` to interpolate the
/// rendering between the last two fixed frames). When more than `max_frames` frames are due
/// (a long stall: a debugger break, a loading hitch), the excess whole frames are dropped and
/// counted by `dropped_frames()`, so a slow frame never makes the next one slower still (no
/// "spiral of death"); the fraction of a frame stays in `remainder()`.
///
/// Time is kept in double precision. A frame is due when the accumulator reaches the step
/// within a relative 1e-9, so a `dt` that is the step, or a whole multiple of it, runs exactly
/// that many frames despite the rounding of `1 / hz`.
#pragma once

#include <tessera/fwd.hpp>

#include <cstddef>
#include <cstdint>

namespace tessera {

class Schedule;

/// Options of a `FixedStep`.
struct FixedStepOptions {
    /// The most frames one `run` runs; the excess whole frames are dropped (`dropped_frames()`).
    /// At least 1.
    std::size_t max_frames = 8;
};

/// A fixed-rate driver: turns variable frame times into 0..max_frames fixed frames per call.
/// Holds no reference to a schedule or world; copyable. Not thread-safe.
class FixedStep {
public:
    /// A driver of `hz` frames per second (a step of `1 / hz` seconds).
    /// @throws Error(invalid_argument) when `hz` is not a finite number above zero, or
    /// `options.max_frames` is 0.
    explicit FixedStep(double hz, FixedStepOptions options = {});

    /// Adds `dt` seconds and runs the frames due: `schedule.run(world, step())` each
    /// (`float` as `Schedule::run` takes it). Returns the frames run.
    /// @throws Error(invalid_argument) when `dt` is negative or not finite (nothing changes);
    /// whatever `Schedule::run` throws. A frame whose run throws has spent its time; the time
    /// of the frames after it stays in the accumulator for the next call.
    std::size_t run(Schedule& schedule, World& world, double dt);

    /// The same with any callable taking the step in seconds (`float`), e.g. a
    /// `net::Rollback`'s `advance`: `step.run(dt, [&](float s) { rb.advance(s, input); })`.
    /// Returns the frames run. @throws like `run(schedule, world, dt)`.
    template <class F>
    std::size_t run(double dt, F&& frame) {
        const std::size_t due = begin(dt);
        for (std::size_t i = 0; i < due; ++i) {
            spend_frame();
            frame(static_cast<float>(step_));
        }
        return due;
    }

    /// Frames per second, as given.
    [[nodiscard]] double hz() const noexcept { return hz_; }
    /// The fixed step: `1 / hz()` seconds.
    [[nodiscard]] double step() const noexcept { return step_; }
    /// The most frames one `run` runs.
    [[nodiscard]] std::size_t max_frames() const noexcept { return max_frames_; }
    /// The seconds accumulated and not yet run: at least 0, below `step()`.
    [[nodiscard]] double remainder() const noexcept { return remainder_; }
    /// `remainder() / step()`, in [0, 1): how far the present is between the last fixed frame
    /// and the next, to interpolate what is drawn.
    [[nodiscard]] double alpha() const noexcept { return remainder_ / step_; }
    /// Frames run (begun) since construction or `reset()`.
    [[nodiscard]] std::uint64_t frames() const noexcept { return frames_; }
    /// Whole frames dropped because more than `max_frames()` were due in one call.
    [[nodiscard]] std::uint64_t dropped_frames() const noexcept { return dropped_; }
    /// Forgets the accumulated time and the counts.
    void reset() noexcept;

private:
    /// Checks `dt`, adds it, drops what is over the cap; the number of frames due.
    std::size_t begin(double dt);
    /// Takes one step off the accumulator.
    void spend_frame() noexcept;

    double hz_;
    double step_;
    std::size_t max_frames_;
    double remainder_ = 0.0;
    std::uint64_t frames_ = 0;
    std::uint64_t dropped_ = 0;
};

}  // namespace tessera

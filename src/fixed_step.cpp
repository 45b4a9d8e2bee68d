// FixedStep: the accumulator of fixed-rate frames (fixed_step.hpp).
#include <tessera/error.hpp>
#include <tessera/fixed_step.hpp>
#include <tessera/schedule.hpp>

#include <cmath>
#include <cstdio>
#include <string>

namespace tessera {

namespace {

/// Frames whose time is within this fraction of a step count as due, so that `dt == step`
/// (or k steps) runs exactly 1 (k) frames although `1 / hz` is rounded.
constexpr double due_slack = 1e-9;

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

}  // namespace

FixedStep::FixedStep(double hz, FixedStepOptions options)
    : hz_(hz), step_(1.0 / hz), max_frames_(options.max_frames) {
    if (!std::isfinite(hz) || hz <= 0.0) {
        throw Error(errc::invalid_argument,
                    "FixedStep: hz is " + number(hz) + "; it must be a finite number above 0");
    }
    if (max_frames_ == 0) {
        throw Error(errc::invalid_argument, "FixedStep: max_frames is 0; it must be at least 1");
    }
}

std::size_t FixedStep::run(Schedule& schedule, World& world, double dt) {
    return run(dt, [&](float step) { schedule.run(world, step); });
}

void FixedStep::reset() noexcept {
    remainder_ = 0.0;
    frames_ = 0;
    dropped_ = 0;
}

std::size_t FixedStep::begin(double dt) {
    if (!std::isfinite(dt) || dt < 0.0) {
        throw Error(errc::invalid_argument, "FixedStep::run: dt is " + number(dt) +
                                                " seconds; it must be finite and not negative");
    }
    const double total = remainder_ + dt;
    const double whole = std::floor(total / step_ + due_slack);
    if (whole <= static_cast<double>(max_frames_)) {
        remainder_ = total;
        return static_cast<std::size_t>(whole);
    }
    // A stall: run the cap, drop the other whole frames, keep the fraction of one (clamped:
    // with an enormous dt the subtraction has no digits left).
    const double excess = whole - static_cast<double>(max_frames_);
    constexpr double most = 1.8e19;  // below 2^64
    dropped_ += excess >= most ? UINT64_MAX - dropped_ : static_cast<std::uint64_t>(excess);
    double fraction = total - whole * step_;
    if (!(fraction >= 0.0)) fraction = 0.0;
    if (fraction >= step_) fraction = 0.0;
    remainder_ = fraction + static_cast<double>(max_frames_) * step_;
    return max_frames_;
}

void FixedStep::spend_frame() noexcept {
    remainder_ -= step_;
    // The slack lets a frame run with a hair less than a step accumulated.
    if (remainder_ < 0.0) remainder_ = 0.0;
    ++frames_;
}

}  // namespace tessera

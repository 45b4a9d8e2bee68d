// The untyped ring of net::Rollback<Input> (net/rollback.hpp): the world's snapshot and the
// schedule's system ticks before each frame, the replay of a correction and its all-or-nothing
// commit.
#include <tessera/error.hpp>
#include <tessera/net/rollback.hpp>
#include <tessera/schedule.hpp>
#include <tessera/snapshot.hpp>
#include <tessera/world.hpp>

#include <memory>
#include <string>
#include <utility>

namespace tessera::detail {

RollbackRing::RollbackRing(World& world, Schedule& schedule, net::RollbackOptions options,
                           std::string_view input_name)
    : world_(&world), schedule_(&schedule) {
    name_ = "Rollback<";
    name_ += input_name;
    name_ += '>';
    if (options.frames == 0) {
        throw Error(errc::invalid_argument,
                    name_ + ": frames is 0; the ring must hold at least one frame");
    }
    steps_.resize(options.frames);
    replay_.resize(options.frames);
}

std::size_t RollbackRing::checked_slot(std::uint64_t frame, const char* op) const {
    if (frame >= oldest() && frame < frame_) return slot(frame);
    std::string msg = name_ + "::" + op + ": frame " + std::to_string(frame);
    if (frame_ == 0) {
        msg += " is not held: no frame has run yet";
    } else {
        msg += frame >= frame_ ? " has not run yet" : " is older than the ring holds";
        msg +=
            "; it holds frames " + std::to_string(oldest()) + " to " + std::to_string(frame_ - 1);
    }
    throw Error(errc::invalid_argument, msg);
}

std::uint64_t RollbackRing::hash(std::uint64_t frame) const {
    const std::size_t s = checked_slot(frame, "hash");
    // The last frame's state is the world itself, which may still change before the next
    // frame: hashed each time. An older frame's is the next frame's snapshot: hashed once.
    if (frame + 1 == frame_) return state_hash(*world_);
    const Step& step = steps_[s];
    if (!step.hashed) {
        if (scratch_ == nullptr) scratch_ = std::make_unique<World>(world_->memory_resource());
        scratch_->restore(steps_[slot(frame + 1)].before);
        step.hash = state_hash(*scratch_);
        step.hashed = true;
    }
    return step.hash;
}

void RollbackRing::restore_inputs(const RollbackInputs& in) noexcept {
    if (frame_ == 0) return;  // before the first frame there was none
    // A copy, which may throw: then the frame's error is still the one reported.
    try {
        in.set(*world_, frame_ - 1, in.stored(in.owner, slot(frame_ - 1)));
    } catch (...) {  // NOLINT(bugprone-empty-catch): the frame's error is the one to report
    }
}

void RollbackRing::run_frame(std::uint64_t frame, float dt, const void* value,
                             const RollbackInputs& in) {
    in.set(*world_, frame, value);
    schedule_->run(*world_, dt);
}

std::uint64_t RollbackRing::advance(float dt, const void* value, const RollbackInputs& in) {
    Snapshot before = world_->snapshot();
    schedule_->system_ticks(ticks_);
    try {
        run_frame(frame_, dt, value, in);
    } catch (...) {
        world_->restore(before);
        schedule_->set_system_ticks(ticks_);
        restore_inputs(in);
        throw;
    }
    // Nothing below throws: the frame commits whole (the old step's tick vector becomes the
    // scratch, so a steady state allocates no vector).
    Step& step = steps_[slot(frame_)];
    step.before = std::move(before);
    step.ticks.swap(ticks_);
    step.dt = dt;
    step.hashed = false;
    return frame_++;
}

void RollbackRing::correct(std::uint64_t frame, const void* value, const RollbackInputs& in) {
    const std::size_t first = checked_slot(frame, "correct");
    if (steps_[first].ticks.size() != schedule_->size()) {
        throw Error(errc::invalid_argument,
                    name_ + "::correct: frame " + std::to_string(frame) + " ran with " +
                        std::to_string(steps_[first].ticks.size()) +
                        " systems and the schedule now has " + std::to_string(schedule_->size()) +
                        "; a replay needs the schedule the frames ran with");
    }
    // The present, to put back if the replay fails: the ring holds only the states before
    // each frame, not the one after the last.
    const Snapshot present = world_->snapshot();
    schedule_->system_ticks(ticks_);
    try {
        world_->restore(steps_[first].before);
        schedule_->set_system_ticks(steps_[first].ticks);
        for (std::uint64_t f = frame; f < frame_; ++f) {
            const std::size_t s = slot(f);
            Step& step = replay_[s];
            if (f != frame) {
                step.before = world_->snapshot();
                schedule_->system_ticks(step.ticks);
            }
            step.dt = steps_[s].dt;
            run_frame(f, step.dt, f == frame ? value : in.stored(in.owner, s), in);
        }
    } catch (...) {
        for (Step& step : replay_) step.before = Snapshot();
        world_->restore(present);
        schedule_->set_system_ticks(ticks_);
        restore_inputs(in);
        throw;
    }
    // Commit: the replayed steps replace the old ones (frame's own "before" is unchanged), and
    // the old snapshots are freed; the tick vectors swap, keeping their capacity.
    for (std::uint64_t f = frame; f < frame_; ++f) {
        const std::size_t s = slot(f);
        if (f != frame) {
            std::swap(steps_[s].before, replay_[s].before);
            steps_[s].ticks.swap(replay_[s].ticks);
        }
        steps_[s].hashed = false;
        replay_[s].before = Snapshot();
    }
}

}  // namespace tessera::detail

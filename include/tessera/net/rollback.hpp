/// @file net/rollback.hpp
/// `net::Rollback<Input>`: rollback and replay for peers that simulate in lockstep. A ring of
/// world snapshots, one per recent frame, and the inputs each frame ran with; a late or
/// corrected input restores the frame it belongs to and replays the frames since. Opt-in (part
/// of net.hpp, not of tessera.hpp). The guide is docs/rollback.md.
///
/// **Frames.** Frames count from 0. `advance(dt, inputs)` runs frame `frame()`: it snapshots
/// the world (the state before the frame), sets the resource `Inputs<Input>{inputs, frame}`,
/// runs the schedule with `dt` and counts the frame. The ring holds the last
/// `RollbackOptions::frames` frames: `correct`, `inputs` and `hash` take a frame in [`oldest()`,
/// `frame()` - 1].
///
/// **Several peers.** `Input` is everything one frame runs on, for every peer: typically a
/// struct holding each player's input (`std::array<PadState, 4>`, say). A late input of one
/// player is a correction of that frame's whole `Input`: copy `inputs(f)`, change that
/// player's part, `correct(f, copy)`. A frame that has not heard from a peer runs on a
/// prediction of its input (its previous one, usually) given to `advance`.
///
/// **Determinism.** `correct` gives exactly the world (`state_hash`) of a straight run with the
/// corrected inputs when the schedule is a function of the world's state, the `Inputs`
/// resource and `dt`: what systems keep from frame to frame lives in components (snapshots
/// hold entities, components, relations, strings and change ticks, and the ring keeps the
/// schedule's system ticks, so `Added`/`Changed` filters replay exactly; resources, events
/// and the rest of the schedule's state are not kept). docs/rollback.md lists what that rules
/// out.
///
/// **Cost.** `advance` adds one `World::snapshot` to the schedule's run. `correct` of `k`
/// frames back: one snapshot of the present (for the strong guarantee), one `World::restore`,
/// then `k` runs and `k - 1` snapshots. Snapshots allocate (from the world's memory resource);
/// the ring holds `frames` of them. `hash` costs a `state_hash` (about 100 ns per entity, more
/// than a snapshot) the first time it is asked for a frame, plus a restore into a scratch world
/// for a frame before the last.
#pragma once

#include <tessera/component.hpp>
#include <tessera/fwd.hpp>
#include <tessera/resource.hpp>
#include <tessera/schedule.hpp>
#include <tessera/snapshot.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera {
namespace net {

/// The inputs of the frame being run: the resource `Rollback<Input>` sets before each frame it
/// runs or replays (read it with `Res<net::Inputs<Input>>`).
template <class Input>
struct Inputs {
    Input value;              ///< what `advance` or `correct` gave for this frame
    std::uint64_t frame = 0;  ///< the frame being run, from 0
};

/// Options of a `Rollback`.
struct RollbackOptions {
    /// Frames the ring holds: how far back `correct` reaches. At least 1.
    std::size_t frames = 8;
};

}  // namespace net

namespace detail {

/// The untyped ring behind `net::Rollback<Input>`: snapshots, steps, hashes and the replay.
/// The typed layer keeps the inputs and lends them through `RollbackInputs`.
class RollbackRing {
public:
    /// How the ring reaches the typed layer's inputs: `set` puts `value` (an `Input`) in the
    /// world's `Inputs` resource for `frame`; `stored` is the `Input` kept in `slot`.
    struct RollbackInputs {
        const void* owner;
        void (*set)(World& world, std::uint64_t frame, const void* value);
        const void* (*stored)(const void* owner, std::size_t slot) noexcept;
    };

    RollbackRing(World& world, Schedule& schedule, net::RollbackOptions options,
                 std::string_view input_name);

    /// Runs frame `frame()` with `value`; returns its number. Strong guarantee.
    std::uint64_t advance(float dt, const void* value, const RollbackInputs& inputs);
    /// Replays from `frame` with `value` for it. Strong guarantee.
    void correct(std::uint64_t frame, const void* value, const RollbackInputs& inputs);

    [[nodiscard]] std::uint64_t frame() const noexcept { return frame_; }
    [[nodiscard]] std::uint64_t oldest() const noexcept {
        return frame_ > capacity() ? frame_ - capacity() : 0;
    }
    [[nodiscard]] std::size_t capacity() const noexcept { return steps_.size(); }
    [[nodiscard]] std::size_t slot(std::uint64_t frame) const noexcept {
        return static_cast<std::size_t>(frame % capacity());
    }
    /// `slot(frame)` of a frame the ring holds. @throws Error(invalid_argument) naming `op`,
    /// the frame and the range held.
    [[nodiscard]] std::size_t checked_slot(std::uint64_t frame, const char* op) const;
    [[nodiscard]] std::uint64_t hash(std::uint64_t frame) const;

private:
    struct Step {
        Snapshot before;                   ///< the world before the frame
        std::vector<std::uint64_t> ticks;  ///< the schedule's system ticks before it
        float dt = 0.0f;                   ///< the dt it ran with
        mutable std::uint64_t hash = 0;    ///< state_hash after it, once asked for
        mutable bool hashed = false;       ///< `hash` is set
    };
    void run_frame(std::uint64_t frame, float dt, const void* value, const RollbackInputs& in);
    /// Puts the last frame's inputs back in the `Inputs` resource after a failed frame.
    void restore_inputs(const RollbackInputs& in) noexcept;

    World* world_;
    Schedule* schedule_;
    std::string name_;  ///< "Rollback<Input>", for messages
    std::uint64_t frame_ = 0;
    std::vector<Step> steps_;                 ///< slot(f) holds frame f
    std::vector<Step> replay_;                ///< a correct's new steps until it commits
    std::vector<std::uint64_t> ticks_;        ///< scratch: the system ticks of the present
    mutable std::unique_ptr<World> scratch_;  ///< where `hash` restores an older frame's state
};

}  // namespace detail

namespace net {

/// Rollback and replay of `world` run by `schedule` (see the file comment). Holds references to
/// both, which must outlive it; movable, not copyable. `Input` must be copyable, with a move
/// constructor and move assignment that don't throw. Not thread-safe; call it where the
/// schedule would run (never from a system).
template <class Input>
class Rollback {
    static_assert(std::is_copy_constructible_v<Input> && std::is_copy_assignable_v<Input>,
                  "tessera: a Rollback's Input must be copyable (it is kept for replays)");
    static_assert(std::is_nothrow_move_constructible_v<Input> &&
                      std::is_nothrow_move_assignable_v<Input>,
                  "tessera: a Rollback's Input must have a noexcept move constructor and move "
                  "assignment: mark them noexcept");

public:
    /// A rollback over `world` and `schedule`, at frame 0, holding `options.frames` frames.
    /// @throws Error(invalid_argument) when `options.frames` is 0.
    Rollback(World& world, Schedule& schedule, RollbackOptions options = {})
        : ring_(world, schedule, options, detail::raw_type_name<Input>()) {
        inputs_.reserve(ring_.capacity());
    }

    /// Runs frame `frame()` with `inputs`: snapshots the world, sets the resource
    /// `Inputs<Input>{inputs, frame()}` and runs the schedule with `dt`.
    /// Strong guarantee: when the schedule throws (its `Error(system_failed)`), the world, the
    /// schedule's system ticks and the `Inputs` resource are put back and the frame is not
    /// counted (the rest of the schedule's state, such as its `start` phase having run, is
    /// not).
    /// @throws whatever the snapshot or the schedule throws.
    void advance(float dt, const Input& inputs) {
        Input copy(inputs);
        const std::uint64_t frame = ring_.advance(dt, &copy, lend());
        if (inputs_.size() < ring_.capacity())
            inputs_.push_back(std::move(copy));  // reserved: no allocation, no throw
        else
            inputs_[ring_.slot(frame)] = std::move(copy);
    }

    /// A late or corrected input of `frame`: restores the world as it was before `frame`,
    /// replays it with `inputs` and the frames after it with their stored inputs and dt, up to
    /// the present. The result is the world of a straight run with these inputs.
    /// Strong guarantee: when the schedule throws during the replay, the world, the ring and
    /// the stored inputs are as before (the present is restored from a snapshot).
    /// @throws Error(invalid_argument) when `frame` is older than `oldest()` or not yet run
    /// (the message names the frame and the range held; nothing changes); whatever the
    /// schedule throws.
    void correct(std::uint64_t frame, const Input& inputs) {
        Input copy(inputs);
        ring_.correct(frame, &copy, lend());
        inputs_[ring_.slot(frame)] = std::move(copy);
    }

    /// Frames advanced: the number of the next frame.
    [[nodiscard]] std::uint64_t frame() const noexcept { return ring_.frame(); }
    /// The oldest frame the ring holds (`correct` reaches back to it): `frame() - frames`, or 0.
    [[nodiscard]] std::uint64_t oldest() const noexcept { return ring_.oldest(); }
    /// Frames the ring holds at most (`RollbackOptions::frames`).
    [[nodiscard]] std::size_t capacity() const noexcept { return ring_.capacity(); }
    /// `state_hash` of the world after `frame` (after its latest replay): of the world as the
    /// next frame found it, or of the world now for the last frame (`frame() - 1`), so changes
    /// made to the world between frames count toward the frame before them. Computed when
    /// first asked for (an older frame's state is restored into a scratch world for it), then
    /// kept until a correction replays the frame.
    /// @throws Error(invalid_argument) when the ring doesn't hold `frame`.
    [[nodiscard]] std::uint64_t hash(std::uint64_t frame) const { return ring_.hash(frame); }
    /// The inputs `frame` ran with (last given by `advance` or `correct`); valid until the ring
    /// drops the frame or a `correct` of it.
    /// @throws Error(invalid_argument) when the ring doesn't hold `frame`.
    [[nodiscard]] const Input& inputs(std::uint64_t frame) const {
        return inputs_[ring_.checked_slot(frame, "inputs")];
    }

private:
    static void set(World& world, std::uint64_t frame, const void* value) {
        const Input& in = *static_cast<const Input*>(value);
        if (auto* current = world.try_resource<Inputs<Input>>()) {
            current->value = in;
            current->frame = frame;
        } else {
            world.insert_resource(Inputs<Input>{in, frame});
        }
    }
    static const void* stored(const void* owner, std::size_t slot) noexcept {
        return &static_cast<const Rollback*>(owner)->inputs_[slot];
    }
    [[nodiscard]] detail::RollbackRing::RollbackInputs lend() const noexcept {
        return {this, &set, &stored};
    }

    detail::RollbackRing ring_;
    std::vector<Input> inputs_;  ///< ring_.slot(f) holds frame f's
};

}  // namespace net
}  // namespace tessera

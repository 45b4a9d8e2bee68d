// net::Rollback<Input> (net/rollback.hpp): frames, the Inputs resource, corrections against a
// straight run, errors, and the strong guarantee when a system throws.
//
// The model test: for each seed, a two-player game (spawns, movement, damage, despawns by
// command, dt accumulated in a component) runs under a Rollback whose every frame is advanced
// with a predicted input; the true inputs arrive late, out of order and sometimes twice or
// wrong first, as corrections at random depths within the ring. After every correction the
// reference, a fresh world and schedule run straight with the inputs the rollback now holds,
// must give the same state_hash after every frame the ring holds and for the present world;
// and at the end, with every true input delivered, the rollback's world equals the straight run
// of the true inputs. A failure names the seed.
#include <tessera/net/rollback.hpp>
#include <tessera/tessera.hpp>

#include "common/error_of.hpp"
#include "common/failing_resource.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <new>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

namespace rbtest {

struct Pos {
    std::int32_t x = 0;
    std::int32_t y = 0;
};
struct Vel {
    std::int32_t dx = 0;
    std::int32_t dy = 0;
};
struct Hp {
    std::int32_t v = 0;
};
struct Clock {
    float t = 0.0f;
};
/// Kept by a system whose Added/Changed filters see what the previous frame did.
struct Census {
    std::int64_t v = 0;
};

/// One frame's inputs for both players.
struct Pad {
    std::array<std::int32_t, 2> push{};  ///< added to every body's x (player 0) and y (player 1)
    std::int32_t spawn = 0;              ///< player 0 spawns a body at (spawn, frame) when not 0
    bool operator==(const Pad&) const = default;
};

/// What the systems saw, and a switch to make one of them throw.
struct Probe {
    std::vector<std::pair<std::uint64_t, Pad>> seen;  ///< (frame, value) of each Inputs read
    std::int64_t throw_at = -1;                       ///< "damage" throws in this frame
};

}  // namespace rbtest

TESSERA_REFLECT(rbtest::Pos, x, y)
TESSERA_REFLECT(rbtest::Vel, dx, dy)
TESSERA_REFLECT(rbtest::Hp, v)
TESSERA_REFLECT(rbtest::Clock, t)
TESSERA_REFLECT(rbtest::Census, v)

namespace ts = tessera;
using ts::test::error_of;
using namespace rbtest;

namespace {

using In = ts::net::Inputs<Pad>;

void build(ts::Schedule& s, Probe* probe) {
    s.add("spawn", [probe](ts::Res<In> in, ts::Commands cmds) {
         if (probe != nullptr) probe->seen.emplace_back(in->frame, in->value);
         if (in->value.spawn != 0) {
             const auto f = static_cast<std::int32_t>(in->frame);
             cmds.spawn(Pos{in->value.spawn, f}, Vel{(f % 3) - 1, 1}, Hp{3 + (f % 4)});
         }
     }).phase(ts::Phase::pre_update);
    s.add("move", [](ts::View<Pos&, const Vel&> bodies, ts::Res<In> in) {
        bodies.each([&](Pos& p, const Vel& v) {
            p.x += v.dx + in->value.push[0];
            p.y += v.dy + in->value.push[1];
        });
    });
    s.add("damage", [probe](ts::View<ts::Entity, Hp&, const Pos&> bodies, ts::Res<In> in,
                            ts::Commands cmds) {
         if (probe != nullptr && probe->throw_at == static_cast<std::int64_t>(in->frame))
             throw std::runtime_error("damage: injected failure");
         bodies.each([&](ts::Entity e, Hp& hp, const Pos& p) {
             hp.v -= (p.x & 1) + 1;
             if (hp.v <= 0) cmds.despawn(e);
         });
     }).after("move");
    s.add("clock",
          [](ts::View<Clock&> clocks, float dt) { clocks.each([&](Clock& c) { c.t += dt; }); });
    // Sees the bodies spawned and moved since its previous run, that is in the previous frame:
    // a replay must give it the change ticks of then.
    s.add("census", [](ts::View<const Hp&, ts::Added<Hp>> born,
                       ts::View<const Pos&, ts::Changed<Pos>> moved, ts::View<Census&> census) {
         std::int64_t n = 0;
         born.each([&](const Hp& hp) { n += 1000 + hp.v; });
         moved.each([&](const Pos& p) { n += p.x; });
         census.each([&](Census& c) { c.v = (c.v * 3 + n) % 1000003; });
     }).phase(ts::Phase::pre_update);
}

void seed_world(ts::World& w) {
    w.spawn(Clock{}, Census{});
    w.spawn(Pos{1, 1}, Vel{1, 0}, Hp{50});
    w.spawn(Pos{-4, 2}, Vel{0, -1}, Hp{7});
}

constexpr float frame_dt(std::uint64_t f) {
    return 0.015625f * static_cast<float>(1 + f % 3);  // exact in binary, varies by frame
}

/// A fresh world and schedule run straight with `inputs`: the hash after each frame.
std::vector<std::uint64_t> straight(const std::vector<Pad>& inputs) {
    ts::World w;
    seed_world(w);
    ts::Schedule s(1);
    build(s, nullptr);
    std::vector<std::uint64_t> hashes;
    for (std::uint64_t f = 0; f < inputs.size(); ++f) {
        w.insert_resource(In{inputs[f], f});
        s.run(w, frame_dt(f));
        hashes.push_back(ts::state_hash(w));
    }
    return hashes;
}

Pad random_pad(std::mt19937& rng) {
    std::uniform_int_distribution<int> push(-2, 2);
    std::uniform_int_distribution<int> coin(0, 3);
    Pad p;
    p.push = {push(rng), push(rng)};
    p.spawn = coin(rng) == 0 ? push(rng) * 5 + 11 : 0;
    return p;
}

struct Game {
    ts::World world;
    ts::Schedule schedule{1};
    Probe probe;
    explicit Game() {
        seed_world(world);
        build(schedule, &probe);
    }
};

}  // namespace

TEST(Rollback, AdvanceCountsFramesSetsInputsAndHashes) {
    Game g;
    ts::net::Rollback<Pad> rb(g.world, g.schedule, {.frames = 4});
    EXPECT_EQ(rb.frame(), 0u);
    EXPECT_EQ(rb.capacity(), 4u);
    std::vector<Pad> pads;
    for (std::uint64_t f = 0; f < 6; ++f) {
        pads.push_back(Pad{{static_cast<std::int32_t>(f), 1}, f == 2 ? 9 : 0});
        rb.advance(frame_dt(f), pads.back());
    }
    EXPECT_EQ(rb.frame(), 6u);
    EXPECT_EQ(rb.oldest(), 2u);
    ASSERT_EQ(g.probe.seen.size(), 6u);
    for (std::uint64_t f = 0; f < 6; ++f) {
        EXPECT_EQ(g.probe.seen[f].first, f);
        EXPECT_EQ(g.probe.seen[f].second, pads[f]);
    }
    EXPECT_EQ(g.world.resource<In>().frame, 5u);
    const std::vector<std::uint64_t> ref = straight(pads);
    for (std::uint64_t f = rb.oldest(); f < rb.frame(); ++f) {
        EXPECT_EQ(rb.hash(f), ref[f]) << "frame " << f;
        EXPECT_EQ(rb.inputs(f), pads[f]);
    }
    EXPECT_EQ(ts::state_hash(g.world), ref.back());
}

TEST(Rollback, CorrectReplaysWithTheNewInputAndTheStoredOnes) {
    Game g;
    ts::net::Rollback<Pad> rb(g.world, g.schedule, {.frames = 8});
    std::vector<Pad> pads(10, Pad{{1, 0}, 0});
    for (std::uint64_t f = 0; f < pads.size(); ++f) rb.advance(frame_dt(f), pads[f]);
    const std::uint64_t before = ts::state_hash(g.world);
    g.probe.seen.clear();

    pads[4] = Pad{{-2, 2}, 21};  // a late spawn changes every frame after it
    rb.correct(4, pads[4]);
    EXPECT_EQ(rb.frame(), 10u);
    EXPECT_NE(ts::state_hash(g.world), before);
    // The replay ran frames 4..9, frame 4 with the new input, the others with theirs.
    ASSERT_EQ(g.probe.seen.size(), 6u);
    for (std::uint64_t i = 0; i < 6; ++i) {
        EXPECT_EQ(g.probe.seen[i].first, 4 + i);
        EXPECT_EQ(g.probe.seen[i].second, pads[4 + i]);
    }
    EXPECT_EQ(g.world.resource<In>().frame, 9u);
    const std::vector<std::uint64_t> ref = straight(pads);
    EXPECT_EQ(ts::state_hash(g.world), ref.back());
    for (std::uint64_t f = rb.oldest(); f < rb.frame(); ++f) EXPECT_EQ(rb.hash(f), ref[f]);
    EXPECT_EQ(rb.inputs(4), pads[4]);

    // Correcting the oldest frame the ring holds (8 back) works too.
    pads[2] = Pad{{0, -1}, 7};
    rb.correct(2, pads[2]);
    EXPECT_EQ(ts::state_hash(g.world), straight(pads).back());
}

TEST(Rollback, CorrectOutsideTheRingIsInvalidAndChangesNothing) {
    Game g;
    ts::net::Rollback<Pad> rb(g.world, g.schedule, {.frames = 3});
    EXPECT_EQ(error_of([&] { rb.correct(0, Pad{}); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { (void)rb.hash(0); }), ts::errc::invalid_argument);
    for (std::uint64_t f = 0; f < 5; ++f) rb.advance(0.0f, Pad{{1, 1}, 0});
    const std::uint64_t hash = ts::state_hash(g.world);
    const std::size_t runs = g.probe.seen.size();
    for (std::uint64_t bad :
         {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{5}, std::uint64_t{99}}) {
        EXPECT_EQ(error_of([&] {
                      rb.correct(bad, Pad{{5, 5}, 3});
                  }),
                  ts::errc::invalid_argument)
            << bad;
        EXPECT_EQ(error_of([&] { (void)rb.hash(bad); }), ts::errc::invalid_argument) << bad;
        EXPECT_EQ(error_of([&] { (void)rb.inputs(bad); }), ts::errc::invalid_argument) << bad;
    }
    try {
        rb.correct(1, Pad{});
        ADD_FAILURE() << "no error";
    } catch (const ts::Error& e) {
        // The message names the frame and the range held.
        EXPECT_NE(std::string(e.what()).find("frame 1"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("2 to 4"), std::string::npos) << e.what();
    }
    EXPECT_EQ(rb.frame(), 5u);
    EXPECT_EQ(ts::state_hash(g.world), hash);
    EXPECT_EQ(g.probe.seen.size(), runs);
    EXPECT_EQ(rb.inputs(2), (Pad{{1, 1}, 0}));
}

TEST(Rollback, ZeroFramesIsInvalid) {
    Game g;
    EXPECT_EQ(error_of([&] { ts::net::Rollback<Pad> rb(g.world, g.schedule, {.frames = 0}); }),
              ts::errc::invalid_argument);
}

TEST(Rollback, AThrowDuringReplayLeavesWorldRingAndInputsAsBefore) {
    Game g;
    ts::net::Rollback<Pad> rb(g.world, g.schedule, {.frames = 8});
    std::vector<Pad> pads;
    std::mt19937 rng(7);
    for (std::uint64_t f = 0; f < 12; ++f) {
        pads.push_back(random_pad(rng));
        rb.advance(frame_dt(f), pads.back());
    }
    const std::uint64_t present = ts::state_hash(g.world);
    const std::size_t count = g.world.count();
    std::vector<std::uint64_t> hashes;
    for (std::uint64_t f = rb.oldest(); f < rb.frame(); ++f) hashes.push_back(rb.hash(f));

    g.probe.throw_at = 10;  // the replay from 6 fails in its fifth frame
    EXPECT_EQ(error_of([&] { rb.correct(6, Pad{{2, 2}, 17}); }), ts::errc::system_failed);
    EXPECT_EQ(rb.frame(), 12u);
    EXPECT_EQ(ts::state_hash(g.world), present);
    EXPECT_EQ(g.world.count(), count);
    for (std::uint64_t f = rb.oldest(); f < rb.frame(); ++f) {
        EXPECT_EQ(rb.hash(f), hashes[f - rb.oldest()]) << f;
        EXPECT_EQ(rb.inputs(f), pads[f]) << f;
    }
    EXPECT_EQ(g.world.resource<In>().frame, 11u);
    EXPECT_EQ(g.world.resource<In>().value, pads[11]);

    // Everything still works: the same correction without the failure matches a straight run.
    g.probe.throw_at = -1;
    pads[6] = Pad{{2, 2}, 17};
    rb.correct(6, pads[6]);
    const std::vector<std::uint64_t> ref = straight(pads);
    EXPECT_EQ(ts::state_hash(g.world), ref.back());
    for (std::uint64_t f = rb.oldest(); f < rb.frame(); ++f) EXPECT_EQ(rb.hash(f), ref[f]);
}

TEST(Rollback, AThrowDuringAdvanceRestoresTheWorldAndCountsNoFrame) {
    Game g;
    ts::net::Rollback<Pad> rb(g.world, g.schedule, {.frames = 4});
    std::vector<Pad> pads{Pad{{1, 0}, 5}, Pad{{0, 1}, 0}};
    rb.advance(frame_dt(0), pads[0]);
    rb.advance(frame_dt(1), pads[1]);
    const std::uint64_t hash = ts::state_hash(g.world);
    g.probe.throw_at = 2;
    EXPECT_EQ(error_of([&] { rb.advance(frame_dt(2), Pad{{3, 3}, 9}); }), ts::errc::system_failed);
    EXPECT_EQ(rb.frame(), 2u);
    EXPECT_EQ(ts::state_hash(g.world), hash);
    EXPECT_EQ(error_of([&] { (void)rb.hash(2); }), ts::errc::invalid_argument);
    EXPECT_EQ(g.world.resource<In>().frame, 1u);
    EXPECT_EQ(g.world.resource<In>().value, pads[1]);
    g.probe.throw_at = -1;
    pads.push_back(Pad{{3, 3}, 9});
    rb.advance(frame_dt(2), pads[2]);
    EXPECT_EQ(ts::state_hash(g.world), straight(pads).back());
}

TEST(Rollback, IsMovable) {
    Game g;
    ts::net::Rollback<Pad> rb(g.world, g.schedule, {.frames = 4});
    std::vector<Pad> pads{Pad{{1, 0}, 5}, Pad{{0, 1}, 0}, Pad{{2, 1}, 0}};
    for (std::uint64_t f = 0; f < pads.size(); ++f) rb.advance(frame_dt(f), pads[f]);
    ts::net::Rollback<Pad> moved(std::move(rb));
    pads[1] = Pad{{-1, -1}, 13};
    moved.correct(1, pads[1]);
    EXPECT_EQ(ts::state_hash(g.world), straight(pads).back());
}

TEST(Rollback, AFailedAllocationChangesNothing) {
    ts::test::FaultResource mr;
    ts::World world(&mr);
    seed_world(world);
    ts::Schedule schedule(1);
    build(schedule, nullptr);
    ts::net::Rollback<Pad> rb(world, schedule, {.frames = 6});
    std::mt19937 rng(3);
    std::vector<Pad> pads;
    for (std::uint64_t f = 0; f < 10; ++f) {
        pads.push_back(random_pad(rng));
        rb.advance(frame_dt(f), pads.back());
    }
    const auto state = [&] {
        std::vector<std::uint64_t> out{ts::state_hash(world), rb.frame()};
        for (std::uint64_t f = rb.oldest(); f < rb.frame(); ++f) out.push_back(rb.hash(f));
        return out;
    };
    const auto attempt = [&](const char* what, auto&& call) {
        std::size_t failures = 0;
        for (std::size_t k = 1;; ++k) {
            const std::vector<std::uint64_t> before = state();
            mr.arm(k);
            try {
                call();
                mr.disarm();
                break;
            } catch (const std::bad_alloc&) {
            } catch (const ts::Error& e) {  // a system's or a sync point's bad_alloc
                EXPECT_EQ(e.code(), ts::errc::system_failed) << what << " " << k;
            }
            mr.disarm();
            ++failures;
            ASSERT_EQ(state(), before) << what << ": allocation " << k << " failed";
            for (std::uint64_t f = rb.oldest(); f < rb.frame(); ++f)
                ASSERT_EQ(rb.inputs(f), pads[f]) << what << " " << k;
        }
        EXPECT_GT(failures, 3u) << what;  // the sweep reached past the first snapshot
    };

    const Pad late{{2, -1}, 13};
    attempt("correct", [&] { rb.correct(5, late); });
    pads[5] = late;
    EXPECT_EQ(ts::state_hash(world), straight(pads).back());

    const Pad next{{1, 1}, 7};
    attempt("advance", [&] { rb.advance(frame_dt(10), next); });
    pads.push_back(next);
    EXPECT_EQ(ts::state_hash(world), straight(pads).back());
    EXPECT_EQ(mr.bad_deallocations(), 0u);
}

class RollbackModel : public testing::TestWithParam<unsigned> {};

TEST_P(RollbackModel, CorrectionsEqualAStraightRun) {
    const unsigned seed = GetParam();
    std::mt19937 rng(seed);
    const std::size_t ring = std::uniform_int_distribution<std::size_t>(1, 8)(rng);
    const std::uint64_t frames = std::uniform_int_distribution<std::uint64_t>(10, 40)(rng);

    ts::World world;
    seed_world(world);
    ts::Schedule schedule(seed % 2 == 0 ? 1 : 2);  // one worker or two: the same worlds
    build(schedule, nullptr);
    ts::net::Rollback<Pad> rb(world, schedule, {.frames = ring});

    std::vector<Pad> truth;  // the inputs each frame should have had
    std::vector<Pad> held;   // what the rollback holds for each frame (the reference runs these)
    struct Late {
        std::uint64_t frame;
        std::uint64_t due;  // the frame count at which it arrives
    };
    std::vector<Late> pending;
    std::uniform_int_distribution<std::uint64_t> delay(0, ring);
    std::uniform_int_distribution<int> die(0, 5);

    const auto check = [&](const char* what) {
        const std::vector<std::uint64_t> ref = straight(held);
        ASSERT_EQ(ts::state_hash(world), ref.back()) << "seed " << seed << " " << what;
        for (std::uint64_t f = rb.oldest(); f < rb.frame(); ++f) {
            ASSERT_EQ(rb.hash(f), ref[f]) << "seed " << seed << " frame " << f << " " << what;
            ASSERT_EQ(rb.inputs(f), held[f]) << "seed " << seed << " frame " << f;
        }
    };
    const auto deliver = [&](std::uint64_t f) {
        if (die(rng) == 0) {  // a wrong correction first, put right at once
            const Pad wrong = random_pad(rng);
            rb.correct(f, wrong);
            held[f] = wrong;
        }
        rb.correct(f, truth[f]);
        held[f] = truth[f];
    };

    for (std::uint64_t f = 0; f < frames; ++f) {
        truth.push_back(random_pad(rng));
        // Predict: the previous frame's input as held, or the truth when it came in time.
        const bool on_time = die(rng) < 2;
        const Pad predicted = on_time ? truth[f] : (f == 0 ? Pad{} : held[f - 1]);
        rb.advance(frame_dt(f), predicted);
        held.push_back(predicted);
        if (!on_time) pending.push_back({f, f + 1 + delay(rng)});
        // Deliver what is due, in random order.
        std::shuffle(pending.begin(), pending.end(), rng);
        for (std::size_t i = 0; i < pending.size();) {
            if (pending[i].due <= rb.frame() && pending[i].frame >= rb.oldest()) {
                deliver(pending[i].frame);
                pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
                check("after a correction");
                if (testing::Test::HasFatalFailure()) return;
            } else {
                ++i;
            }
        }
        // A duplicate of an old correction now and then: harmless.
        if (die(rng) == 0 && rb.frame() > 0) {
            const std::uint64_t f2 =
                std::uniform_int_distribution<std::uint64_t>(rb.oldest(), rb.frame() - 1)(rng);
            if (held[f2] == truth[f2]) rb.correct(f2, truth[f2]);
        }
        check("after a frame");
        if (testing::Test::HasFatalFailure()) return;
    }
    // Deliver whatever is still in the ring; the rest was due after the ring had moved on.
    for (const Late& late : pending) {
        if (late.frame >= rb.oldest()) deliver(late.frame);
    }
    check("at the end");
    bool all_true = true;
    for (std::uint64_t f = 0; f < frames; ++f) all_true = all_true && held[f] == truth[f];
    if (all_true) {
        EXPECT_EQ(ts::state_hash(world), straight(truth).back()) << "seed " << seed;
    }
}

INSTANTIATE_TEST_SUITE_P(Seeds, RollbackModel, testing::Range(0u, 40u));

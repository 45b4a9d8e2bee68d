// Events<T>: double-buffered queues read through cursors, and the world's event queues.
#include <tessera/events.hpp>

#include "common/counting_resource.hpp"
#include "common/global_new_counter.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <memory_resource>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ts = tessera;
using ts::test::CountingResource;
using ts::test::Tracked;

namespace {

struct Damage {
    ts::Entity target;
    int amount = 0;
};
struct Heal {
    int amount = 0;
};
struct Seq {
    std::uint64_t id = 0;
};

template <class T>
std::vector<T> collect(const typename ts::Events<T>::Range& range) {
    return std::vector<T>(range.begin(), range.end());
}

std::vector<int> amounts(const ts::Events<Heal>::Range& range) {
    std::vector<int> out;
    for (const Heal& h : range) out.push_back(h.amount);
    return out;
}

// Records, in a log, which queue's event was destroyed (moved-from events don't count).
std::vector<int>* destroy_log = nullptr;
template <int N>
struct Ordered {
    bool live = true;
    Ordered() = default;
    Ordered(Ordered&& o) noexcept : live(std::exchange(o.live, false)) {}
    Ordered& operator=(Ordered&&) = delete;
    ~Ordered() {
        if (live && destroy_log != nullptr) destroy_log->push_back(N);
    }
};

struct ThrowingCtor {
    int v = 0;
    explicit ThrowingCtor(int x) : v(x) {
        if (x < 0) throw std::runtime_error("negative");
    }
};

using tessera::test::FailingResource;

static_assert(std::forward_iterator<ts::Events<Heal>::Range::iterator>);
static_assert(std::is_nothrow_move_constructible_v<ts::Events<std::string>>);
static_assert(!std::is_copy_constructible_v<ts::Events<Heal>>);

}  // namespace

// ---------------------------------------------------------------------------------------------
// Events<T> on its own

TEST(Events, SendThenReadInOrder) {
    ts::Events<Heal> ev;
    EXPECT_TRUE(ev.empty());
    ts::EventCursor c = ev.cursor();
    ev.send(Heal{1});
    const Heal two{2};
    ev.send(two);  // copied
    EXPECT_EQ(ev.emplace(3).amount, 3);
    EXPECT_EQ(ev.size(), 3u);
    EXPECT_EQ(ev.next_id(), 3u);
    EXPECT_EQ(ev.unread(c), 3u);
    const auto r = ev.read(c);
    EXPECT_EQ(r.size(), 3u);
    EXPECT_FALSE(r.empty());
    EXPECT_EQ(r.missed(), 0u);
    EXPECT_EQ(amounts(r), (std::vector<int>{1, 2, 3}));
    EXPECT_EQ(c.next_id(), 3u);
    EXPECT_EQ(ev.unread(c), 0u);
}

TEST(Events, EventLivesForTwoUpdates) {
    ts::Events<Heal> ev;
    ev.send(Heal{1});
    ev.update();  // update N: survives
    EXPECT_EQ(ev.size(), 1u);
    ts::EventCursor c;
    EXPECT_EQ(amounts(ev.read(c)), std::vector<int>{1});
    ev.send(Heal{2});
    ev.update();  // update N+1: 1 is dropped, 2 survives
    EXPECT_EQ(ev.size(), 1u);
    ts::EventCursor fresh;
    const auto r = ev.read(fresh);
    EXPECT_EQ(amounts(r), std::vector<int>{2});
    EXPECT_EQ(r.missed(), 1u);
    ev.update();
    EXPECT_TRUE(ev.empty());
    EXPECT_EQ(amounts(ev.read(c)), std::vector<int>{});
}

TEST(Events, CursorNeverSeesAnEventTwice) {
    ts::Events<Heal> ev;
    ts::EventCursor c = ev.cursor();
    ev.send(Heal{1});
    EXPECT_EQ(amounts(ev.read(c)), std::vector<int>{1});
    EXPECT_TRUE(ev.read(c).empty());  // nothing new
    ev.send(Heal{2});
    EXPECT_EQ(amounts(ev.read(c)), std::vector<int>{2});
    ev.update();  // 1 and 2 move to the older buffer: still not read again
    EXPECT_TRUE(ev.read(c).empty());
    ev.send(Heal{3});
    EXPECT_EQ(amounts(ev.read(c)), std::vector<int>{3});
    ev.update();
    ev.update();
    EXPECT_TRUE(ev.read(c).empty());
}

TEST(Events, CursorStartsAtOldestHeldAndCursorAtEndAtNewest) {
    ts::Events<Heal> ev;
    ev.send(Heal{1});
    ev.update();
    ev.send(Heal{2});
    ev.update();  // 1 dropped, 2 held (older)
    ev.send(Heal{3});
    ts::EventCursor oldest = ev.cursor();
    EXPECT_EQ(oldest.next_id(), 1u);
    EXPECT_EQ(ev.missed(oldest), 0u);
    EXPECT_EQ(amounts(ev.read(oldest)), (std::vector<int>{2, 3}));
    ts::EventCursor now = ev.cursor_at_end();
    EXPECT_TRUE(ev.read(now).empty());
    ev.send(Heal{4});
    EXPECT_EQ(amounts(ev.read(now)), std::vector<int>{4});
}

TEST(Events, IndependentCursors) {
    ts::Events<Heal> ev;
    ts::EventCursor a = ev.cursor();
    ts::EventCursor b = ev.cursor();
    ev.send(Heal{1});
    ev.send(Heal{2});
    EXPECT_EQ(amounts(ev.read(a)), (std::vector<int>{1, 2}));
    ev.send(Heal{3});
    ts::EventCursor c = ev.cursor();
    ts::EventCursor a_copy = a;  // cursors are values
    EXPECT_EQ(amounts(ev.read(b)), (std::vector<int>{1, 2, 3}));
    EXPECT_EQ(amounts(ev.read(a)), std::vector<int>{3});
    EXPECT_EQ(amounts(ev.read(a_copy)), std::vector<int>{3});
    EXPECT_EQ(amounts(ev.read(c)), (std::vector<int>{1, 2, 3}));
    EXPECT_EQ(a, b);
}

TEST(Events, ReaderFallingBehindSkipsDroppedEventsAndCountsThem) {
    ts::Events<Heal> ev;
    ts::EventCursor slow = ev.cursor();
    ev.send(Heal{1});
    ev.send(Heal{2});
    ev.update();
    ev.send(Heal{3});
    ev.update();  // 1, 2 dropped
    ev.send(Heal{4});
    EXPECT_EQ(ev.missed(slow), 2u);
    EXPECT_EQ(ev.missed(slow), 2u);  // asking does not move the cursor
    EXPECT_EQ(ev.unread(slow), 2u);
    const auto r = ev.read(slow);
    EXPECT_EQ(r.missed(), 2u);
    EXPECT_EQ(amounts(r), (std::vector<int>{3, 4}));
    EXPECT_EQ(ev.missed(slow), 0u);
    ev.update();
    ev.update();
    ev.update();
    const auto r2 = ev.read(slow);
    EXPECT_EQ(r2.missed(), 0u) << "everything was read before it was dropped";
    EXPECT_TRUE(r2.empty());
}

TEST(Events, ClearDropsEverythingAndCursorsCountItAsMissed) {
    ts::Events<Heal> ev;
    ts::EventCursor c = ev.cursor();
    ev.send(Heal{1});
    ev.update();
    ev.send(Heal{2});
    ev.clear();
    EXPECT_TRUE(ev.empty());
    EXPECT_EQ(ev.next_id(), 2u);
    const auto r = ev.read(c);
    EXPECT_TRUE(r.empty());
    EXPECT_EQ(r.missed(), 2u);
    ev.send(Heal{3});
    EXPECT_EQ(amounts(ev.read(c)), std::vector<int>{3});
}

TEST(Events, CursorAheadOfTheQueueReadsNothing) {
    ts::Events<Heal> busy;
    for (int i = 0; i < 10; ++i) busy.send(Heal{i});
    ts::EventCursor foreign = busy.cursor_at_end();
    ts::Events<Heal> ev;
    ev.send(Heal{1});
    const auto r = ev.read(foreign);
    EXPECT_TRUE(r.empty());
    EXPECT_EQ(r.missed(), 0u);
    EXPECT_EQ(ev.missed(foreign), 0u);
    EXPECT_EQ(foreign.next_id(), 1u);  // now at the end of `ev`
    ev.send(Heal{2});
    EXPECT_EQ(amounts(ev.read(foreign)), std::vector<int>{2});
}

TEST(Events, RangeSpansBothBuffersAndWorksWithAlgorithms) {
    ts::Events<Heal> ev;
    ts::EventCursor c = ev.cursor();
    for (int i = 0; i < 5; ++i) ev.send(Heal{i});
    ts::EventCursor mid = ev.cursor();
    (void)ev.read(mid);
    ev.update();
    for (int i = 5; i < 8; ++i) ev.send(Heal{i});
    const auto r = ev.read(c);  // 5 old + 3 new
    ASSERT_EQ(r.size(), 8u);
    EXPECT_EQ(std::distance(r.begin(), r.end()), 8);
    auto it = r.begin();
    EXPECT_EQ(it->amount, 0);
    EXPECT_EQ((it++)->amount, 0);
    EXPECT_EQ(it->amount, 1);
    EXPECT_EQ(std::count_if(r.begin(), r.end(), [](const Heal& h) { return h.amount % 2 == 0; }),
              4);
    EXPECT_EQ(amounts(ev.read(mid)), (std::vector<int>{5, 6, 7}));  // only the newer buffer
    const ts::Events<Heal>::Range empty;
    EXPECT_TRUE(empty.empty());
    EXPECT_EQ(empty.begin(), empty.end());
}

TEST(Events, EmplaceWithThrowingConstructorLeavesQueueUnchanged) {
    ts::Events<ThrowingCtor> ev;
    ev.emplace(1);
    EXPECT_THROW(ev.emplace(-1), std::runtime_error);
    EXPECT_EQ(ev.size(), 1u);
    ts::EventCursor c;
    const auto r = ev.read(c);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r.begin()->v, 1);
    EXPECT_EQ(ev.next_id(), 1u);
}

TEST(Events, SendThatFailsToAllocateLeavesQueueUnchanged) {
    FailingResource mr;
    ts::Events<std::string> ev(&mr);
    ev.send("a long string that does not fit in the small buffer: " + std::string(40, 'x'));
    ev.update();
    ev.send("b");
    mr.fail = true;
    // Strings longer than the small buffer allocate from the default resource, not `mr`: the
    // only failing allocation is the vector's growth.
    std::size_t sent = 0;
    bool threw = false;
    for (int i = 0; i < 64 && !threw; ++i) {
        try {
            ev.send(std::string(1, char('c' + i % 20)));
            ++sent;
        } catch (const std::bad_alloc&) {
            threw = true;
        }
    }
    mr.fail = false;
    ASSERT_TRUE(threw);
    EXPECT_EQ(ev.size(), 2 + sent);
    ts::EventCursor c;
    std::vector<std::string> got = collect<std::string>(ev.read(c));
    ASSERT_EQ(got.size(), 2 + sent);
    EXPECT_EQ(got[1], "b");
    for (std::size_t i = 0; i < sent; ++i)
        EXPECT_EQ(got[2 + i], std::string(1, char('c' + i % 20)));
    ev.send("after");  // usable afterwards
    EXPECT_EQ(ev.next_id(), 3 + sent);
}

// Model-based: many frames, a random number of sends per frame, readers at different cadences.
// The reference model knows only the lifetime rule: an event sent in frame f (before update f)
// can be read until update f+1, i.e. during frames f and f+1.
TEST(Events, RandomizedReadersMatchReferenceModel) {
    for (std::uint32_t seed = 1; seed <= 20; ++seed) {
        SCOPED_TRACE(seed);
        std::mt19937 rng(seed);
        ts::Events<Seq> ev;
        std::vector<int> sent_frame;  // by event id
        struct Reader {
            ts::EventCursor cursor;
            std::uint64_t model_next = 0;  // the model's cursor: first id not yet accounted for
            std::vector<std::uint64_t> seen;
            std::uint64_t missed = 0;
        };
        Reader every;    // reads at least once per frame
        Reader random;   // reads every 1-3 frames
        Reader skipper;  // reads every 3rd frame: always falls behind
        int random_next = 0;

        const auto read = [&](Reader& r, int frame) {
            const auto range = ev.read(r.cursor);
            std::uint64_t expected_missed = 0;
            std::vector<std::uint64_t> expected;
            for (std::uint64_t id = r.model_next; id < sent_frame.size(); ++id) {
                if (sent_frame[id] >= frame - 1)
                    expected.push_back(id);
                else
                    ++expected_missed;
            }
            r.model_next = sent_frame.size();
            std::vector<std::uint64_t> got;
            for (const Seq& s : range) got.push_back(s.id);
            ASSERT_EQ(got, expected) << "frame " << frame;
            ASSERT_EQ(range.missed(), expected_missed) << "frame " << frame;
            ASSERT_EQ(range.size(), expected.size());
            r.seen.insert(r.seen.end(), got.begin(), got.end());
            r.missed += range.missed();
        };

        const int frames = 300;
        for (int frame = 0; frame < frames; ++frame) {
            const int sends = std::uniform_int_distribution<int>(0, 6)(rng);
            const int every_at = std::uniform_int_distribution<int>(0, sends)(rng);
            for (int i = 0; i <= sends; ++i) {
                if (i == every_at) read(every, frame);
                if (i < sends) {
                    ev.send(Seq{sent_frame.size()});
                    sent_frame.push_back(frame);
                }
                if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) read(every, frame);
            }
            if (frame == random_next) {
                read(random, frame);
                random_next = frame + std::uniform_int_distribution<int>(1, 3)(rng);
            }
            if (frame % 3 == 0) read(skipper, frame);
            const auto held = std::count_if(sent_frame.begin(), sent_frame.end(),
                                            [&](int f) { return f >= frame - 1; });
            ASSERT_EQ(ev.size(), static_cast<std::size_t>(held));
            ev.update();
        }
        read(every, frames);
        // The reader that read every frame saw every event exactly once, in order.
        ASSERT_EQ(every.seen.size(), sent_frame.size());
        for (std::size_t i = 0; i < every.seen.size(); ++i) ASSERT_EQ(every.seen[i], i);
        EXPECT_EQ(every.missed, 0u);
        // The others saw each event at most once, in order, and seen + missed = all.
        for (Reader* r : {&random, &skipper}) {
            read(*r, frames);
            EXPECT_TRUE(std::is_sorted(r->seen.begin(), r->seen.end()));
            EXPECT_EQ(std::adjacent_find(r->seen.begin(), r->seen.end()), r->seen.end());
            EXPECT_EQ(r->seen.size() + r->missed, sent_frame.size());
        }
        EXPECT_GT(skipper.missed, 0u);
    }
}

// ---------------------------------------------------------------------------------------------
// The world's queues

TEST(WorldEvents, SendEventMakesTheQueueOnFirstUse) {
    ts::World w;
    EXPECT_FALSE(w.has_resource<ts::Events<Damage>>());
    const ts::Entity target = w.spawn();
    w.send_event(Damage{target, 5});
    const Damage d{target, 7};
    w.send_event(d);  // copied
    ts::Events<Damage>& ev = w.events<Damage>();
    EXPECT_EQ(&ev, &w.events<Damage>());
    EXPECT_EQ(&ev, w.try_resource<ts::Events<Damage>>());
    EXPECT_EQ(ev.memory_resource(), w.memory_resource());
    auto cursor = ev.cursor();
    std::vector<int> got;
    for (const Damage& dmg : ev.read(cursor)) {
        EXPECT_EQ(dmg.target, target);
        got.push_back(dmg.amount);
    }
    EXPECT_EQ(got, (std::vector<int>{5, 7}));
}

TEST(WorldEvents, MoveOnlyEvents) {
    ts::World w;
    auto p = std::make_unique<int>(3);
    w.send_event(std::move(p));
    auto& ev = w.events<std::unique_ptr<int>>();
    ts::EventCursor c;
    const auto r = ev.read(c);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(**r.begin(), 3);
}

TEST(WorldEvents, UpdateEventsUpdatesEveryQueueInCreationOrder) {
    std::vector<int> log;
    destroy_log = &log;
    {
        ts::World w;
        w.events<Ordered<2>>();  // made first
        w.send_event(Ordered<0>{});
        w.send_event(Ordered<1>{});
        w.events<Ordered<2>>().emplace();
        w.send_event(Heal{9});
        w.update_events();  // every event survives one update
        EXPECT_TRUE(log.empty());
        EXPECT_EQ(w.events<Ordered<0>>().size(), 1u);
        EXPECT_EQ(w.events<Ordered<2>>().size(), 1u);
        EXPECT_EQ(w.events<Heal>().size(), 1u);
        w.update_events();  // and is dropped by the second, queue by queue in creation order
        EXPECT_EQ(log, (std::vector<int>{2, 0, 1}));
        EXPECT_TRUE(w.events<Heal>().empty());
        w.send_event(Ordered<1>{});
    }
    EXPECT_EQ(log, (std::vector<int>{2, 0, 1, 1}));  // the world destroys what is left
    destroy_log = nullptr;
}

TEST(WorldEvents, RemovedQueueIsNoLongerUpdatedAndComesBackFresh) {
    ts::World w;
    w.send_event(Heal{1});
    w.send_event(Damage{ts::Entity::null(), 2});
    ts::EventCursor c = w.events<Heal>().cursor();
    EXPECT_TRUE(w.remove_resource<ts::Events<Heal>>());
    w.update_events();  // must not touch the destroyed queue (ASan checks)
    w.update_events();
    EXPECT_TRUE(w.events<Damage>().empty());
    EXPECT_FALSE(w.has_resource<ts::Events<Heal>>());
    ts::Events<Heal>& fresh = w.events<Heal>();
    EXPECT_TRUE(fresh.empty());
    EXPECT_EQ(fresh.next_id(), 0u);
    fresh.send(Heal{3});
    w.update_events();  // the fresh queue is updated again
    w.send_event(Heal{4});
    EXPECT_EQ(amounts(fresh.read(c)), (std::vector<int>{3, 4}));
    w.update_events();
    w.update_events();
    EXPECT_TRUE(fresh.empty());
}

TEST(WorldEvents, QueueInsertedOrReplacedAsResourceIsUpdated) {
    CountingResource mr;
    {
        ts::World w(&mr);
        w.insert_resource(ts::Events<Heal>(w.memory_resource()));
        w.send_event(Heal{1});
        w.update_events();
        w.update_events();
        EXPECT_TRUE(w.events<Heal>().empty());
        // Replacing the queue destroys the old one; only the new one is updated from now on.
        ts::Events<Heal> replacement(w.memory_resource());
        replacement.send(Heal{2});
        ts::Events<Heal>& now = w.insert_resource(std::move(replacement));
        EXPECT_EQ(&now, &w.events<Heal>());
        w.update_events();
        EXPECT_EQ(now.size(), 1u);
        w.update_events();
        EXPECT_TRUE(now.empty());
    }
    EXPECT_EQ(mr.outstanding, 0u);
}

TEST(WorldEvents, UpdateEventsWithoutQueuesAllocatesNothing) {
    CountingResource mr;
    ts::World w(&mr);
    const std::size_t before = mr.allocations;
    const std::size_t global_before = ts::test::global_news;
    w.update_events();
    EXPECT_EQ(mr.allocations, before);
    EXPECT_EQ(ts::test::global_news, global_before);
    w.insert_resource(Heal{1});  // resources but no queue
    w.update_events();
    EXPECT_EQ(w.resource<Heal>().amount, 1);
}

TEST(WorldEvents, NonTrivialEventsAreDestroyedExactlyOnce) {
    Tracked::live = 0;
    Tracked::constructed = 0;
    CountingResource mr;
    {
        ts::World w(&mr);
        ts::EventCursor c;
        for (int frame = 0; frame < 10; ++frame) {
            for (int i = 0; i < frame; ++i) w.send_event(Tracked{i});
            w.send_event(std::string(50, char('a' + frame)));
            for (const Tracked& t : w.events<Tracked>().read(c)) EXPECT_GE(t.value, 0);
            w.update_events();
            EXPECT_EQ(Tracked::live, static_cast<int>(w.events<Tracked>().size()));
        }
        w.send_event(Tracked{99});
        EXPECT_GT(Tracked::live, 0);
        ts::World moved(std::move(w));  // the queues move with the world
        EXPECT_EQ(Tracked::live, static_cast<int>(moved.events<Tracked>().size()));
        EXPECT_EQ(moved.events<std::string>().size(), 1u);  // the last frame's
    }
    EXPECT_EQ(Tracked::live, 0) << "constructed " << Tracked::constructed;
    EXPECT_EQ(mr.outstanding, 0u);
}

TEST(WorldEvents, MemoryComesFromTheWorldResource) {
    CountingResource mr;
    {
        ts::World w(&mr);
        const std::size_t before = mr.allocations;
        for (int i = 0; i < 100; ++i) w.send_event(Heal{i});
        EXPECT_GT(mr.allocations, before);
        EXPECT_EQ(w.events<Heal>().memory_resource(), &mr);
        EXPECT_TRUE(w.remove_resource<ts::Events<Heal>>());
        w.send_event(Seq{1});
    }
    EXPECT_EQ(mr.outstanding, 0u);
    EXPECT_EQ(mr.allocations, mr.deallocations);
}

TEST(WorldEvents, SteadyStateSendUpdateReadAllocatesNothing) {
    CountingResource mr;
    ts::World w(&mr);
    ts::Events<Heal>& heals = w.events<Heal>();
    ts::Events<Seq>& seqs = w.events<Seq>();
    ts::EventCursor a = heals.cursor();
    ts::EventCursor b = seqs.cursor();
    const auto frame = [&](int n, long& sum) {
        for (int i = 0; i < n; ++i) {
            w.send_event(Heal{i});
            seqs.emplace(Seq{static_cast<std::uint64_t>(i)});
        }
        for (const Heal& h : heals.read(a)) sum += h.amount;
        for (const Seq& s : seqs.read(b)) sum += static_cast<long>(s.id);
        w.update_events();
    };
    long sum = 0;
    // Warm-up: both buffers of each queue grow to the largest frame.
    for (int i = 0; i < 4; ++i) frame(64, sum);

    const std::size_t resource_before = mr.allocations;
    const std::size_t global_before = ts::test::global_news;
    for (int i = 0; i < 1000; ++i) frame(i % 65, sum);
    const std::size_t resource_allocs = mr.allocations - resource_before;
    const std::size_t global_allocs = ts::test::global_news - global_before;
    EXPECT_EQ(resource_allocs, 0u);
    EXPECT_EQ(global_allocs, 0u);
    EXPECT_GT(sum, 0);
}

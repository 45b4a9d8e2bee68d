// assert.hpp: TESSERA_ASSERT checks the preconditions the fast paths don't check otherwise; a
// program may replace it with its own macro, defined before any tessera header (here: one that
// prints its own line and aborts). The default check is tested in test_chunk.cpp.
#include <cstdio>
#include <cstdlib>

#define TESSERA_ASSERT(cond, msg)  \
    ((cond) ? static_cast<void>(0) \
            : (std::fprintf(stderr, "engine assert: %s\n", msg), std::abort()))

#include <tessera/tessera.hpp>

#include <gtest/gtest.h>

namespace ts = tessera;

namespace {
struct Pos {
    float x = 0;
};
struct Vel {
    float v = 0;
};

void read_absent_ticks() {
    ts::World w;
    (void)w.spawn(Pos{1});
    for (ts::Chunk& c : w.query<const Pos&>().chunks()) (void)c.changed_since<Vel>(0, 0);
}

void mark_past_the_end() {
    ts::World w;
    (void)w.spawn(Pos{1});
    for (ts::Chunk& c : w.query<const Pos&>().chunks()) c.mark_changed<Pos>(1);
}
}  // namespace

TEST(AssertDeathTest, AUserMacroReplacesTheCheck) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(read_absent_ticks(), "engine assert: .*lacks T");
    EXPECT_DEATH(mark_past_the_end(), "engine assert: .*past the chunk's end");
}

TEST(Assert, ValidCallsPassTheCheck) {
    ts::World w;
    (void)w.spawn(Pos{1});
    std::size_t rows = 0;
    for (ts::Chunk& c : w.query<const Pos&>().chunks()) {
        rows += c.count();
        EXPECT_FALSE(c.changed_since<Pos>(0, w.tick()));
        c.mark_changed<Pos>(0);
    }
    EXPECT_EQ(rows, 1u);
}

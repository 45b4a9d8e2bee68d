#include <tessera/entity.hpp>

#include <gtest/gtest.h>

#include <sstream>
#include <unordered_set>

namespace ts = tessera;

TEST(Entity, NullIsMaxIndexGenerationZeroAndFalse) {
    constexpr ts::Entity n = ts::Entity::null();
    static_assert(n.index == 0xFFFFFFFFu && n.generation == 0);
    EXPECT_FALSE(static_cast<bool>(n));
    EXPECT_EQ(ts::Entity{}, n);
    EXPECT_TRUE(static_cast<bool>(ts::Entity{0, 0}));
    // The null test looks at the index only.
    EXPECT_FALSE(static_cast<bool>(ts::Entity{0xFFFFFFFFu, 7}));
}

TEST(Entity, BitsPackIndexLowGenerationHigh) {
    const ts::Entity e{42, 3};
    EXPECT_EQ(e.to_bits(), (std::uint64_t{3} << 32) | 42u);
    EXPECT_EQ(ts::Entity::from_bits(e.to_bits()), e);
    EXPECT_EQ(ts::Entity::from_bits(0xFFFFFFFFull), ts::Entity::null());
    const ts::Entity big{0xFFFFFFFEu, 0xFFFFFFFFu};
    EXPECT_EQ(ts::Entity::from_bits(big.to_bits()), big);
}

TEST(Entity, EqualityAndOrdering) {
    EXPECT_EQ((ts::Entity{1, 2}), (ts::Entity{1, 2}));
    EXPECT_NE((ts::Entity{1, 2}), (ts::Entity{1, 3}));
    EXPECT_NE((ts::Entity{1, 2}), (ts::Entity{2, 2}));
    EXPECT_LT((ts::Entity{5, 1}), (ts::Entity{1, 2}));  // generation is the high half
    EXPECT_LT((ts::Entity{1, 2}), (ts::Entity{2, 2}));
}

TEST(Entity, HashSpreadsHandles) {
    std::unordered_set<ts::Entity> set;
    for (std::uint32_t i = 0; i < 1000; ++i) {
        set.insert(ts::Entity{i, 1});
        set.insert(ts::Entity{i, 2});
    }
    EXPECT_EQ(set.size(), 2000u);
    EXPECT_TRUE(set.contains(ts::Entity{999, 2}));
    EXPECT_FALSE(set.contains(ts::Entity{999, 3}));
    EXPECT_NE(std::hash<ts::Entity>{}(ts::Entity{1, 1}), std::hash<ts::Entity>{}(ts::Entity{1, 2}));
}

TEST(Entity, PrintsIndexColonGeneration) {
    std::ostringstream os;
    os << ts::Entity{42, 3} << ' ' << ts::Entity::null();
    EXPECT_EQ(os.str(), "42:3 null");
}

// Model-based randomized test of the World API.
//
// A long random sequence of spawn / instantiate / instantiate_many / despawn / add / remove /
// set / get / try_get / has / get_mut / set_if_changed / advance_tick calls is applied both to a
// tessera::World and to a trivial reference model (an unordered_map from entity bits to one
// std::optional per component type). Every kFullCheckEvery steps the whole world state is compared
// with the model: live entities, component presence and values, over-alignment, change ticks of the
// tracked types, and the deadness of a window of despawned handles. A few prefabs (ts::Prefab)
// live beside the model's entities: instances of them enter the model as copies of the
// prefab's values; the prefabs themselves stay out of it (queries skip them).
#include <tessera/tessera.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace {

// ---------------------------------------------------------------------------------------------
// Component types: trivially copyable structs of several sizes, heap-owning types, a move-only
// type, an over-aligned type, two tags, and sparse components (a value, a string, a tag).

struct C1 {
    std::uint8_t v = 0;
    bool operator==(const C1&) const = default;
};
struct C4 {
    std::int32_t v = 0;
    bool operator==(const C4&) const = default;
};
struct C8 {
    double v = 0;
    bool operator==(const C8&) const = default;
};
struct C12 {
    float x = 0, y = 0, z = 0;
    bool operator==(const C12&) const = default;
};
struct C16 {
    std::int64_t a = 0, b = 0;
    bool operator==(const C16&) const = default;
};
struct C32 {
    std::int32_t v[8] = {};
    bool operator==(const C32&) const = default;
};
struct Name {
    std::string s;
    bool operator==(const Name&) const = default;
};
struct Numbers {
    std::vector<int> v;
    bool operator==(const Numbers&) const = default;
};
struct Owned {  // move-only: read through try_get / get_mut only
    std::unique_ptr<int> p;
};
struct alignas(64) Big {
    double v[3] = {};
    bool operator==(const Big&) const = default;
};
struct TagA {
    bool operator==(const TagA&) const = default;
};
struct TagB {
    bool operator==(const TagB&) const = default;
};
// Sparse components (storage_kind::sparse): kept in sparse sets, tracked from the start.
struct SC4 {
    std::int32_t v = 0;
    bool operator==(const SC4&) const = default;
};
struct SName {
    std::string s;
    bool operator==(const SName&) const = default;
};
struct STag {
    bool operator==(const STag&) const = default;
};
}  // namespace

template <>
struct tessera::component_traits<SC4> {
    static constexpr auto storage = tessera::storage_kind::sparse;
};
template <>
struct tessera::component_traits<SName> {
    static constexpr auto storage = tessera::storage_kind::sparse;
};
template <>
struct tessera::component_traits<STag> {
    static constexpr auto storage = tessera::storage_kind::sparse;
};

namespace {}  // namespace

// Required components: C12 requires TagB, which requires C1, so every add of C12 brings TagB
// and C1 (value-initialised) when missing, and every add of TagB brings C1.
template <>
struct tessera::component_traits<C12> {
    using required = tessera::type_list<TagB>;
};
template <>
struct tessera::component_traits<TagB> {
    using required = tessera::type_list<C1>;
};

namespace {

static_assert(sizeof(C1) == 1 && sizeof(C4) == 4 && sizeof(C8) == 8 && sizeof(C12) == 12 &&
              sizeof(C16) == 16 && sizeof(C32) == 32);
static_assert(alignof(Big) == 64 && std::is_empty_v<TagA> && std::is_empty_v<TagB>);

using Types =
    std::tuple<C1, C4, C8, C12, C16, C32, Name, Numbers, Owned, Big, SC4, SName, TagA, TagB, STag>;
constexpr std::size_t kTypes = std::tuple_size_v<Types>;
static_assert(kTypes == 15);
template <std::size_t I>
using TypeAt = std::tuple_element_t<I, Types>;

// How the model stores, builds and compares each type. Owned is modelled by the int it owns.
template <class T>
struct Spec {
    using Model = T;
    static constexpr bool is_tag = std::is_empty_v<T>;
    static constexpr bool copyable = true;
    static T to_world(const Model& m) { return m; }
    static bool same(const T& w, const Model& m) { return w == m; }
};
template <>
struct Spec<Owned> {
    using Model = int;
    static constexpr bool is_tag = false;
    static constexpr bool copyable = false;
    static Owned to_world(int m) { return Owned{std::make_unique<int>(m)}; }
    static bool same(const Owned& w, int m) { return w.p != nullptr && *w.p == m; }
};

template <class T>
using ModelOf = typename Spec<T>::Model;

template <class Tuple>
struct RowValuesOf;
template <class... Ts>
struct RowValuesOf<std::tuple<Ts...>> {
    using type = std::tuple<std::optional<ModelOf<Ts>>...>;
};
using RowValues = RowValuesOf<Types>::type;

constexpr std::uint64_t kUnknownTick = ~std::uint64_t{0};

struct Ticks {
    std::uint64_t added = 0;
    std::uint64_t changed = 0;
};

struct Row {
    tessera::Entity entity{};
    std::size_t live_pos = 0;
    RowValues values{};
    std::array<Ticks, kTypes> ticks{};
};

template <class F, std::size_t... I>
void dispatch_type(std::size_t i, F& f, std::index_sequence<I...>) {
    (void)((i == I ? (f.template operator()<I>(), true) : false) || ...);
}
/// Calls f.template operator()<I>() for the runtime type index i.
template <class F>
void with_type(std::size_t i, F&& f) {
    dispatch_type(i, f, std::make_index_sequence<kTypes>{});
}
/// Like with_type, for the value (non-tag) types only: indices below kValueTypes.
constexpr std::size_t kValueTypes = 12;
template <class F>
void with_value_type(std::size_t i, F&& f) {
    dispatch_type(i, f, std::make_index_sequence<kValueTypes>{});
}

// Fixed combinations (type indices) for the variadic calls: spawn(a, b, ...), add(e, a, b, ...),
// remove<A, B, ...>(e) and get<A, B, ...>(e).
using Combos = std::tuple<std::index_sequence<1, 6>,       // C4, Name
                          std::index_sequence<0, 9>,       // C1, Big
                          std::index_sequence<7, 8>,       // Numbers, Owned
                          std::index_sequence<2, 12>,      // C8, TagA
                          std::index_sequence<3, 4, 5>,    // C12, C16, C32
                          std::index_sequence<6, 7, 9>,    // Name, Numbers, Big
                          std::index_sequence<8, 13, 1>,   // Owned, TagB, C4
                          std::index_sequence<5, 12, 13>,  // C32, TagA, TagB
                          std::index_sequence<9, 2, 6>,    // Big, C8, Name
                          std::index_sequence<4, 0>,       // C16, C1
                          std::index_sequence<1, 2, 3>,    // C4, C8, C12
                          std::index_sequence<6, 9>,       // Name, Big
                          std::index_sequence<10, 6>,      // SC4, Name (sparse and table)
                          std::index_sequence<11, 14, 3>,  // SName, STag, C12
                          std::index_sequence<12, 10>>;    // TagA, SC4
constexpr std::size_t kCombos = std::tuple_size_v<Combos>;

template <class F, std::size_t... C>
void dispatch_combo(std::size_t i, F& f, std::index_sequence<C...>) {
    (void)((i == C ? (f(std::tuple_element_t<C, Combos>{}), true) : false) || ...);
}
/// Calls f(std::index_sequence<I...>{}) for the runtime combo index i.
template <class F>
void with_combo(std::size_t i, F&& f) {
    dispatch_combo(i, f, std::make_index_sequence<kCombos>{});
}

std::uint64_t tick_value(auto t) {
    return static_cast<std::uint64_t>(t);
}

constexpr std::size_t kFullCheckEvery = 1000;
constexpr std::size_t kDeadWindow = 128;
constexpr std::size_t kTargetPopulation = 2000;

class Harness {
public:
    explicit Harness(std::uint64_t seed) : rng_(seed), seed_(seed) {}

    void run(std::size_t steps) {
        for (step_ = 0; step_ < steps; ++step_) {
            one_op();
            if (::testing::Test::HasFailure()) {
                ADD_FAILURE() << std::hex << "seed 0x" << seed_ << std::dec << ", step " << step_
                              << ", op " << op_;
                return;
            }
            if ((step_ + 1) % kFullCheckEvery == 0) {
                op_ = "full check";
                check_full();
                if (::testing::Test::HasFailure()) {
                    ADD_FAILURE() << std::hex << "full check failed: seed 0x" << seed_ << std::dec
                                  << ", step " << step_;
                    return;
                }
            }
        }
        check_full();
        // The population is bounded, and the run exercised both growth and shrinking.
        EXPECT_GT(max_population_, kTargetPopulation / 2);
        EXPECT_LT(max_population_, kTargetPopulation * 2);
    }

private:
    // -- randomness -------------------------------------------------------------------------
    std::size_t below(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }
    bool chance(std::size_t percent) { return below(100) < percent; }

    template <class T>
    ModelOf<T> random_value() {
        auto r = [this](std::int64_t lo, std::int64_t hi) {
            return lo + static_cast<std::int64_t>(rng_() % static_cast<std::uint64_t>(hi - lo + 1));
        };
        if constexpr (std::is_same_v<T, C1>) {
            return C1{static_cast<std::uint8_t>(r(0, 255))};
        } else if constexpr (std::is_same_v<T, C4>) {
            return C4{static_cast<std::int32_t>(r(-1000000, 1000000))};
        } else if constexpr (std::is_same_v<T, C8>) {
            return C8{static_cast<double>(r(-1000000, 1000000)) / 8.0};
        } else if constexpr (std::is_same_v<T, C12>) {
            return C12{static_cast<float>(r(-1000, 1000)), static_cast<float>(r(-1000, 1000)),
                       static_cast<float>(r(-1000, 1000))};
        } else if constexpr (std::is_same_v<T, C16>) {
            return C16{r(-1000000000, 1000000000), r(-1000000000, 1000000000)};
        } else if constexpr (std::is_same_v<T, C32>) {
            C32 c;
            for (auto& x : c.v) x = static_cast<std::int32_t>(r(-1000, 1000));
            return c;
        } else if constexpr (std::is_same_v<T, Name>) {
            // Lengths on both sides of the small-string buffer.
            const auto len = static_cast<std::size_t>(r(0, 40));
            std::string s(len, ' ');
            for (auto& ch : s) ch = static_cast<char>('a' + r(0, 25));
            return Name{std::move(s)};
        } else if constexpr (std::is_same_v<T, Numbers>) {
            const auto len = static_cast<std::size_t>(r(0, 10));
            std::vector<int> v(len);
            for (auto& x : v) x = static_cast<int>(r(-100, 100));
            return Numbers{std::move(v)};
        } else if constexpr (std::is_same_v<T, Owned>) {
            return static_cast<int>(r(-1000000, 1000000));
        } else if constexpr (std::is_same_v<T, Big>) {
            return Big{{static_cast<double>(r(-1000, 1000)), static_cast<double>(r(-1000, 1000)),
                        static_cast<double>(r(-1000, 1000))}};
        } else if constexpr (std::is_same_v<T, SC4>) {
            return SC4{static_cast<std::int32_t>(r(-1000000, 1000000))};
        } else if constexpr (std::is_same_v<T, SName>) {
            std::string s(static_cast<std::size_t>(r(0, 40)), ' ');
            for (auto& ch : s) ch = static_cast<char>('a' + r(0, 25));
            return SName{std::move(s)};
        } else {
            static_assert(std::is_empty_v<T>);
            return T{};
        }
    }

    // -- model bookkeeping ------------------------------------------------------------------
    Row* find(tessera::Entity e) {
        auto it = model_.find(e.to_bits());
        return it == model_.end() ? nullptr : &it->second;
    }

    Row& insert_model(tessera::Entity e) {
        EXPECT_TRUE(world_.is_alive(e));
        auto [it, inserted] = model_.try_emplace(e.to_bits());
        EXPECT_TRUE(inserted) << "spawn returned an entity that is already alive: " << e;
        it->second.entity = e;
        it->second.live_pos = live_.size();
        live_.push_back(e);
        if (live_.size() > max_population_) max_population_ = live_.size();
        return it->second;
    }

    void erase_model(tessera::Entity e) {
        auto it = model_.find(e.to_bits());
        ASSERT_NE(it, model_.end());
        const std::size_t pos = it->second.live_pos;
        const tessera::Entity moved = live_.back();
        live_[pos] = moved;
        model_[moved.to_bits()].live_pos = pos;
        live_.pop_back();
        model_.erase(it);
        if (dead_.size() < kDeadWindow) {
            dead_.push_back(e);
        } else {
            dead_[dead_next_] = e;
            dead_next_ = (dead_next_ + 1) % kDeadWindow;
        }
    }

    /// Stamps the model ticks of a component that was just added (new) or replaced.
    template <std::size_t I>
    void stamp_added(Row& row, bool was_present) {
        if (!tracked_[I]) return;
        row.ticks[I].changed = tick_;
        row.ticks[I].added = was_present ? kUnknownTick : tick_;
    }
    template <std::size_t I>
    void stamp_changed(Row& row) {
        if (tracked_[I]) row.ticks[I].changed = tick_;
    }

    /// What the world brings along with components `added` (the traits above): each
    /// requirement the row lacks, value-initialised and stamped added.
    void bring_required(Row& row, std::initializer_list<std::size_t> added) {
        constexpr std::size_t kC1 = 0, kC12 = 3, kTagB = 13;
        for (const std::size_t i : added) {
            if (i == kC12 && !std::get<kTagB>(row.values)) std::get<kTagB>(row.values) = TagB{};
            if ((i == kC12 || i == kTagB) && !std::get<kC1>(row.values)) {
                std::get<kC1>(row.values) = C1{};
                stamp_added<kC1>(row, false);
            }
        }
    }

    /// The first read of T's ticks turns tracking on: every existing row is stamped now.
    template <std::size_t I>
    void activate() {
        if (tracked_[I]) return;
        tracked_[I] = true;
        for (auto& [bits, row] : model_) {
            if (std::get<I>(row.values)) row.ticks[I] = Ticks{tick_, tick_};
        }
    }

    // -- error helper -----------------------------------------------------------------------
    template <class F>
    void expect_error(tessera::errc code, F&& f) {
        try {
            f();
            ADD_FAILURE() << "expected tessera::Error (" << static_cast<int>(code) << ")";
        } catch (const tessera::Error& err) {
            EXPECT_EQ(static_cast<int>(err.code()), static_cast<int>(code)) << err.what();
        }
    }

    // -- targets ----------------------------------------------------------------------------
    tessera::Entity random_live() { return live_[below(live_.size())]; }
    tessera::Entity random_dead() {
        if (dead_.empty() || chance(10)) return tessera::Entity::null();
        return dead_[below(dead_.size())];
    }

    // -- operations -------------------------------------------------------------------------
    void one_op() {
        if (chance(20) || live_.empty()) {
            const bool grow = live_.size() < kTargetPopulation;
            if (live_.empty() || chance(grow ? 55 : 20)) {
                spawn_op();
            } else {
                despawn_op();
            }
            return;
        }
        if (chance(4)) {
            dead_handle_op();
            return;
        }
        const tessera::Entity e = random_live();
        const std::size_t roll = below(100);
        if (roll < 15) {
            op_ = "add";
            with_type(below(kTypes), [&]<std::size_t I>() { add_one<I>(e); });
        } else if (roll < 19) {
            op_ = "add<T>(e)";
            const std::size_t pick = below(4);
            if (pick == 0) {
                add_default<10>(e);
            } else if (pick == 1) {
                add_default<11>(e);
            } else {
                with_value_type(below(kValueTypes), [&]<std::size_t I>() { add_default<I>(e); });
            }
        } else if (roll < 24) {
            op_ = "add(e, a, b...)";
            with_combo(
                below(kCombos), [&]<std::size_t... I>(std::index_sequence<I...>) {
                    add_many<I...>(e);
                });
        } else if (roll < 34) {
            op_ = "remove";
            with_type(below(kTypes), [&]<std::size_t I>() { remove_one<I>(e); });
        } else if (roll < 38) {
            op_ = "remove<A, B...>";
            with_combo(
                below(kCombos), [&]<std::size_t... I>(std::index_sequence<I...>) {
                    remove_many<I...>(e);
                });
        } else if (roll < 48) {
            op_ = "set";
            with_value_type(below(kValueTypes), [&]<std::size_t I>() { set_one<I>(e); });
        } else if (roll < 58) {
            op_ = "get";
            with_type(below(kTypes), [&]<std::size_t I>() { get_one<I>(e); });
        } else if (roll < 61) {
            op_ = "get<A, B...>";
            with_combo(
                below(kCombos), [&]<std::size_t... I>(std::index_sequence<I...>) {
                    get_many<I...>(e);
                });
        } else if (roll < 69) {
            op_ = "try_get";
            with_type(below(kTypes), [&]<std::size_t I>() { try_get_one<I>(e); });
        } else if (roll < 74) {
            op_ = "has";
            with_type(below(kTypes), [&]<std::size_t I>() {
                EXPECT_EQ(world_.has<TypeAt<I>>(e), std::get<I>(find(e)->values).has_value());
            });
        } else if (roll < 80) {
            op_ = "get_mut";
            with_value_type(below(kValueTypes), [&]<std::size_t I>() { get_mut_one<I>(e); });
        } else if (roll < 87) {
            op_ = "set_if_changed";
            with_value_type(below(kValueTypes), [&]<std::size_t I>() { set_if_changed_one<I>(e); });
        } else if (roll < 92) {
            op_ = "changed_tick / added_tick";
            with_value_type(below(kValueTypes), [&]<std::size_t I>() { ticks_one<I>(e); });
        } else if (roll < 94) {
            op_ = "advance_tick";
            ++tick_;
            EXPECT_EQ(tick_value(world_.advance_tick()), tick_);
            EXPECT_EQ(tick_value(world_.tick()), tick_);
        } else if (roll < 97) {
            op_ = "query changed_since";
            with_value_type(below(kValueTypes), [&]<std::size_t I>() { changed_query<I>(); });
        } else if (roll < 98) {
            op_ = "query T& (stamps every row)";
            with_value_type(below(kValueTypes), [&]<std::size_t I>() { write_query<I>(); });
        } else {
            op_ = "is_alive";
            EXPECT_TRUE(world_.is_alive(e));
        }
    }

    void spawn_op() {
        const std::size_t roll = below(100);
        if (roll < 4) {
            op_ = "instantiate(prefab)";
            instantiate_op(1);
        } else if (roll < 6) {
            op_ = "instantiate_many(prefab, n)";
            instantiate_op(1 + below(8));
        } else if (roll < 25) {
            op_ = "spawn()";
            const tessera::Entity e = world_.spawn();
            insert_model(e);
        } else if (roll < 55) {
            op_ = "spawn(a)";
            with_type(below(kTypes), [&]<std::size_t I>() { spawn_with<I>(); });
        } else if (roll < 92) {
            op_ = "spawn(a, b...)";
            with_combo(
                below(kCombos), [&]<std::size_t... I>(std::index_sequence<I...>) {
                    spawn_with<I...>();
                });
        } else if (roll < 96) {
            op_ = "spawn_many(C4, Name)";
            spawn_many_a();
        } else {
            op_ = "spawn_many(Big, Owned, C16)";
            spawn_many_b();
        }
    }

    /// A prefab of a random copyable combo (made when there are fewer than four, else reused),
    /// then `n` instances of it, each entering the model as a copy of the prefab's values.
    void instantiate_op(std::size_t n) {
        if (prefabs_.size() < 4 && (prefabs_.empty() || chance(30))) {
            std::size_t c = below(kCombos);
            for (;; c = below(kCombos)) {
                bool copyable = true;
                with_combo(
                    c, [&]<std::size_t... I>(std::index_sequence<I...>) {
                        copyable = (Spec<TypeAt<I>>::copyable && ...);
                    });
                if (copyable) break;
            }
            with_combo(
                c, [&]<std::size_t... I>(std::index_sequence<I...>) {
                    RowValues vals{};
                    ((std::get<I>(vals) = random_value<TypeAt<I>>()), ...);
                    const tessera::Entity p =
                        world_.prefab(Spec<TypeAt<I>>::to_world(*std::get<I>(vals))...);
                    Row brought{};  // the prefab carries its requirements too
                    brought.values = std::move(vals);
                    bring_required(brought, {I...});
                    prefabs_.push_back({p, std::move(brought.values)});
                });
        }
        const auto& [prefab, vals] = prefabs_[below(prefabs_.size())];
        std::vector<tessera::Entity> made;
        if (n == 1) {
            made.push_back(world_.instantiate(prefab));
        } else {
            const auto span = world_.instantiate_many(prefab, n);
            made.assign(span.begin(), span.end());
        }
        ASSERT_EQ(made.size(), n);
        for (const tessera::Entity e : made) {
            EXPECT_EQ(world_.prefab_of(e), prefab);
            Row& row = insert_model(e);
            [&]<std::size_t... I>(std::index_sequence<I...>) {
                ((std::get<I>(vals) ? (std::get<I>(row.values) = *std::get<I>(vals),
                                       stamp_added<I>(row, false), 0)
                                    : 0),
                 ...);
            }
            (std::make_index_sequence<kTypes>{});
        }
    }

    template <std::size_t... I>
    void spawn_with() {
        RowValues vals{};
        ((std::get<I>(vals) = random_value<TypeAt<I>>()), ...);
        const tessera::Entity e = world_.spawn(Spec<TypeAt<I>>::to_world(*std::get<I>(vals))...);
        Row& row = insert_model(e);
        ((std::get<I>(row.values) = std::move(std::get<I>(vals))), ...);
        (stamp_added<I>(row, false), ...);
        bring_required(row, {I...});
    }

    void spawn_many_a() {
        const std::size_t n = 1 + below(24);
        std::vector<C4> a(n);
        std::vector<Name> b(n);
        for (std::size_t i = 0; i < n; ++i) {
            a[i] = random_value<C4>();
            b[i] = random_value<Name>();
        }
        auto span = world_.spawn_many(n, [&](std::size_t i, C4& x, Name& y) {
            x = a[i];
            y = b[i];
        });
        ASSERT_EQ(span.size(), n);
        const std::vector<tessera::Entity> created(span.begin(), span.end());
        for (std::size_t i = 0; i < n; ++i) {
            Row& row = insert_model(created[i]);
            std::get<1>(row.values) = a[i];
            std::get<6>(row.values) = b[i];
            stamp_added<1>(row, false);
            stamp_added<6>(row, false);
        }
    }

    void spawn_many_b() {
        const std::size_t n = 1 + below(24);
        std::vector<Big> a(n);
        std::vector<int> b(n);
        std::vector<C16> c(n);
        for (std::size_t i = 0; i < n; ++i) {
            a[i] = random_value<Big>();
            b[i] = random_value<Owned>();
            c[i] = random_value<C16>();
        }
        auto span = world_.spawn_many(n, [&](std::size_t i, Big& x, Owned& y, C16& z) {
            EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&x) % alignof(Big), 0u);
            x = a[i];
            y.p = std::make_unique<int>(b[i]);
            z = c[i];
        });
        ASSERT_EQ(span.size(), n);
        const std::vector<tessera::Entity> created(span.begin(), span.end());
        for (std::size_t i = 0; i < n; ++i) {
            Row& row = insert_model(created[i]);
            std::get<9>(row.values) = a[i];
            std::get<8>(row.values) = b[i];
            std::get<4>(row.values) = c[i];
            stamp_added<9>(row, false);
            stamp_added<8>(row, false);
            stamp_added<4>(row, false);
        }
    }

    void despawn_op() {
        if (chance(15) && !live_.empty()) {
            op_ = "despawn(span)";
            // A few live handles (some twice), a dead or null one: each live one goes once.
            std::vector<tessera::Entity> given;
            std::unordered_set<std::uint64_t> distinct;
            const std::size_t k = 1 + below(std::min<std::size_t>(live_.size(), 12));
            for (std::size_t i = 0; i < k; ++i) {
                const tessera::Entity e = random_live();
                given.push_back(e);
                distinct.insert(e.to_bits());
                if (chance(20)) given.push_back(e);
            }
            given.insert(given.begin() + static_cast<std::ptrdiff_t>(below(given.size() + 1)),
                         random_dead());
            EXPECT_EQ(world_.despawn(std::span<const tessera::Entity>(given)), distinct.size());
            for (const tessera::Entity e : given) {
                if (!model_.contains(e.to_bits())) continue;  // dead, or erased already
                erase_model(e);
                EXPECT_FALSE(world_.is_alive(e));
            }
            return;
        }
        if (chance(85) && !live_.empty()) {
            op_ = "despawn(live)";
            const tessera::Entity e = random_live();
            EXPECT_TRUE(world_.despawn(e));
            erase_model(e);
            EXPECT_FALSE(world_.is_alive(e));
            EXPECT_FALSE(world_.despawn(e)) << "second despawn of " << e;
        } else {
            op_ = "despawn(dead or null)";
            const tessera::Entity e = random_dead();
            EXPECT_FALSE(world_.despawn(e));
        }
    }

    /// Every checked call on a dead (or null) handle fails with not_alive and changes nothing.
    void dead_handle_op() {
        const tessera::Entity e = random_dead();
        op_ = "op on dead handle";
        EXPECT_FALSE(world_.is_alive(e));
        with_value_type(below(kValueTypes), [&]<std::size_t I>() {
            using T = TypeAt<I>;
            EXPECT_FALSE(world_.has<T>(e));
            EXPECT_EQ(world_.try_get<T>(e), nullptr);
            switch (below(6)) {
                case 0:
                    expect_error(tessera::errc::not_alive, [&] { (void)world_.remove<T>(e); });
                    break;
                case 1:
                    expect_error(tessera::errc::not_alive,
                                 [&] { world_.add(e, Spec<T>::to_world(random_value<T>())); });
                    break;
                case 2:
                    expect_error(tessera::errc::not_alive,
                                 [&] { world_.set(e, Spec<T>::to_world(random_value<T>())); });
                    break;
                case 3:
                    if constexpr (Spec<T>::copyable) {
                        expect_error(tessera::errc::not_alive, [&] { (void)world_.get<T>(e); });
                    }
                    break;
                case 4:
                    expect_error(tessera::errc::not_alive, [&] { (void)world_.get_mut<T>(e); });
                    break;
                default:
                    // Only once tracking is on: whether a failed first read turns it on is not
                    // part of the contract this test checks.
                    if (tracked_[I]) {
                        expect_error(tessera::errc::not_alive,
                                     [&] { (void)world_.changed_tick<T>(e); });
                        expect_error(tessera::errc::not_alive,
                                     [&] { (void)world_.added_tick<T>(e); });
                    }
                    break;
            }
        });
    }

    template <std::size_t I>
    void add_one(tessera::Entity e) {
        using T = TypeAt<I>;
        Row& row = *find(e);
        auto v = random_value<T>();
        const bool was = std::get<I>(row.values).has_value();
        world_.add(e, Spec<T>::to_world(v));
        std::get<I>(row.values) = std::move(v);
        stamp_added<I>(row, was);
        bring_required(row, {I});
    }

    /// add<T>(e): a value-initialised T (a tag, or a fresh value replacing an existing one).
    template <std::size_t I>
    void add_default(tessera::Entity e) {
        using T = TypeAt<I>;
        if constexpr (Spec<T>::copyable) {  // Owned{} (a null pointer) has no model value
            Row& row = *find(e);
            const bool was = std::get<I>(row.values).has_value();
            world_.add<T>(e);
            std::get<I>(row.values) = T{};
            EXPECT_TRUE(world_.has<T>(e));
            if constexpr (!Spec<T>::is_tag) stamp_added<I>(row, was);
            bring_required(row, {I});
        }
    }

    template <std::size_t... I>
    void add_many(tessera::Entity e) {
        Row& row = *find(e);
        RowValues vals{};
        ((std::get<I>(vals) = random_value<TypeAt<I>>()), ...);
        const std::array<bool, sizeof...(I)> was{std::get<I>(row.values).has_value()...};
        world_.add(e, Spec<TypeAt<I>>::to_world(*std::get<I>(vals))...);
        std::size_t k = 0;
        ((std::get<I>(row.values) = std::move(std::get<I>(vals)), stamp_added<I>(row, was[k++])),
         ...);
        bring_required(row, {I...});
    }

    template <std::size_t I>
    void remove_one(tessera::Entity e) {
        using T = TypeAt<I>;
        Row& row = *find(e);
        const bool had = std::get<I>(row.values).has_value();
        EXPECT_EQ(world_.remove<T>(e), had);
        std::get<I>(row.values).reset();
        EXPECT_FALSE(world_.has<T>(e));
    }

    template <std::size_t... I>
    void remove_many(tessera::Entity e) {
        Row& row = *find(e);
        const bool any = (std::get<I>(row.values).has_value() || ...);
        EXPECT_EQ(world_.remove<TypeAt<I>...>(e), any);
        (std::get<I>(row.values).reset(), ...);
        EXPECT_TRUE((!world_.has<TypeAt<I>>(e) && ...));
    }

    template <std::size_t I>
    void set_one(tessera::Entity e) {
        using T = TypeAt<I>;
        static_assert(!Spec<T>::is_tag);
        Row& row = *find(e);
        auto v = random_value<T>();
        if (!std::get<I>(row.values)) {
            expect_error(tessera::errc::missing_component,
                         [&] { world_.set(e, Spec<T>::to_world(v)); });
            EXPECT_FALSE(world_.has<T>(e));
            return;
        }
        world_.set(e, Spec<T>::to_world(v));
        std::get<I>(row.values) = std::move(v);
        stamp_changed<I>(row);
        if (chance(10)) {
            activate<I>();
            EXPECT_EQ(tick_value(world_.changed_tick<T>(e)), tick_value(world_.tick()));
        }
    }

    template <std::size_t I>
    void get_one(tessera::Entity e) {
        using T = TypeAt<I>;
        const auto& m = std::get<I>(find(e)->values);
        if constexpr (Spec<T>::is_tag || !Spec<T>::copyable) {
            EXPECT_EQ(world_.has<T>(e), m.has_value());
        } else if (m) {
            const T v = world_.get<T>(e);
            EXPECT_TRUE(Spec<T>::same(v, *m));
        } else {
            expect_error(tessera::errc::missing_component, [&] { (void)world_.get<T>(e); });
        }
    }

    template <std::size_t... I>
    void get_many(tessera::Entity e) {
        constexpr bool readable = ((!Spec<TypeAt<I>>::is_tag && Spec<TypeAt<I>>::copyable) && ...);
        if constexpr (readable) {
            const Row& row = *find(e);
            if ((std::get<I>(row.values).has_value() && ...)) {
                const std::tuple<TypeAt<I>...> got = world_.get<TypeAt<I>...>(e);
                EXPECT_TRUE(
                    (Spec<TypeAt<I>>::same(std::get<TypeAt<I>>(got), *std::get<I>(row.values)) &&
                     ...));
            } else {
                expect_error(tessera::errc::missing_component,
                             [&] { (void)world_.get<TypeAt<I>...>(e); });
            }
        }
    }

    template <std::size_t I>
    void try_get_one(tessera::Entity e) {
        using T = TypeAt<I>;
        const auto& m = std::get<I>(find(e)->values);
        if constexpr (Spec<T>::is_tag) {
            EXPECT_EQ(world_.has<T>(e), m.has_value());
        } else {
            const T* p = world_.try_get<T>(e);
            ASSERT_EQ(p != nullptr, m.has_value());
            if (p != nullptr) {
                EXPECT_TRUE(Spec<T>::same(*p, *m));
                EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignof(T), 0u);
            }
        }
    }

    template <std::size_t I>
    void get_mut_one(tessera::Entity e) {
        using T = TypeAt<I>;
        Row& row = *find(e);
        auto& m = std::get<I>(row.values);
        if (!m) {
            expect_error(tessera::errc::missing_component, [&] { (void)world_.get_mut<T>(e); });
            return;
        }
        T& ref = world_.get_mut<T>(e);
        EXPECT_TRUE(Spec<T>::same(ref, *m));
        auto v = random_value<T>();
        ref = Spec<T>::to_world(v);
        m = std::move(v);
        stamp_changed<I>(row);
    }

    /// A `changed_since<T>(t)` query for a random past tick visits exactly the entities whose
    /// T changed after t.
    template <std::size_t I>
    void changed_query() {
        using T = TypeAt<I>;
        activate<I>();
        const std::uint64_t since = below(tick_ + 1);
        std::set<std::uint64_t> want;
        for (const auto& [bits, row] : model_) {
            if (std::get<I>(row.values) && row.ticks[I].changed > since) want.insert(bits);
        }
        std::set<std::uint64_t> got;
        world_.query<const T&>().template changed_since<T>(since).each(
            [&](tessera::Entity x, const T&) { EXPECT_TRUE(got.insert(x.to_bits()).second); });
        EXPECT_EQ(got, want) << "changed since tick " << since;
    }

    /// A query with a `T&` term marks every row it visits changed.
    template <std::size_t I>
    void write_query() {
        using T = TypeAt<I>;
        world_.query<T&>().each([](T&) {});
        for (auto& [bits, row] : model_) {
            if (std::get<I>(row.values)) stamp_changed<I>(row);
        }
    }

    template <std::size_t I>
    void set_if_changed_one(tessera::Entity e) {
        using T = TypeAt<I>;
        if constexpr (Spec<T>::copyable) {
            Row& row = *find(e);
            auto& m = std::get<I>(row.values);
            if (!m) return;  // set_if_changed on an absent component is not specified
            activate<I>();
            const ModelOf<T> v = chance(50) ? *m : random_value<T>();
            const bool differs = !(v == *m);
            EXPECT_EQ(world_.set_if_changed(e, Spec<T>::to_world(v)), differs);
            if (differs) {
                m = v;
                row.ticks[I].changed = tick_;
            }
            EXPECT_TRUE(Spec<T>::same(world_.get<T>(e), *m));
            EXPECT_EQ(tick_value(world_.changed_tick<T>(e)), row.ticks[I].changed)
                << (differs ? "value differed" : "same value");
        }
    }

    template <std::size_t I>
    void ticks_one(tessera::Entity e) {
        using T = TypeAt<I>;
        Row& row = *find(e);
        if (!std::get<I>(row.values)) {
            if (tracked_[I]) {
                expect_error(tessera::errc::missing_component,
                             [&] { (void)world_.changed_tick<T>(e); });
                expect_error(tessera::errc::missing_component,
                             [&] { (void)world_.added_tick<T>(e); });
            }
            return;
        }
        activate<I>();
        EXPECT_EQ(tick_value(world_.changed_tick<T>(e)), row.ticks[I].changed);
        if (row.ticks[I].added != kUnknownTick) {
            EXPECT_EQ(tick_value(world_.added_tick<T>(e)), row.ticks[I].added);
        }
        EXPECT_LE(tick_value(world_.added_tick<T>(e)), tick_value(world_.changed_tick<T>(e)));
    }

    // -- full comparison --------------------------------------------------------------------
    template <std::size_t I>
    void check_component(const Row& row) {
        using T = TypeAt<I>;
        const tessera::Entity e = row.entity;
        const auto& m = std::get<I>(row.values);
        EXPECT_EQ(world_.has<T>(e), m.has_value()) << e << " type #" << I;
        if constexpr (Spec<T>::is_tag) {
            EXPECT_EQ(world_.try_get<T>(e), nullptr) << "tags have no address";
        } else {
            const T* p = world_.try_get<T>(e);
            EXPECT_EQ(p != nullptr, m.has_value()) << e << " type #" << I;
            if (p == nullptr || !m) return;
            EXPECT_TRUE(Spec<T>::same(*p, *m)) << e << " type #" << I;
            EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % alignof(T), 0u);
            if constexpr (Spec<T>::copyable) {
                EXPECT_TRUE(Spec<T>::same(world_.get<T>(e), *m)) << e << " type #" << I;
            }
            if (tracked_[I]) {
                EXPECT_EQ(tick_value(world_.changed_tick<T>(e)), row.ticks[I].changed)
                    << e << " type #" << I;
                if (row.ticks[I].added != kUnknownTick) {
                    EXPECT_EQ(tick_value(world_.added_tick<T>(e)), row.ticks[I].added)
                        << e << " type #" << I;
                }
            }
        }
    }

    template <std::size_t... I>
    void check_row(const Row& row, std::index_sequence<I...>) {
        (check_component<I>(row), ...);
    }

    template <std::size_t... I>
    void check_dead(tessera::Entity e, std::index_sequence<I...>) {
        EXPECT_FALSE(world_.is_alive(e)) << e;
        EXPECT_TRUE((!world_.has<TypeAt<I>>(e) && ...)) << e;
        auto no_pointer = [&]<std::size_t J>() {
            if constexpr (!Spec<TypeAt<J>>::is_tag) {
                EXPECT_EQ(world_.try_get<TypeAt<J>>(e), nullptr) << e;
            }
        };
        (no_pointer.template operator()<I>(), ...);
    }

    void check_full() {
        ASSERT_EQ(static_cast<std::size_t>(world_.count()), model_.size() + prefabs_.size());
        EXPECT_EQ(tick_value(world_.tick()), tick_);
        std::vector<tessera::Entity> ents = world_.entities();
        std::erase_if(ents, [&](tessera::Entity e) { return world_.has<tessera::Prefab>(e); });
        ASSERT_EQ(ents.size(), model_.size());
        std::unordered_set<std::uint64_t> seen;
        seen.reserve(ents.size());
        for (const tessera::Entity& e : ents) {
            EXPECT_TRUE(seen.insert(e.to_bits()).second) << "entities() lists " << e << " twice";
            EXPECT_TRUE(model_.contains(e.to_bits()))
                << "entities() lists " << e << " unknown to the model";
        }
        for (const auto& [bits, row] : model_) {
            EXPECT_TRUE(world_.is_alive(row.entity)) << row.entity;
            check_row(row, std::make_index_sequence<kTypes>{});
            if (::testing::Test::HasFailure()) return;
        }
        for (const tessera::Entity& e : dead_) check_dead(e, std::make_index_sequence<kTypes>{});
        check_dead(tessera::Entity::null(), std::make_index_sequence<kTypes>{});
    }

    tessera::World world_;
    std::mt19937_64 rng_;
    std::uint64_t seed_;
    std::size_t step_ = 0;
    const char* op_ = "";
    std::unordered_map<std::uint64_t, Row> model_;
    std::vector<tessera::Entity> live_;
    /// The prefabs and their values (outside the model: queries skip them).
    std::vector<std::pair<tessera::Entity, RowValues>> prefabs_;
    std::vector<tessera::Entity> dead_;
    std::size_t dead_next_ = 0;
    std::size_t max_population_ = 0;
    // Sparse sets keep ticks from the start (SC4, SName): tracked before the first read.
    std::array<bool, kTypes> tracked_{false, false, false, false, false, false, false, false,
                                      false, false, true,  true,  false, false, false};
    std::uint64_t tick_ = 1;  // the world tick starts at 1
};

constexpr std::size_t kSteps = 200000;

TEST(WorldModel, RandomOpsMatchReferenceSeed1) {
    Harness h(0x5EED0001u);
    h.run(kSteps);
}

TEST(WorldModel, RandomOpsMatchReferenceSeed2) {
    Harness h(0xC0FFEE1234ull);
    h.run(kSteps);
}

TEST(WorldModel, RandomOpsMatchReferenceSeed3) {
    Harness h(0x9E3779B97F4A7C15ull);
    h.run(kSteps);
}

}  // namespace

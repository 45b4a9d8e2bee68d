// The components of the binary-loader fuzz target (load_fuzz.cpp) and of the worlds its seed
// corpus was saved from (make_corpus.cpp). A saved world names its components, so the loader
// only gets past the component table for inputs that name these: the harness registers exactly
// the types the seed worlds use. Changing a type here (name, fields, layout) makes the seeds
// stale: regenerate them with make_corpus (see CMakeLists.txt).
#pragma once

#include <tessera/relation.hpp>
#include <tessera/serialize.hpp>
#include <tessera/tessera.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fuzzw {

enum class Kind : std::uint8_t { walker, flyer, swimmer };

// Flat structs without padding (their bytes are saved as they are).
struct Pos {
    float x = 0, y = 0, z = 0;
};
/// Flat, with values the loader must check (bool, str id, enum).
struct Stat {
    std::int32_t hp = 0;
    bool alive = false;
    Kind kind = Kind::walker;
    std::uint8_t extra[2] = {0, 0};
    tessera::StringId label;
};
/// Flat, with a nested record and arrays.
struct Nested {
    Pos p;
    std::array<std::int16_t, 2> a{};
    std::uint64_t id = 0;
};
/// Not flat: saved field by field.
struct Name {
    std::string text;
    std::uint32_t n = 0;
};
/// Enableable.
struct Ai {
    std::uint16_t mode = 0;
    std::uint16_t level = 0;
};
/// Sparse (kept outside the tables), with heap-owning data.
struct Buff {
    std::string what;
    float left = 0;
};
/// A relation with heap-owning data.
struct Link {
    float weight = 0;
    std::string why;
};
/// A relation without data.
struct Likes {};
struct Dead {};

}  // namespace fuzzw

TESSERA_REFLECT(fuzzw::Pos, x, y, z)
TESSERA_REFLECT(fuzzw::Stat, hp, alive, kind, extra, label)
TESSERA_REFLECT(fuzzw::Nested, p, a, id)
TESSERA_REFLECT(fuzzw::Name, text, n)
TESSERA_REFLECT(fuzzw::Ai, mode, level)
TESSERA_REFLECT(fuzzw::Link, weight, why)
TESSERA_REFLECT(fuzzw::Buff, what, left)
template <>
struct tessera::component_traits<fuzzw::Ai> {
    static constexpr bool enableable = true;
};
template <>
struct tessera::component_traits<fuzzw::Buff> {
    static constexpr tessera::storage_kind storage = tessera::storage_kind::sparse;
};

namespace fuzzw {

namespace ts = tessera;

/// The runtime components of the fuzz worlds.
struct Runtime {
    ts::ComponentId all;   ///< one field of every runtime type
    ts::ComponentId flag;  ///< enableable
    ts::ComponentId tag;   ///< a runtime tag
};

inline Runtime define_runtime(ts::World& w) {
    Runtime rt;
    rt.all = w.component("FuzzRtAll", {{"f32", ts::Field::f32},
                                       {"f64", ts::Field::f64},
                                       {"i8", ts::Field::i8},
                                       {"i16", ts::Field::i16},
                                       {"i32", ts::Field::i32},
                                       {"u8", ts::Field::u8},
                                       {"u16", ts::Field::u16},
                                       {"u32", ts::Field::u32},
                                       {"on", ts::Field::boolean},
                                       {"s", ts::Field::str}});
    rt.flag =
        w.component("FuzzRtFlag", {{"v", ts::Field::u8}}, ts::ComponentOptions{.enableable = true});
    rt.tag = w.component("FuzzRtTag");
    return rt;
}

/// Registers every component of the fuzz worlds in the process (once): the C++ types, the
/// runtime components, and the relations (used once in a scratch world).
inline const Runtime& setup() {
    static const Runtime rt = [] {
        ts::World w;
        const Runtime r = define_runtime(w);
        const ts::Entity a = w.spawn(Pos{}, Stat{}, Nested{}, Name{}, Ai{}, Dead{}, Buff{});
        const ts::Entity b = w.spawn();
        w.relate(a, Link{}, b);
        w.relate<Likes>(a, b);
        w.relate<ts::ChildOf>(a, b);
        return r;
    }();
    return rt;
}

/// Small worlds of different shapes, for the seed corpus. `variant` 0 is the empty world.
inline void populate(ts::World& w, int variant) {
    const Runtime rt = define_runtime(w);
    if (variant == 0) return;
    std::vector<ts::Entity> es;
    const int n = variant == 1 ? 6 : variant == 4 ? 40 : 16;
    for (int i = 0; i < n; ++i) {
        const auto f = static_cast<float>(i);
        ts::Entity e;
        switch ((i + variant) % 6) {
            case 0: e = w.spawn(Pos{f, -f, 0.5f}); break;
            case 1: e = w.spawn(Pos{f, 1, 2}, Stat{i, i % 2 == 0, Kind::flyer, {1, 2}, {}}); break;
            case 2:
                e = w.spawn(Name{"unit " + std::to_string(i), static_cast<std::uint32_t>(i)},
                            Dead{});
                break;
            case 3:
                e = w.spawn(Ai{static_cast<std::uint16_t>(i), 7},
                            Nested{Pos{f, f, f}, {-1, 1}, 99});
                break;
            case 4:
                e = w.spawn();
                w.add(e, rt.all);
                w.set_field(e, rt.all, "i32", -i);
                w.set_field(e, rt.all, "on", true);
                w.set_field(e, rt.all, "s", "runtime " + std::to_string(i % 3));
                break;
            default:
                e = w.spawn(Name{"", 0});
                w.add(e, rt.flag);
                w.add(e, rt.tag);
                break;
        }
        es.push_back(e);
    }
    auto at = [&](int i) { return es[static_cast<std::size_t>(i) % es.size()]; };
    auto f_of = [](int i) { return static_cast<float>(i); };
    if (variant >= 2) {
        // Relations: a Link with several targets, Likes, a ChildOf chain and a second parent.
        w.relate(at(1), Link{0.5f, "first"}, at(2));
        w.relate(at(1), Link{0.75f, "second"}, at(3));
        w.relate(at(4), Link{1.0f, ""}, at(1));
        w.relate<Likes>(at(5), at(6));
        w.relate<ts::ChildOf>(at(7), at(8));
        w.relate<ts::ChildOf>(at(8), at(9));
        w.relate<ts::ChildOf>(at(10), at(9));
        w.relate<ts::ChildOf>(at(10), at(11));
        // Sparse values on entities of several tables (one of them about to die).
        for (int i = 0; i < n; i += 3)
            w.add(at(i), Buff{"buff " + std::to_string(i), 0.5f * f_of(i)});
    }
    if (variant >= 3) {
        // Holes in the entity index, a permanent entity, disabled flags, tracked ticks.
        w.despawn(at(0));
        w.despawn(at(9));  // cascades to at(8) and at(7); at(10) keeps its other parent
        (void)w.spawn_permanent(Pos{100, 100, 100});
        for (const ts::Entity e : w.entities()) {
            if (w.has<Ai>(e)) w.enable<Ai>(e, false);
        }
        for (const ts::Entity e : w.entities()) {
            if (w.has<Pos>(e)) (void)w.changed_tick<Pos>(e);
            if (w.has<Name>(e)) (void)w.changed_tick<Name>(e);
        }
        (void)w.advance_tick();
        (void)w.spawn();  // reuses a freed index
        w.strings().intern("orphan");
    }
    if (variant == 4) {
        for (int i = 0; i < 10; ++i) {
            if (w.is_alive(at(i * 3)) && !w.is_permanent(at(i * 3))) w.add<Dead>(at(i * 3));
        }
    }
}

}  // namespace fuzzw

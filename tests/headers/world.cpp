// world.hpp alone: every member its class comment says needs no other header (entities,
// archetypes, deferral, components, ticks), and Deferral. Types are local to this file, so no
// other file of header_consumers can lend it a template body (see CMakeLists.txt).
#include <tessera/world.hpp>

#include <memory_resource>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ts = tessera;

namespace {
struct Pos {
    float x = 0;
    friend bool operator==(const Pos&, const Pos&) = default;
};
struct Vel {
    float v = 0;
};
struct Label {
    std::string s;
    explicit Label(std::string text = {}) : s(std::move(text)) {}
};
struct Flag {};
struct Toggle {
    int v = 0;
};
}  // namespace

template <>
struct ts::component_traits<Toggle> {
    static constexpr bool enableable = true;
};

int header_world() {
    std::pmr::monotonic_buffer_resource arena;
    ts::World other(&arena);
    ts::World w(std::move(other));
    other = ts::World();
    if (w.memory_resource() != &arena) return 1;

    const ts::Entity a = w.spawn();
    const ts::Entity b = w.spawn(Pos{1}, Vel{2});
    const std::span<const ts::Entity> many =
        w.spawn_many(3, [](std::size_t i, Pos& p) { p.x = static_cast<float>(i); });
    const std::vector<ts::Entity> batch(many.begin(), many.end());
    const ts::Entity p = w.spawn_permanent(Pos{});
    std::size_t seen = 0;
    w.each_entity([&](ts::Entity) { ++seen; }, ts::Lifetime::any);
    if (!w.is_permanent(p) || seen != 6) return 2;
    if (!w.despawn(a) || w.despawn(std::span<const ts::Entity>(batch)) != 3) return 3;

    const std::vector<ts::ArchetypeInfo> tables = w.archetypes();
    const ts::ArchetypeInfo of_b = w.archetype_of(b);
    const ts::ArchetypeInfo made = w.archetype<Pos, Flag>();
    w.reserve<Pos, Vel>(16);
    if (tables.empty() || of_b.components.size() != 2 || made.size != 0) return 4;

    w.defer_begin();
    const ts::Entity c = w.spawn(Pos{5});
    if (!w.deferring() || w.despawn_pending(c)) return 5;
    w.defer_end();
    (void)w.flush();
    if (!w.is_alive(c) || w.count() != 3 || w.entities().size() != 3) return 6;

    w.add(b, Flag{});
    w.add<Toggle>(b);
    w.emplace<Label>(b, "b");
    if (!w.remove<Flag>(b) || !w.has<Pos, Vel>(b)) return 7;
    const auto [pos, vel] = w.get<Pos, Vel>(b);
    if (!(pos == Pos{1}) || vel.v != 2 || w.get<Pos>(b).x != 1) return 8;
    if (w.try_get<Pos>(b) == nullptr || w.try_get_mut<Vel>(b) == nullptr) return 9;
    w.get_mut<Pos>(b).x = 2;
    auto [pm, vm] = w.get_mut<Pos, Vel>(b);
    pm.x += vm.v;
    w.set(b, Pos{3});
    w.set(b, Pos{4}, Vel{5});
    if (!w.set_if_changed(b, Pos{6})) return 10;
    if (w.changed_tick<Pos>(b) == 0 || w.added_tick<Pos>(b) == 0) return 11;
    w.enable<Toggle>(b, false);
    if (w.is_enabled<Toggle>(b)) return 12;
    w.modified<Pos>(b);
    (void)w.register_component<Flag>();

    {
        ts::Deferral d(w);
        w.despawn(c);
        d.close();
    }
    const std::uint64_t t = w.tick();
    if (w.advance_tick() != t + 1 || t >= ts::World::max_tick) return 13;
    if (w.archetype_count() < 3) return 14;
    (void)w.storage();
    (void)std::as_const(w).storage();
    return 0;
}

// Fixed work for tools/core_counts.sh: each phase is a noinline function that runs one core
// operation a known number of times, so callgrind's inclusive count of the phase divided by
// that number is the operation's instructions, the same on every run and every machine.
#include <tessera/tessera.hpp>

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

namespace {

struct Pos {
    float x, y;
};
struct Vel {
    float x, y;
};
struct Tag {
    float v;
};

constexpr std::size_t kN = 10'000;
constexpr int kRounds = 10;

using Handles = std::vector<tessera::Entity>;

// Each phase prints nothing; main prints how many operations each ran (the divisor).
[[gnu::noinline]] void phase_add_remove(tessera::World& w, const Handles& hs) {
    for (int r = 0; r < kRounds; ++r) {
        for (const tessera::Entity e : hs) w.add(e, Tag{0.0f});
        for (const tessera::Entity e : hs) (void)w.remove<Tag>(e);
    }
}

[[gnu::noinline]] void phase_iterate(tessera::Query<Pos&, const Vel&>& q) {
    for (int r = 0; r < kRounds; ++r) {
        q.each([](Pos& p, const Vel& v) {
            p.x += v.x * 0.016f;
            p.y += v.y * 0.016f;
        });
    }
}

[[gnu::noinline]] float phase_get(const tessera::World& w, const Handles& hs) {
    float sum = 0;
    for (int r = 0; r < kRounds; ++r)
        for (const tessera::Entity e : hs) sum += w.get<Pos>(e).x;
    return sum;
}

[[gnu::noinline]] float phase_accessor(tessera::World& w, const Handles& hs) {
    const tessera::Accessor<Pos> pos = w.accessor<Pos>();
    float sum = 0;
    for (int r = 0; r < kRounds; ++r)
        for (const tessera::Entity e : hs) sum += pos.try_get(e)->x;
    return sum;
}

template <class Spawn>
void spawn_then_despawn(tessera::World& w, Spawn spawn) {
    Handles es;
    es.reserve(kN);
    for (int r = 0; r < kRounds; ++r) {
        for (std::size_t i = 0; i < kN; ++i) es.push_back(spawn());
        for (const tessera::Entity e : es) w.despawn(e);
        es.clear();
    }
}

[[gnu::noinline]] void phase_spawn_despawn(tessera::World& w) {
    spawn_then_despawn(w, [&w] { return w.spawn(Pos{1, 2}, Vel{3, 4}); });
}

[[gnu::noinline]] void phase_spawn_despawn_empty(tessera::World& w) {
    spawn_then_despawn(w, [&w] { return w.spawn(); });
}

}  // namespace

int main() {
    tessera::World world;
    Handles handles;
    for (std::size_t i = 0; i < kN; ++i)
        handles.push_back(world.spawn(Pos{static_cast<float>(i), 0}, Vel{1, 1}));
    auto query = world.query<Pos&, const Vel&>();
    phase_iterate(query);  // warms the query's cache, like a second frame
    phase_add_remove(world, handles);
    Handles shuffled = handles;
    std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
    const float sum = phase_get(world, shuffled) + phase_accessor(world, shuffled);
    tessera::World other;
    phase_spawn_despawn(other);
    phase_spawn_despawn_empty(other);
    const unsigned long n = kN * kRounds;
    std::printf(
        "add_remove %lu\niterate %lu\nget %lu\naccessor %lu\nspawn_despawn %lu\n"
        "spawn_despawn_empty %lu\nsum %g\n",
        n, n, n, n, n, n, static_cast<double>(sum));
}

// net_delta / net_apply: replication (net.hpp) of N entities with Position and Velocity, only
// Position replicated, one client that acknowledges every message.
//
// net_delta: the server's message for the client after k rows changed (their Position set);
// items = changed rows (at least 1), time per message / k. Variants:
//   raw             the rows' entity handles and Position bytes copied into a buffer, from a
//                   list of the changed indices (what any delta must at least write);
//   tessera         k = 1% of N (10,000 random rows);
//   tessera_warm    the same, the message made once untimed first: its rows are then in cache,
//                   as the raw loop's are (it reads the same rows every iteration);
//   tessera_0_1pct  k = 0.1% of N;
//   tessera_0pct    nothing changed: the cost of a message when nothing happened, O(tables).
// The `bytes_per_entity` counter is the message size over k (format overhead included).
//
// net_apply: the client applying a message of 1% changed rows to a world mirroring all N;
// items = rows applied. raw: the same records decoded into a std::vector<Position> through a
// hash map from the server handle to a row (the mapping any mirror must keep).
//
// net_set: what a replicated component's row log costs its writers: `world.set` of k = 1% of N
// random rows, each its first write since the replicator's epoch (the message is made and
// acknowledged untimed between iterations, so every write appends to the log); items = k.
//   raw      the value and a changed tick stored into arrays, from the row list;
//   tracked  `set` of Velocity, tracked (change ticks) but not replicated: no row log;
//   logged   `set` of Position, replicated: the tick, the bounds and a row log append.
//
// Each variant checks its result once before timing (the client's values equal the server's).
#include "common.hpp"

#include <tessera/net.hpp>
#include <tessera/tessera.hpp>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessera_bench {
namespace {

/// `k` distinct random row indices of `n`, ascending.
std::vector<std::size_t> changed_rows(std::size_t n, std::size_t k) {
    std::vector<std::size_t> all(n);
    for (std::size_t i = 0; i < n; ++i) all[i] = i;
    std::mt19937 rng(kSeed);
    for (std::size_t i = 0; i < k; ++i) {
        std::uniform_int_distribution<std::size_t> d(i, n - 1);
        std::swap(all[i], all[d(rng)]);
    }
    all.resize(k);
    std::sort(all.begin(), all.end());
    return all;
}

struct Server {
    tessera::World world;
    std::vector<tessera::Entity> handles;
    tessera::net::Replicator rep{world};
    tessera::net::ClientId client;
    explicit Server(std::size_t n) {
        const auto spawned = world.spawn_many(n, [](std::size_t i, Position& p, Velocity& v) {
            p = {static_cast<float>(i), 0};
            v = {1, 1};
        });
        handles.assign(spawned.begin(), spawned.end());
        rep.replicate<Position>();
        client = rep.connect();
    }
    void change(const std::vector<std::size_t>& rows, float value) {
        for (const std::size_t r : rows) world.set(handles[r], Position{value, value});
    }
};

void net_delta_raw(benchmark::State& state) {
    const std::size_t n = entity_count();
    const std::size_t k = n / 100;
    AlignedVector<Position> pos(n);
    std::vector<tessera::Entity> handles(n);
    for (std::size_t i = 0; i < n; ++i) {
        pos[i] = {static_cast<float>(i), 0};
        handles[i] = tessera::Entity{static_cast<std::uint32_t>(i), 1};
    }
    const std::vector<std::size_t> rows = changed_rows(n, k);
    std::vector<std::byte> out;
    constexpr std::size_t record = sizeof(tessera::Entity) + sizeof(Position);
    for (auto _ : state) {
        out.resize(rows.size() * record);
        std::byte* p = out.data();
        for (const std::size_t r : rows) {
            std::memcpy(p, &handles[r], sizeof(tessera::Entity));
            std::memcpy(p + sizeof(tessera::Entity), &pos[r], sizeof(Position));
            p += record;
        }
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    set_items(state, k);
    state.counters["bytes_per_entity"] = static_cast<double>(record);
}

void net_delta_tessera(benchmark::State& state, std::size_t per_million, bool warm = false) {
    const std::size_t n = entity_count();
    const std::size_t k = n * per_million / 1'000'000;
    Server server(n);
    tessera::World client;
    tessera::net::Mirror mirror(client);
    server.rep.ack(server.client, mirror.apply(server.rep.delta(server.client)));
    const std::vector<std::size_t> rows = changed_rows(n, k);
    // One checked round: the client's values are the server's.
    server.change(rows, -1);
    server.rep.ack(server.client, mirror.apply(server.rep.delta(server.client)));
    for (const std::size_t r : rows) {
        const Position* p = client.try_get<Position>(mirror.local(server.handles[r]));
        if (p == nullptr || p->x != -1) {
            state.SkipWithError("net_delta: the client did not get a changed value");
            return;
        }
    }
    std::vector<std::byte> message;
    std::size_t bytes = 0;
    float value = 0;
    for (auto _ : state) {
        server.change(rows, value);  // untimed: what the game did this frame
        value += 1;
        // warm: the same message made once untimed first (not acknowledged: the second has the
        // same baseline and rows), so its rows are in cache as the raw loop's are.
        if (warm) server.rep.delta(server.client, message);
        const Stopwatch clock;
        server.rep.delta(server.client, message);
        server.rep.ack(server.client, server.world.tick() - 1);
        state.SetIterationTime(clock.seconds());
        bytes = message.size();
    }
    set_items(state, std::max<std::size_t>(k, 1));
    state.counters["bytes_per_entity"] =
        static_cast<double>(bytes) / static_cast<double>(std::max<std::size_t>(k, 1));
    state.counters["message_bytes"] = static_cast<double>(bytes);
}

void net_delta_1pct(benchmark::State& state) {
    net_delta_tessera(state, 10'000);
}
void net_delta_1pct_warm(benchmark::State& state) {
    net_delta_tessera(state, 10'000, true);
}
void net_delta_0_1pct(benchmark::State& state) {
    net_delta_tessera(state, 1'000);
}
void net_delta_0pct(benchmark::State& state) {
    net_delta_tessera(state, 0);
}

void net_apply_raw(benchmark::State& state) {
    const std::size_t n = entity_count();
    const std::size_t k = n / 100;
    std::vector<Position> pos(n);
    std::unordered_map<std::uint64_t, std::uint32_t> row_of;
    row_of.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
        row_of.emplace(tessera::Entity{static_cast<std::uint32_t>(i), 1}.to_bits(),
                       static_cast<std::uint32_t>(i));
    constexpr std::size_t record = sizeof(tessera::Entity) + sizeof(Position);
    std::vector<std::byte> in(k * record);
    const std::vector<std::size_t> rows = changed_rows(n, k);
    for (std::size_t j = 0; j < k; ++j) {
        const tessera::Entity e{static_cast<std::uint32_t>(rows[j]), 1};
        const Position p{1, 1};
        std::memcpy(in.data() + j * record, &e, sizeof e);
        std::memcpy(in.data() + j * record + sizeof e, &p, sizeof p);
    }
    for (auto _ : state) {
        for (std::size_t j = 0; j < k; ++j) {
            tessera::Entity e;
            std::memcpy(&e, in.data() + j * record, sizeof e);
            const auto it = row_of.find(e.to_bits());
            if (it != row_of.end())
                std::memcpy(&pos[it->second], in.data() + j * record + sizeof e, sizeof(Position));
        }
        benchmark::DoNotOptimize(pos.data());
        benchmark::ClobberMemory();
    }
    set_items(state, k);
}

void net_apply_tessera(benchmark::State& state) {
    const std::size_t n = entity_count();
    const std::size_t k = n / 100;
    Server server(n);
    tessera::World client;
    tessera::net::Mirror mirror(client);
    server.rep.ack(server.client, mirror.apply(server.rep.delta(server.client)));
    const std::vector<std::size_t> rows = changed_rows(n, k);
    std::vector<std::byte> message;
    float value = 0;
    for (auto _ : state) {
        server.change(rows, value);  // untimed: the server's side
        value += 1;
        server.rep.delta(server.client, message);
        const Stopwatch clock;
        const std::uint64_t t = mirror.apply(message);
        state.SetIterationTime(clock.seconds());
        server.rep.ack(server.client, t);
    }
    const Position* p = client.try_get<Position>(mirror.local(server.handles[rows.back()]));
    if (p == nullptr || p->x != value - 1) {
        state.SkipWithError("net_apply: the client did not get the changed values");
        return;
    }
    set_items(state, k);
}

void net_set_raw(benchmark::State& state) {
    const std::size_t n = entity_count();
    const std::size_t k = n / 100;
    AlignedVector<Position> pos(n);
    std::vector<std::uint64_t> ticks(n, 0);
    const std::vector<std::size_t> rows = changed_rows(n, k);
    std::uint64_t tick = 1;
    for (auto _ : state) {
        ++tick;
        const auto v = static_cast<float>(tick);
        for (const std::size_t r : rows) {
            pos[r] = Position{v, v};
            ticks[r] = tick;
        }
        benchmark::DoNotOptimize(pos.data());
        benchmark::DoNotOptimize(ticks.data());
        benchmark::ClobberMemory();
    }
    set_items(state, k);
}

void net_set_tessera(benchmark::State& state, bool logged) {
    const std::size_t n = entity_count();
    const std::size_t k = n / 100;
    Server server(n);
    (void)server.world.changed_tick<Velocity>(server.handles[0]);  // tracked, not replicated
    const std::vector<std::size_t> rows = changed_rows(n, k);
    std::vector<std::byte> message;
    float value = 0;
    for (auto _ : state) {
        // Untimed: the epoch moves past every write so far, so each write below is a first one.
        server.rep.delta(server.client, message);
        server.rep.ack(server.client, server.world.tick() - 1);
        value += 1;
        const Stopwatch clock;
        if (logged) {
            for (const std::size_t r : rows)
                server.world.set(server.handles[r], Position{value, 0});
        } else {
            for (const std::size_t r : rows)
                server.world.set(server.handles[r], Velocity{value, 0});
        }
        state.SetIterationTime(clock.seconds());
    }
    const tessera::Entity first = server.handles[rows[0]];
    if ((logged ? server.world.get<Position>(first).x : server.world.get<Velocity>(first).dx) !=
        value) {
        state.SkipWithError("net_set: the values were not written");
        return;
    }
    set_items(state, k);
}

void net_set_tracked(benchmark::State& state) {
    net_set_tessera(state, false);
}
void net_set_logged(benchmark::State& state) {
    net_set_tessera(state, true);
}

BENCHMARK(net_delta_raw)->Name("net_delta/raw")->Apply(steady)->Unit(benchmark::kMicrosecond);
BENCHMARK(net_delta_1pct)
    ->Name("net_delta/tessera")
    ->Apply(steady_manual)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(net_delta_1pct_warm)
    ->Name("net_delta/tessera_warm")
    ->Apply(steady_manual)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(net_delta_0_1pct)
    ->Name("net_delta/tessera_0_1pct")
    ->Apply(steady_manual)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(net_delta_0pct)
    ->Name("net_delta/tessera_0pct")
    ->Apply(steady_manual)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(net_apply_raw)->Name("net_apply/raw")->Apply(steady)->Unit(benchmark::kMicrosecond);
BENCHMARK(net_apply_tessera)
    ->Name("net_apply/tessera")
    ->Apply(steady_manual)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(net_set_raw)->Name("net_set/raw")->Apply(steady)->Unit(benchmark::kMicrosecond);
BENCHMARK(net_set_tracked)
    ->Name("net_set/tracked")
    ->Apply(steady_manual)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(net_set_logged)
    ->Name("net_set/logged")
    ->Apply(steady_manual)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessera_bench

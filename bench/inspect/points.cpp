// What one refresh of the inspector's map costs at 100,000 entities (docs/inspector.md).
//
//   build/release/bench/tessera_inspect_bench [entities]
//
// Times, over 51 rounds each, the median of:
//   raw      a plain loop copying x, y and a byte of 100,000 structs into a point array (the
//            floor: what any reader of those columns pays)
//   world    the world thread's part of GET /api/points (resolving the fields, matching the
//            archetypes, copying the three columns of every matching row): what `update` spends
//   text     the server thread's part (writing the JSON answer), and its size
//   http     a whole request over loopback, answered by an `update` loop spinning on another
//            thread (the latency a browser sees, less its frame wait)
#include <tessera/inspect.hpp>
#include <tessera/reflect.hpp>
#include <tessera/world.hpp>

#include "points.hpp"  // src/inspect (internal)

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace bench_inspect {
struct Position {
    float x = 0;
    float y = 0;
};
struct Team {
    std::uint8_t id = 0;
};
struct Velocity {
    float dx = 0;
    float dy = 0;
};
}  // namespace bench_inspect

TESSERA_REFLECT(bench_inspect::Position, x, y)
TESSERA_REFLECT(bench_inspect::Team, id)
TESSERA_REFLECT(bench_inspect::Velocity, dx, dy)

namespace {

using namespace bench_inspect;
using Clock = std::chrono::steady_clock;

template <class F>
double median_ms(F&& f, int rounds = 51) {
    std::vector<double> t;
    for (int i = 0; i < rounds; ++i) {
        const auto t0 = Clock::now();
        f();
        t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100'000;
    tessera::World world;
    world.spawn_many(n, [](std::size_t i, Position& p, Team& t, Velocity& v) {
        p = {float(i % 1000) * 0.37f, float(i / 1000) * 1.13f};
        t.id = static_cast<std::uint8_t>(i % 2);
        v = {1, 0};
    });

    struct Raw {
        Position p;
        Team t;
    };
    std::vector<Raw> raw(n);
    for (std::size_t i = 0; i < n; ++i) raw[i] = {{float(i), float(i)}, {std::uint8_t(i % 2)}};
    std::vector<double> out;
    const double raw_ms = median_ms([&] {
        out.assign(3 * n, 0.0);
        for (std::size_t i = 0; i < n; ++i) {
            out[3 * i] = raw[i].p.x;
            out[3 * i + 1] = raw[i].p.y;
            out[3 * i + 2] = raw[i].t.id;
        }
    });

    tessera::detail::inspector::PointsRequest request;
    request.x = "Position.x";
    request.y = "Position.y";
    request.color = "Team.id";
    request.limit = tessera::detail::inspector::max_points;
    tessera::detail::inspector::Points points;
    const double world_ms = median_ms(
        [&] { points = tessera::detail::inspector::collect_points(world.storage(), request, 1); });
    std::string body;
    const double text_ms =
        median_ms([&] { body = tessera::detail::inspector::write_points(points); });

    // The default limit (20,000: every 5th row at 100,000).
    tessera::detail::inspector::PointsRequest sampled = request;
    sampled.limit = tessera::detail::inspector::default_points;
    tessera::detail::inspector::Points few;
    const double world_sampled_ms = median_ms(
        [&] { few = tessera::detail::inspector::collect_points(world.storage(), sampled, 1); });
    const std::size_t sampled_bytes = tessera::detail::inspector::write_points(few).size();

    tessera::Inspector inspector(0);
    std::atomic<bool> stop{false};
    std::thread frames([&] {
        while (!stop.load()) inspector.update(world);
    });
    httplib::Client cli("127.0.0.1", inspector.port());
    const std::string path = "/api/points?x=Position.x&y=Position.y&color=Team.id&limit=100000";
    std::size_t http_bytes = 0;
    const double http_ms = median_ms([&] {
        const auto r = cli.Get(path);
        if (!r || r->status != 200) std::abort();
        http_bytes = r->body.size();
    });
    stop.store(true);
    frames.join();

    std::printf("entities %zu, points %zu (limit 100000)\n", n, points.entities.size());
    std::printf("raw    copy of the three columns        median %8.3f ms\n", raw_ms);
    std::printf("world  collect_points (world thread)    median %8.3f ms\n", world_ms);
    std::printf("text   write_points (server thread)     median %8.3f ms, %zu bytes\n", text_ms,
                body.size());
    std::printf("http   GET /api/points over loopback    median %8.3f ms, %zu bytes\n", http_ms,
                http_bytes);
    std::printf("world  at the default limit (%zu points) median %8.3f ms, %zu bytes\n",
                few.entities.size(), world_sampled_ms, sampled_bytes);
    return 0;
}

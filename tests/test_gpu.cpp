// gpu.hpp: kernel systems. The CPU backend against `each` (simple, gravity, pairwise, disabled
// rows, mixed archetypes), the fallback (one warning, backend() says cpu), the device path on
// the host emulation (uploads, readback modes, coalescing, merging the world's own writes),
// schedule access and order, and argument errors. test_gpu_cuda.cu compiles this file with
// nvcc; on a machine with a device the parity tests then run on CUDA too.
#include <tessera/gpu.hpp>
#include <tessera/system_stats.hpp>
#include <tessera/tessera.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace ts = tessera;
namespace gpu = tessera::gpu;

namespace gpu_test {

struct Position {
    float x, y;
};
struct Velocity {
    float dx, dy;
};
struct Mass {
    float kg;
};
struct Ai {
    float level;
};
struct Label {
    std::string text;
};
struct Body {
    float x, vx;
};
struct Gravity {
    float g;
};
struct Pull {
    float k;
};

struct Simple {
    TESSERA_KERNEL void operator()(Position& p, const Velocity& v, float dt, const Gravity&) const {
        p.x += v.dx * dt;
        p.y += v.dy * dt;
    }
};
struct Fall {
    TESSERA_KERNEL void operator()(Position& p, Velocity& v, float dt, const Gravity& u) const {
        v.dy += u.g * dt;
        p.x += v.dx * dt;
        p.y += v.dy * dt;
        if (p.y < 0.0f) {
            p.y = 0.0f;
            v.dy = -v.dy * 0.5f;
        }
    }
};
struct Think {
    TESSERA_KERNEL void operator()(Position& p, const Ai& a, float dt, const Gravity&) const {
        p.x += a.level * dt;
    }
};
struct Attract {
    TESSERA_KERNEL void operator()(Body& self, const Body& other, float dt, const Pull& u) const {
        self.vx += (other.x - self.x) * u.k * dt;
    }
};
struct Rename {
    // Host only: a std::string has no device code (the system falls back to the CPU).
    void operator()(Label& l, float, const Gravity&) const { l.text += "!"; }
};

}  // namespace gpu_test

template <>
struct tessera::component_traits<gpu_test::Ai> {
    static constexpr bool enableable = true;
};

namespace {

using namespace gpu_test;

// Fills a world with three matching tables of different sizes and one that does not match.
void populate(ts::World& w, std::size_t n) {
    w.spawn_many(n, [](std::size_t i, Position& p, Velocity& v) {
        p = {static_cast<float>(i), 10.0f + static_cast<float>(i % 7)};
        v = {1.0f + static_cast<float>(i % 3), -2.0f};
    });
    w.spawn_many(n / 2, [](std::size_t i, Position& p, Velocity& v, Mass& m) {
        p = {-static_cast<float>(i), 3.0f};
        v = {0.5f, static_cast<float>(i % 5)};
        m = {1.0f};
    });
    w.spawn_many(n / 3, [](std::size_t i, Position& p) { p = {static_cast<float>(i), 1.0f}; });
}

// Every entity's Position and Velocity (when it has one), in iteration order.
std::vector<float> state(ts::World& w) {
    std::vector<float> out;
    w.each([&](ts::Entity e, const Position& p) {
        out.push_back(static_cast<float>(e.index));
        out.push_back(p.x);
        out.push_back(p.y);
        if (const Velocity* v = w.try_get<Velocity>(e)) {
            out.push_back(v->dx);
            out.push_back(v->dy);
        }
    });
    return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Collects warnings instead of printing them, and restores the defaults after each test.
class Gpu : public ::testing::Test {
protected:
    void SetUp() override {
        gpu::set_warning_handler([this](std::string_view system, std::string_view message) {
            warnings.push_back(std::string(system) + ": " + std::string(message));
        });
    }
    void TearDown() override {
        gpu::set_warning_handler({});
        gpu::detail::set_emulation(false);
        gpu::set_thresholds(gpu::Thresholds{});
    }
    std::vector<std::string> warnings;
};

constexpr float dt = 0.25f;

template <class K>
void each_simple(ts::World& w, int frames) {
    for (int f = 0; f < frames; ++f) {
        w.query<Position&, const Velocity&>().each(
            [](Position& p, const Velocity& v) { K{}(p, v, dt, Gravity{-9.8f}); });
    }
}

void each_fall(ts::World& w, int frames) {
    for (int f = 0; f < frames; ++f) {
        w.query<Position&, Velocity&>().each(
            [](Position& p, Velocity& v) { Fall{}(p, v, dt, Gravity{-9.8f}); });
    }
}

TEST_F(Gpu, CpuBackendMatchesEachOnTheSimpleKernel) {
    ts::World a, b;
    populate(a, 5000);
    populate(b, 5000);
    ts::Schedule s(2);
    auto k = gpu::kernel_system<Position, const Velocity>(s, "move", Gravity{-9.8f}, Simple{},
                                                          {.target = gpu::target::cpu});
    EXPECT_EQ(k.backend(), gpu::backend::none);
    for (int f = 0; f < 3; ++f) s.run(a, dt);
    each_simple<Simple>(b, 3);
    EXPECT_TRUE(same_bits(state(a), state(b)));
    EXPECT_EQ(k.backend(), gpu::backend::cpu);
    EXPECT_EQ(k.name(), "move");
    EXPECT_TRUE(warnings.empty());  // target::cpu asked for the CPU: nothing to warn about
}

TEST_F(Gpu, CpuBackendMatchesEachOnTheGravityKernel) {
    ts::World a, b;
    populate(a, 3000);
    populate(b, 3000);
    ts::Schedule s;
    auto k = gpu::kernel_system<Position, Velocity>(s, "fall", Gravity{-9.8f}, Fall{},
                                                    {.target = gpu::target::cpu});
    for (int f = 0; f < 20; ++f) s.run(a, dt);
    each_fall(b, 20);
    EXPECT_TRUE(same_bits(state(a), state(b)));
    EXPECT_EQ(k.backend(), gpu::backend::cpu);
}

#ifndef __CUDACC__
TEST_F(Gpu, LambdaKernelsWork) {
    ts::World a, b;
    populate(a, 100);
    populate(b, 100);
    ts::Schedule s(1);
    gpu::kernel_system<Position, const Velocity>(
        s, "move", Gravity{2.0f},
        [] TESSERA_KERNEL(Position & p, const Velocity& v, float t, const Gravity& u) {
            p.x += v.dx * t * u.g;
        },
        {.target = gpu::target::cpu});
    s.run(a, dt);
    b.each([](Position& p, const Velocity& v) { p.x += v.dx * dt * 2.0f; });
    EXPECT_TRUE(same_bits(state(a), state(b)));
}
#endif

TEST_F(Gpu, WritesAreStampedWithTheSystemsTick) {
    ts::World w;
    populate(w, 100);
    auto changed = w.query<const Position&>().changed<Position>();
    changed.each([](const Position&) {});  // first run: everything
    ts::Schedule s(1);
    gpu::kernel_system<Position, const Velocity>(s, "move", Gravity{}, Simple{},
                                                 {.target = gpu::target::cpu});
    s.run(w, dt);
    std::size_t seen = 0;
    changed.each([&](const Position&) { ++seen; });
    EXPECT_EQ(seen, 150u);  // the two tables with Velocity; not the Position-only one
}

TEST_F(Gpu, DisabledRowsAreSkippedExactlyAndEnableableFallsBackWithOneWarning) {
    ts::World a, b;
    for (ts::World* w : {&a, &b}) {
        for (int i = 0; i < 200; ++i) {
            const ts::Entity e = w->spawn(Position{0.0f, 0.0f}, Ai{static_cast<float>(i)});
            if (i % 3 == 0) w->enable<Ai>(e, false);
        }
    }
    ts::Schedule s(2);
    auto k = gpu::kernel_system<Position, const Ai>(s, "think", Gravity{}, Think{},
                                                    {.target = gpu::target::gpu});
    for (int f = 0; f < 4; ++f) s.run(a, dt);
    for (int f = 0; f < 4; ++f) {
        b.query<Position&, const Ai&>().each(
            [](Position& p, const Ai& ai) { Think{}(p, ai, dt, Gravity{}); });
    }
    EXPECT_TRUE(same_bits(state(a), state(b)));
    std::size_t unchanged = 0;
    a.each([&](const Position& p) { unchanged += p.x == 0.0f ? 1 : 0; });
    EXPECT_EQ(unchanged, 67u);  // rows 0, 3, ..., 198 are disabled
    EXPECT_EQ(k.backend(), gpu::backend::cpu);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("enableable"), std::string::npos) << warnings[0];
}

TEST_F(Gpu, NoDeviceFallsBackToTheCpuWithOneWarning) {
    if (gpu::device_available()) GTEST_SKIP() << "a CUDA device is present";
    ts::World a, b;
    populate(a, 1000);
    populate(b, 1000);
    ts::Schedule s;
    auto k = gpu::kernel_system<Position, Velocity>(
        s, "fall", Gravity{-9.8f}, Fall{},
        {.target = gpu::target::gpu, .readback = gpu::readback::sync});
    for (int f = 0; f < 5; ++f) s.run(a, dt);
    each_fall(b, 5);
    EXPECT_TRUE(same_bits(state(a), state(b)));
    EXPECT_EQ(k.backend(), gpu::backend::cpu);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("fall: runs on the CPU backend"), std::string::npos);
    EXPECT_FALSE(gpu::detail::no_device_reason().empty());
    k.sync();  // nothing in flight: a no-op
    EXPECT_TRUE(same_bits(state(a), state(b)));
    EXPECT_TRUE(k.device_tables().empty());
}

TEST_F(Gpu, AComponentThatCannotLiveOnTheDeviceFallsBack) {
    gpu::detail::set_emulation(true);  // a device path exists: the component is the reason
    ts::World w;
    w.spawn(Label{"a"});
    ts::Schedule s(1);
    auto k =
        gpu::kernel_system<Label>(s, "rename", Gravity{}, Rename{}, {.target = gpu::target::gpu});
    s.run(w, dt);
    s.run(w, dt);
    EXPECT_EQ(k.backend(), gpu::backend::cpu);
    w.each([](const Label& l) { EXPECT_EQ(l.text, "a!!"); });
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("not trivially copyable"), std::string::npos) << warnings[0];
}

TEST_F(Gpu, CpuBackendWritesInPlaceInEveryReadbackMode) {
    // Documented: on the CPU backend every mode behaves like sync (the results are in the world
    // when the system returns), so code written for async's frame of latency sees newer values.
    for (const gpu::readback mode :
         {gpu::readback::async, gpu::readback::sync, gpu::readback::none}) {
        ts::World a, b;
        populate(a, 200);
        populate(b, 200);
        ts::Schedule s(1);
        auto k = gpu::kernel_system<Position, const Velocity>(
            s, "move", Gravity{}, Simple{}, {.target = gpu::target::cpu, .readback = mode});
        s.run(a, dt);
        each_simple<Simple>(b, 1);
        EXPECT_TRUE(same_bits(state(a), state(b))) << static_cast<int>(mode);
        EXPECT_TRUE(k.device_tables().empty());
    }
}

// The reference of Attract: per table, `other` read from the values at the frame's start.
void each_attract(ts::World& w, const Pull& u) {
    for (ts::Chunk& c : w.query<Body&>().chunks()) {
        std::span<Body> body = c.column<Body>();
        const std::vector<Body> before(body.begin(), body.end());
        for (std::size_t i = 0; i < body.size(); ++i) {
            for (std::size_t j = 0; j < body.size(); ++j) {
                if (i != j) Attract{}(body[i], before[j], dt, u);
            }
        }
    }
}

void populate_bodies(ts::World& w) {
    for (int i = 0; i < 64; ++i) w.spawn(Body{static_cast<float>(i), 0.0f});
    for (int i = 0; i < 16; ++i) w.spawn(Body{static_cast<float>(-i), 1.0f}, Mass{2.0f});
}

std::vector<float> bodies(ts::World& w) {
    std::vector<float> out;
    w.each([&](const Body& b) {
        out.push_back(b.x);
        out.push_back(b.vx);
    });
    return out;
}

TEST_F(Gpu, PairwiseCpuBackendPairsRowsWithinEachTable) {
    ts::World a, b;
    populate_bodies(a);
    populate_bodies(b);
    ts::Schedule s(2);
    auto k = gpu::pairwise_system<Body>(s, "attract", Pull{0.01f}, Attract{},
                                        {.target = gpu::target::cpu});
    for (int f = 0; f < 3; ++f) s.run(a, dt);
    for (int f = 0; f < 3; ++f) each_attract(b, Pull{0.01f});
    EXPECT_TRUE(same_bits(bodies(a), bodies(b)));
    EXPECT_EQ(k.backend(), gpu::backend::cpu);
}

TEST_F(Gpu, PairwiseOnTheEmulatedDeviceMatchesTheCpuBackend) {
    ts::World a, b;
    populate_bodies(a);
    populate_bodies(b);
    ts::Schedule sa(1), sb(1);
    gpu::pairwise_system<Body>(sa, "attract", Pull{0.01f}, Attract{}, {.target = gpu::target::cpu});
    gpu::detail::set_emulation(true);
    auto k =
        gpu::pairwise_system<Body>(sb, "attract", Pull{0.01f}, Attract{},
                                   {.target = gpu::target::gpu, .readback = gpu::readback::sync});
    for (int f = 0; f < 3; ++f) {
        sa.run(a, dt);
        sb.run(b, dt);
    }
    EXPECT_EQ(k.backend(), gpu::backend::emulated);
    EXPECT_TRUE(same_bits(bodies(a), bodies(b)));
}

// The device path on the host emulation: same results as the CPU backend in every mode once
// synced, and the readback modes' visibility.
class GpuEmulated : public Gpu {
protected:
    void SetUp() override {
        Gpu::SetUp();
        gpu::detail::set_emulation(true);
    }
};

// set_uniforms reaches the next dispatch and only that one onward, on the CPU backend and on
// the device path (the uniforms are copied into each dispatch).
TEST_F(GpuEmulated, SetUniformsChangesTheNextDispatch) {
    for (const gpu::target where : {gpu::target::cpu, gpu::target::gpu}) {
        ts::World a, b;
        populate(a, 500);
        populate(b, 500);
        ts::Schedule s(1);
        auto k = gpu::kernel_system<Position, Velocity>(
            s, "fall", Gravity{-9.8f}, Fall{}, {.target = where, .readback = gpu::readback::sync});
        const float g[] = {-9.8f, -1.0f, 3.0f, 3.0f};
        for (int f = 0; f < 4; ++f) {
            if (f > 0) k.set_uniforms(Gravity{g[f]});
            EXPECT_EQ(k.uniforms().g, g[f]);
            s.run(a, dt);
            b.query<Position&, Velocity&>().each(
                [&](Position& p, Velocity& v) { Fall{}(p, v, dt, Gravity{g[f]}); });
            ASSERT_TRUE(same_bits(state(a), state(b))) << "frame " << f;
        }
        EXPECT_EQ(k.backend(),
                  where == gpu::target::cpu ? gpu::backend::cpu : gpu::backend::emulated);
    }
}

TEST_F(GpuEmulated, SyncReadbackIsVisibleWhenTheSystemReturns) {
    ts::World a, b;
    populate(a, 2000);
    populate(b, 2000);
    ts::Schedule s(1);
    auto k = gpu::kernel_system<Position, Velocity>(
        s, "fall", Gravity{-9.8f}, Fall{},
        {.target = gpu::target::gpu, .readback = gpu::readback::sync});
    for (int f = 0; f < 10; ++f) {
        s.run(a, dt);
        each_fall(b, 1);
        ASSERT_TRUE(same_bits(state(a), state(b))) << "frame " << f;
    }
    EXPECT_EQ(k.backend(), gpu::backend::emulated);
    EXPECT_TRUE(warnings.empty());
}

TEST_F(GpuEmulated, AsyncReadbackShowsLastFramesValues) {
    ts::World a, b;
    populate(a, 500);
    populate(b, 500);
    ts::Schedule s(1);
    auto k = gpu::kernel_system<Position, Velocity>(
        s, "fall", Gravity{-9.8f}, Fall{},
        {.target = gpu::target::gpu, .readback = gpu::readback::async});
    const std::vector<float> start = state(b);
    s.run(a, dt);
    EXPECT_TRUE(same_bits(state(a), start));  // frame 1's results are not in the world yet
    for (int f = 1; f < 6; ++f) {
        s.run(a, dt);
        each_fall(b, 1);  // b is one frame behind the device, as the world should be
        ASSERT_TRUE(same_bits(state(a), state(b))) << "frame " << f;
    }
    k.sync();
    each_fall(b, 1);
    EXPECT_TRUE(same_bits(state(a), state(b)));
}

TEST_F(GpuEmulated, SteadyStateMovesNoData) {
    ts::World w;
    populate(w, 1000);
    ts::Schedule s(1);
    auto k = gpu::kernel_system<Position, const Velocity>(
        s, "move", Gravity{}, Simple{},
        {.target = gpu::target::gpu, .readback = gpu::readback::none});
    s.run(w, dt);
    const std::uint64_t first = k.uploaded_bytes();
    EXPECT_EQ(first, 1500u * (sizeof(Position) + sizeof(Velocity)));
    for (int f = 0; f < 5; ++f) s.run(w, dt);
    EXPECT_EQ(k.uploaded_bytes(), first);
    EXPECT_EQ(k.downloaded_bytes(), 0u);
    // A write by the CPU uploads that table's column (and reads the device's results back
    // first, so no frame is lost).
    const ts::Entity e = w.entities()[0];
    w.set(e, Velocity{100.0f, 0.0f});
    s.run(w, dt);
    EXPECT_EQ(k.uploaded_bytes(), first + 1000u * sizeof(Velocity));
    EXPECT_GT(k.downloaded_bytes(), 0u);
}

TEST_F(GpuEmulated, NoneKeepsResultsOnTheDevice) {
    ts::World a, b;
    populate(a, 300);
    populate(b, 300);
    const std::vector<float> start = state(a);
    ts::Schedule s(1);
    auto k = gpu::kernel_system<Position, const Velocity>(
        s, "move", Gravity{}, Simple{},
        {.target = gpu::target::gpu, .readback = gpu::readback::none});
    for (int f = 0; f < 4; ++f) s.run(a, dt);
    k.sync();  // waits; reads nothing back
    EXPECT_TRUE(same_bits(state(a), start));
    each_simple<Simple>(b, 4);
    const std::vector<gpu::DeviceTable> tables = k.device_tables();
    ASSERT_EQ(tables.size(), 2u);
    std::size_t rows = 0;
    for (const gpu::DeviceTable& t : tables) {
        // The emulation's "device" memory is host memory, so the test can read it.
        const Position* p = t.column<Position>();
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(t.column<Mass>(), nullptr);
        for (std::size_t r = 0; r < t.rows; ++r) {
            const Position want = b.get<Position>(t.entities[r]);
            EXPECT_EQ(std::memcmp(&p[r], &want, sizeof(Position)), 0);
        }
        rows += t.rows;
    }
    EXPECT_EQ(rows, 450u);
}

TEST_F(GpuEmulated, SlowFramesAreCoalescedNeverLost) {
    gpu::detail::set_emulation(true, /*slow=*/true);
    ts::World a, b;
    populate(a, 400);
    populate(b, 400);
    const std::vector<float> start = state(a);
    ts::Schedule s(1);
    auto k = gpu::kernel_system<Position, Velocity>(
        s, "fall", Gravity{-9.8f}, Fall{},
        {.target = gpu::target::gpu, .readback = gpu::readback::async});
    for (int f = 0; f < 5; ++f) s.run(a, dt);
    EXPECT_TRUE(same_bits(state(a), start));  // no readback completed: nothing applied yet
    k.sync();
    each_fall(b, 5);
    EXPECT_TRUE(same_bits(state(a), state(b)));  // all five frames, none lost
}

TEST_F(GpuEmulated, WorldWritesAndStructuralChangesMergeWithDeviceResults) {
    ts::World a, b;
    populate(a, 600);
    populate(b, 600);
    ts::Schedule s(1);
    auto k = gpu::kernel_system<Position, Velocity>(
        s, "fall", Gravity{-9.8f}, Fall{},
        {.target = gpu::target::gpu, .readback = gpu::readback::async});
    auto frame = [&](int f) {
        s.run(a, dt);
        each_fall(b, 1);
        if (f == 2) {  // the world's own write wins over the device's result for that row
            for (ts::World* w : {&a, &b}) w->set(w->entities()[5], Position{100.0f, 100.0f});
        }
        if (f == 4) {  // the table grows and loses a row
            for (ts::World* w : {&a, &b}) {
                w->spawn(Position{1.0f, 50.0f}, Velocity{0.0f, 0.0f});
                w->despawn(w->entities()[7]);
                w->remove<Velocity>(w->entities()[9]);
            }
        }
    };
    for (int f = 0; f < 8; ++f) frame(f);
    k.sync();
    EXPECT_TRUE(same_bits(state(a), state(b)));
}

TEST_F(GpuEmulated, ResultsAreMarkedChangedWhenTheyReachTheWorld) {
    for (const gpu::readback mode :
         {gpu::readback::sync, gpu::readback::async, gpu::readback::none}) {
        ts::World w;
        populate(w, 100);
        auto changed = w.query<const Position&>().changed<Position>();
        changed.each([](const Position&) {});  // first run: everything
        ts::Schedule s(1);
        auto k = gpu::kernel_system<Position, const Velocity>(
            s, "move", Gravity{}, Simple{}, {.target = gpu::target::gpu, .readback = mode});
        s.run(w, dt);
        k.sync();
        std::size_t seen = 0;
        changed.each([&](const Position&) { ++seen; });
        // sync and async: the 150 matching rows once their results are in; none: never read back
        EXPECT_EQ(seen, mode == gpu::readback::none ? 0u : 150u) << static_cast<int>(mode);
    }
}

TEST_F(GpuEmulated, AutomaticPicksByEntityCount) {
    gpu::set_thresholds({.none = 1000, .async = 1000, .sync = 1000, .baseline_ns = 1.0});
    ts::World small, large;
    populate(small, 100);
    populate(large, 4000);
    ts::Schedule s1(1), s2(1);
    auto k1 = gpu::kernel_system<Position, const Velocity>(s1, "small", Gravity{}, Simple{});
    auto k2 = gpu::kernel_system<Position, const Velocity>(s2, "large", Gravity{}, Simple{});
    s1.run(small, dt);
    s2.run(large, dt);
    EXPECT_EQ(k1.backend(), gpu::backend::cpu);
    EXPECT_EQ(k2.backend(), gpu::backend::emulated);
    gpu::set_thresholds({.none = 1u << 30, .async = 1u << 30, .sync = 1u << 30});
    s2.run(large, dt);  // now below the break-even: back on the CPU, the device's results first
    EXPECT_EQ(k2.backend(), gpu::backend::cpu);
    ts::World ref;
    populate(ref, 4000);
    each_simple<Simple>(ref, 2);
    EXPECT_TRUE(same_bits(state(large), state(ref)));
    EXPECT_TRUE(warnings.empty());
}

// On a CUDA device (the H200 check, tools/gpu_device_check.sh): every row of every matching
// table, CUDA against the CPU backend, bit for bit (test_gpu_cuda is built with --fmad=false so
// the device rounds like the host). Skipped without a device.
#ifdef __CUDACC__
constexpr gpu::backend expected_device = gpu::backend::cuda;
#else
constexpr gpu::backend expected_device = gpu::backend::cpu;  // not compiled by nvcc: fallback
#endif

void expect_device_parity(gpu::readback mode) {
    ts::World fall_world, fall_ref, move_world, move_ref;
    for (ts::World* w : {&fall_world, &fall_ref, &move_world, &move_ref}) populate(*w, 20000);
    ts::Schedule s, m;
    auto k = gpu::kernel_system<Position, Velocity>(s, "fall", Gravity{-9.8f}, Fall{},
                                                    {.target = gpu::target::gpu, .readback = mode});
    auto k2 = gpu::kernel_system<Position, const Velocity>(
        m, "move", Gravity{}, Simple{}, {.target = gpu::target::gpu, .readback = mode});
    for (int f = 0; f < 8; ++f) {
        s.run(fall_world, dt);
        m.run(move_world, dt);
    }
    k.sync();
    k2.sync();
    EXPECT_EQ(k.backend(), expected_device);
    EXPECT_EQ(k2.backend(), expected_device);
    each_fall(fall_ref, 8);
    each_simple<Simple>(move_ref, 8);
    if (mode != gpu::readback::none || expected_device != gpu::backend::cuda) {
        EXPECT_TRUE(same_bits(state(fall_world), state(fall_ref)));
        EXPECT_TRUE(same_bits(state(move_world), state(move_ref)));
        return;
    }
#ifdef __CUDACC__
    // none: the device buffers against the reference, every row of every matching table.
    std::size_t rows = 0;
    for (const gpu::DeviceTable& t : k2.device_tables()) {
        std::vector<Position> p(t.rows);
        ASSERT_EQ(cudaMemcpy(p.data(), t.column<Position>(), t.rows * sizeof(Position),
                             cudaMemcpyDeviceToHost),
                  cudaSuccess);
        for (std::size_t r = 0; r < t.rows; ++r) {
            const Position want = move_ref.get<Position>(t.entities[r]);
            ASSERT_EQ(std::memcmp(&p[r], &want, sizeof(Position)), 0) << "row " << r;
        }
        rows += t.rows;
    }
    EXPECT_EQ(rows, 30000u);
#endif
}

TEST_F(Gpu, DeviceParitySync) {
    if (!gpu::device_available()) GTEST_SKIP() << "no CUDA device";
    expect_device_parity(gpu::readback::sync);
}
TEST_F(Gpu, DeviceParityAsync) {
    if (!gpu::device_available()) GTEST_SKIP() << "no CUDA device";
    expect_device_parity(gpu::readback::async);
}
TEST_F(Gpu, DeviceParityNone) {
    if (!gpu::device_available()) GTEST_SKIP() << "no CUDA device";
    expect_device_parity(gpu::readback::none);
}
TEST_F(Gpu, DeviceParityPairwiseAndEnableable) {
    if (!gpu::device_available()) GTEST_SKIP() << "no CUDA device";
    ts::World a, b;
    populate_bodies(a);
    populate_bodies(b);
    ts::Schedule s;
    auto k =
        gpu::pairwise_system<Body>(s, "attract", Pull{0.01f}, Attract{},
                                   {.target = gpu::target::gpu, .readback = gpu::readback::sync});
    for (int f = 0; f < 3; ++f) s.run(a, dt);
    for (int f = 0; f < 3; ++f) each_attract(b, Pull{0.01f});
    EXPECT_EQ(k.backend(), expected_device);
    EXPECT_TRUE(same_bits(bodies(a), bodies(b)));
    // An enableable term runs on the CPU backend even with a device, with one warning.
    ts::World c;
    c.spawn(Position{0.0f, 0.0f}, Ai{1.0f});
    auto think = gpu::kernel_system<Position, const Ai>(s, "think", Gravity{}, Think{},
                                                        {.target = gpu::target::gpu});
    s.run(c, dt);
    EXPECT_EQ(think.backend(), gpu::backend::cpu);
}

TEST_F(Gpu, AccessComesFromTheComponentList) {
    ts::Schedule s = ts::Schedule::strict(1);
    gpu::kernel_system<Position, const Velocity>(s, "move", Gravity{}, Simple{},
                                                 {.target = gpu::target::cpu});
    s.add("read", [](ts::View<const Position&> v) { v.each([](const Position&) {}); });
    EXPECT_THROW(
        {
            try {
                s.build();
            } catch (const ts::Error& e) {
                EXPECT_EQ(e.code(), ts::errc::ambiguous_order);
                throw;
            }
        },
        ts::Error);
    const std::vector<ts::SystemStats> stats = [&] {
        ts::Schedule t(1);
        gpu::kernel_system<Position, const Velocity>(t, "move", Gravity{}, Simple{});
        return t.stats();
    }();
    ASSERT_EQ(stats.size(), 1u);
    EXPECT_FALSE(stats[0].exclusive);
    EXPECT_NE(std::find(stats[0].writes.begin(), stats[0].writes.end(),
                        std::string(ts::component_info(ts::component_id<Position>()).name)),
              stats[0].writes.end());
    EXPECT_NE(std::find(stats[0].reads.begin(), stats[0].reads.end(),
                        std::string(ts::component_info(ts::component_id<Velocity>()).name)),
              stats[0].reads.end());
}

TEST_F(Gpu, OrdersLikeAnySystem) {
    ts::World w;
    w.spawn(Position{0.0f, 0.0f}, Velocity{4.0f, 0.0f});
    ts::Schedule s = ts::Schedule::strict(2);
    float seen = -1.0f;
    s.add("read",
          [&](ts::View<const Position&> v) { v.each([&](const Position& p) { seen = p.x; }); });
    gpu::kernel_system<Position, const Velocity>(s, "move", Gravity{}, Simple{},
                                                 {.target = gpu::target::cpu, .before = {"read"}});
    s.run(w, 1.0f);
    EXPECT_EQ(seen, 4.0f);  // the reader ran after the kernel, in the same frame
    // Two kernel systems on disjoint components do not conflict: one layer.
    ts::Schedule t = ts::Schedule::strict(2);
    gpu::kernel_system<Position, const Velocity>(t, "move", Gravity{}, Simple{});
    gpu::pairwise_system<Body>(t, "attract", Pull{}, Attract{});
    EXPECT_EQ(t.stage_count(), 1u);
}

TEST_F(Gpu, BadArgumentsAreErrors) {
    ts::Schedule s(1);
    auto code = [](auto&& fn) {
        try {
            fn();
        } catch (const ts::Error& e) {
            return e.code();
        }
        return ts::errc::not_alive;  // no throw: never what a test expects here
    };
    EXPECT_EQ(
        code([&] { gpu::kernel_system<Position, const Velocity>(s, "", Gravity{}, Simple{}); }),
        ts::errc::invalid_argument);
    gpu::kernel_system<Position, const Velocity>(s, "move", Gravity{}, Simple{});
    EXPECT_EQ(
        code([&] { gpu::kernel_system<Position, const Velocity>(s, "move", Gravity{}, Simple{}); }),
        ts::errc::invalid_argument);
    EXPECT_EQ(code([&] {
                  gpu::kernel_system<Position, const Velocity>(
                      s, "other", Gravity{}, Simple{}, {.target = static_cast<gpu::target>(9)});
              }),
              ts::errc::invalid_argument);
    EXPECT_EQ(code([] { gpu::set_thresholds({.baseline_ns = 0.0}); }), ts::errc::invalid_argument);
    EXPECT_EQ(code([] { gpu::set_thresholds({.baseline_ns = -1.0}); }), ts::errc::invalid_argument);
}

TEST_F(Gpu, CalibrateMeasuresAndApplies) {
    const gpu::Thresholds before = gpu::thresholds();
    const gpu::Thresholds t = gpu::calibrate();
    EXPECT_GT(t.baseline_ns, 0.0);
    EXPECT_LT(t.baseline_ns, 1000.0);  // ns per entity of p += v * dt: never a microsecond
    EXPECT_EQ(gpu::thresholds().baseline_ns, t.baseline_ns);
    if (!gpu::device_available()) {  // only the CPU baseline is measured
        EXPECT_EQ(t.async, before.async);
        EXPECT_EQ(t.none, before.none);
    }
    std::printf("calibrate: baseline %.3f ns/entity, break-even none %zu, async %zu, sync %zu\n",
                t.baseline_ns, t.none, t.async, t.sync);
}

TEST_F(Gpu, SettingsAndNames) {
    EXPECT_STREQ(gpu::to_string(gpu::backend::cpu), "cpu");
    EXPECT_STREQ(gpu::to_string(gpu::backend::cuda), "cuda");
    EXPECT_STREQ(gpu::to_string(gpu::backend::none), "none");
    gpu::set_thresholds({.none = 1, .async = 2, .sync = 3, .baseline_ns = 4.0});
    EXPECT_EQ(gpu::thresholds().async, 2u);
    EXPECT_EQ(gpu::thresholds().baseline_ns, 4.0);
#ifdef TESSERA_TEST_NO_CUDA_TOOLKIT
    EXPECT_FALSE(gpu::cuda_compiled());
#endif
    if (!gpu::cuda_compiled()) {
        EXPECT_FALSE(gpu::device_available());
        EXPECT_NE(gpu::detail::no_device_reason().find("without the CUDA toolkit"),
                  std::string::npos);
    }
}

}  // namespace

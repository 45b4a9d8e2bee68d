// The world inspector's JSON API, over loopback: every endpoint, every error, a field edit,
// shutdown, and many clients at once while the world changes every frame.
#include <tessera/inspect.hpp>
#include <tessera/tessera.hpp>
#include <tessera/transform.hpp>

#include "common/error_of.hpp"
#include "server.hpp"  // src/inspect: the loopback check

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace ts = tessera;
using json = nlohmann::json;

namespace insp {
struct Vec2 {
    float x = 0;
    float y = 0;
};
struct Body {
    Vec2 pos;
    std::int32_t hp = 0;
    bool awake = false;
    std::string title;
    std::array<float, 3> rgb{};
    ts::StringId tag;
    std::uint8_t level = 0;
};
struct Vel {
    float dx = 0;
    float dy = 0;
};
struct Frozen {};
struct Opaque {
    int secret = 0;
};
struct Ai {
    std::int32_t mood = 0;
};
struct Follows {
    std::uint32_t since = 0;
};
/// Sparse components (storage_kind::sparse): a reflected, enableable one and a tag.
struct Poison {
    std::int32_t dose = 0;
};
struct Marked {};
}  // namespace insp

TESSERA_REFLECT(insp::Vec2, x, y)
TESSERA_REFLECT(insp::Body, pos, hp, awake, title, rgb, tag, level)
TESSERA_REFLECT(insp::Vel, dx, dy)
TESSERA_REFLECT(insp::Ai, mood)
TESSERA_REFLECT(insp::Follows, since)
template <>
struct tessera::component_traits<insp::Ai> {
    static constexpr bool enableable = true;
};
TESSERA_REFLECT(insp::Poison, dose)
template <>
struct tessera::component_traits<insp::Poison> {
    static constexpr auto storage = tessera::storage_kind::sparse;
    static constexpr bool enableable = true;
};
template <>
struct tessera::component_traits<insp::Marked> {
    static constexpr auto storage = tessera::storage_kind::sparse;
};

namespace {

using namespace insp;

/// Runs the frame loop (`update` every millisecond, after `per_frame`) on its own thread, which
/// is the world's thread while it runs; the test thread only talks HTTP meanwhile.
class FrameLoop {
public:
    FrameLoop(ts::Inspector& inspector, ts::World& world, ts::Schedule* schedule = nullptr,
              std::function<void()> per_frame = {})
        : thread_([=, this, &inspector, &world] {
              while (!stop_.load()) {
                  if (per_frame) per_frame();
                  if (schedule != nullptr) schedule->run(world);
                  inspector.update(world, schedule);
                  std::this_thread::sleep_for(std::chrono::milliseconds(1));
              }
          }) {}
    ~FrameLoop() { stop(); }
    void stop() {
        stop_.store(true);
        if (thread_.joinable()) thread_.join();
    }

private:
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

struct Reply {
    int status = 0;  ///< 0: no HTTP answer
    json body;
};

Reply to_reply(const httplib::Result& r) {
    Reply out;
    if (!r) return out;
    out.status = r->status;
    out.body = json::parse(r->body, nullptr, false);
    return out;
}

Reply get(std::uint16_t port, const std::string& path) {
    httplib::Client cli("127.0.0.1", port);
    cli.set_read_timeout(10);
    return to_reply(cli.Get(path));
}

Reply put(std::uint16_t port, const std::string& path, const std::string& body) {
    httplib::Client cli("127.0.0.1", port);
    cli.set_read_timeout(10);
    return to_reply(cli.Put(path, body, "application/json"));
}

std::string id(ts::Entity e) {
    return std::to_string(e.index) + ":" + std::to_string(e.generation);
}

/// A plain loopback TCP connection, for requests httplib's client won't send (no Host, two
/// Hosts, a head trickled a byte at a time).
class RawConnection {
public:
    explicit RawConnection(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        connected_ =
            fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    }
    ~RawConnection() {
        if (fd_ >= 0) ::close(fd_);
    }
    RawConnection(const RawConnection&) = delete;
    RawConnection& operator=(const RawConnection&) = delete;

    [[nodiscard]] bool connected() const { return connected_; }

    /// False once the server has closed the connection.
    bool send(std::string_view bytes) {
        return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
               static_cast<ssize_t>(bytes.size());
    }

    /// Everything the server sends until it closes the connection (or `timeout` passes).
    std::string read_all(std::chrono::milliseconds timeout) {
        std::string out;
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!closed_ && std::chrono::steady_clock::now() < deadline) {
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, 10) > 0) drain(out);
        }
        return out;
    }

    /// True once the server has closed its end (reads what it sent before, without waiting).
    bool server_closed() {
        std::string ignored;
        pollfd p{fd_, POLLIN, 0};
        if (!closed_ && ::poll(&p, 1, 0) > 0) drain(ignored);
        return closed_;
    }

private:
    void drain(std::string& out) {
        char buf[4096];
        const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0)
            out.append(buf, static_cast<std::size_t>(n));
        else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
            closed_ = true;
    }

    int fd_;
    bool connected_ = false;
    bool closed_ = false;
};

/// The status code of a raw HTTP response ("HTTP/1.1 400 Bad Request..."), 0 when none.
int status_of(const std::string& response) {
    if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) return 0;
    return std::stoi(response.substr(9, 3));
}

/// The JSON body of a raw HTTP response.
json body_of(const std::string& response) {
    const std::size_t start = response.find("\r\n\r\n");
    if (start == std::string::npos) return nullptr;
    return json::parse(response.substr(start + 4), nullptr, false);
}

/// A small world: bodies (some moving, one frozen, one with an Ai), a relation, a dead entity.
struct Scene {
    ts::World world;
    ts::Entity a, b, c, dead;
    Scene() {
        a = world.spawn(Body{{1, 2}, 40, true, "Captain", {0.1f, 0.2f, 0.3f}, {}, 3}, Vel{1, 0});
        world.set_field(a, ts::component_id<Body>(), "tag", "elite");
        b = world.spawn(Body{}, Vel{0, 1}, Frozen{});
        c = world.spawn(Body{}, Ai{7}, Opaque{5});
        world.enable<Ai>(c, false);
        world.relate(a, Follows{9}, b);
        dead = world.spawn(Vel{});
        world.despawn(dead);
    }
};

const json* find_component(const json& entity, const std::string& name) {
    for (const json& c : entity["components"])
        if (c["name"] == name) return &c;
    return nullptr;
}

json field(const json& component, const std::string& path) {
    for (const json& f : component["fields"])
        if (f["path"] == path) return f;
    return nullptr;
}

TEST(Inspector, ServesOnLoopbackAndAPortOfItsOwn) {
    ts::Inspector one(0);
    ts::Inspector two(0);
    EXPECT_NE(one.port(), 0);
    EXPECT_NE(one.port(), two.port());
    EXPECT_EQ(one.url(), "http://127.0.0.1:" + std::to_string(one.port()) + "/");
    // The same port twice can't be bound.
    EXPECT_EQ(ts::test::error_of([&] { ts::Inspector clash(one.port()); }),
              ts::errc::invalid_argument);
}

TEST(Inspector, OtherAddressesNeedAnExplicitOption) {
    ts::InspectorOptions options;
    options.host = "0.0.0.0";
    EXPECT_EQ(ts::test::error_of([&] { ts::Inspector remote(0, options); }),
              ts::errc::invalid_argument);
    options.allow_remote = true;  // prints a warning
    ts::Inspector remote(0, options);
    EXPECT_NE(remote.port(), 0);
}

TEST(Inspector, OnlyNumericLoopbackAddressesCountAsLoopback) {
    using ts::detail::is_loopback_host;
    for (const char* host : {"127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "localhost",
                             "::ffff:127.0.0.1", "0:0:0:0:0:0:0:1"})
        EXPECT_TRUE(is_loopback_host(host)) << host;
    // Names are not numbers: "127.attacker.example" would be resolved (anywhere) and bound.
    for (const char* host :
         {"127.attacker.example", "127.0.0.1.nip.io", "127.1", "127.0.0.1 ", "localhost.example",
          "0.0.0.0", "::", "10.0.0.1", "[::1]", "", "128.0.0.1", "::ffff:10.0.0.1"})
        EXPECT_FALSE(is_loopback_host(host)) << host;
    ts::InspectorOptions options;
    options.host = "127.attacker.example";
    EXPECT_EQ(ts::test::error_of([&] { ts::Inspector remote(0, options); }),
              ts::errc::invalid_argument);
    // With allow_remote it is served as a remote address: with the warning (binding it then
    // fails here, the name resolving nowhere).
    options.allow_remote = true;
    testing::internal::CaptureStderr();
    EXPECT_EQ(ts::test::error_of([&] { ts::Inspector remote(0, options); }),
              ts::errc::invalid_argument);
    EXPECT_NE(testing::internal::GetCapturedStderr(), "");
    options.allow_remote = false;
    // Any 127/8 address is loopback and needs no allow_remote; requests naming it are served.
    options.host = "127.0.0.2";
    ts::World world;
    ts::Inspector inspector(0, options);
    EXPECT_EQ(inspector.url(), "http://127.0.0.2:" + std::to_string(inspector.port()) + "/");
    FrameLoop loop(inspector, world);
    httplib::Client cli("127.0.0.2", inspector.port());
    const auto r = cli.Get("/api/stats");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
}

TEST(Inspector, StatsCountsEntitiesArchetypesAndFrames) {
    Scene s;
    ts::Inspector inspector(0);
    FrameLoop loop(inspector, s.world);
    const Reply r = get(inspector.port(), "/api/stats");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body["entities"], 3);
    EXPECT_EQ(r.body["tick"], s.world.tick());
    EXPECT_EQ(r.body["archetypes"], s.world.archetype_count());
    EXPECT_GE(r.body["frame"].get<int>(), 1);
    EXPECT_GE(r.body["frame_ms"]["median"].get<double>(), 0.0);
    EXPECT_TRUE(r.body["frame_ms"].contains("p99"));
}

TEST(Inspector, ArchetypesListComponentSetsRowsAndBytes) {
    Scene s;
    ts::Inspector inspector(0);
    FrameLoop loop(inspector, s.world);
    const Reply r = get(inspector.port(), "/api/archetypes");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body["total"], s.world.archetype_count());
    std::size_t rows = 0;
    bool found_frozen = false;
    for (const json& a : r.body["archetypes"]) {
        rows += a["rows"].get<std::size_t>();
        EXPECT_GE(a["bytes"].get<std::size_t>(),
                  a["rows"].get<std::size_t>() * a["row_bytes"].get<std::size_t>());
        const auto names = a["components"].get<std::vector<std::string>>();
        if (std::find(names.begin(), names.end(), "insp::Frozen") != names.end()) {
            found_frozen = true;
            EXPECT_EQ(a["rows"], 1);
            EXPECT_GE(a["row_bytes"].get<std::size_t>(),
                      sizeof(ts::Entity) + sizeof(Body) + sizeof(Vel));
        }
    }
    EXPECT_EQ(rows, 3u);
    EXPECT_TRUE(found_frozen);
    // Paged like the entities.
    const Reply page = get(inspector.port(), "/api/archetypes?offset=1&limit=2");
    ASSERT_EQ(page.status, 200);
    EXPECT_EQ(page.body["archetypes"].size(), 2u);
    EXPECT_EQ(page.body["archetypes"][0], r.body["archetypes"][1]);
}

TEST(Inspector, EntitiesFilterByComponentsAndPage) {
    Scene s;
    for (int i = 0; i < 250; ++i) s.world.spawn(Vel{float(i), 0});
    const std::vector<ts::Entity> order = s.world.entities();  // before the loop owns the world
    ts::Inspector inspector(0);
    FrameLoop loop(inspector, s.world);
    const std::uint16_t port = inspector.port();

    Reply r = get(port, "/api/entities");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body["total"], 253);
    EXPECT_EQ(r.body["entities"].size(), 100u);  // the default limit
    EXPECT_EQ(r.body["offset"], 0);

    r = get(port, "/api/entities?with=insp::Body&without=insp::Frozen");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body["total"], 2);
    std::vector<std::string> ids;
    for (const json& e : r.body["entities"]) {
        ids.push_back(e["id"]);
        // Each entity names its archetype, whose component list is given once.
        EXPECT_TRUE(r.body["archetypes"].contains(std::to_string(e["archetype"].get<int>())));
    }
    // In iteration order (a moved to a newer table when it related to b).
    std::vector<std::string> in_order;
    for (const ts::Entity e : order)
        if (e == s.a || e == s.c) in_order.push_back(id(e));
    EXPECT_EQ(ids, in_order);

    // Unqualified names work when they are unique; several names are comma-separated.
    r = get(port, "/api/entities?with=Body,Vel");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body["total"], 2);

    // Pages tile the whole list, across tables, in iteration order.
    std::vector<std::string> all;
    for (std::size_t offset = 0; offset < 253; offset += 60) {
        r = get(port, "/api/entities?limit=60&offset=" + std::to_string(offset));
        ASSERT_EQ(r.status, 200) << r.body;
        for (const json& e : r.body["entities"]) all.push_back(e["id"]);
    }
    std::vector<std::string> expected;
    for (const ts::Entity e : order) expected.push_back(id(e));
    EXPECT_EQ(all, expected);
}

TEST(Inspector, PagesPastTheEndAreEmpty) {
    Scene s;
    ts::Inspector inspector(0);
    FrameLoop loop(inspector, s.world);
    const Reply r = get(inspector.port(), "/api/entities?offset=1000000&limit=1000");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body["total"], 3);
    EXPECT_TRUE(r.body["entities"].empty());
}

TEST(Inspector, EntityShowsFieldsRelationsAndEnableFlags) {
    Scene s;
    ts::Inspector inspector(0);
    FrameLoop loop(inspector, s.world);
    const std::uint16_t port = inspector.port();

    Reply r = get(port, "/api/entity/" + id(s.a));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body["id"], id(s.a));
    const json* body = find_component(r.body, "insp::Body");
    ASSERT_NE(body, nullptr) << r.body;
    EXPECT_EQ((*body)["reflected"], true);
    EXPECT_EQ(field(*body, "pos.x")["value"], 1.0);
    EXPECT_EQ(field(*body, "pos.y")["type"], "f32");
    EXPECT_EQ(field(*body, "hp")["value"], 40);
    EXPECT_EQ(field(*body, "awake")["value"], true);
    EXPECT_EQ(field(*body, "title")["value"], "Captain");
    EXPECT_EQ(field(*body, "title")["type"], "string");
    EXPECT_NEAR(field(*body, "rgb[2]")["value"].get<double>(), 0.3, 1e-6);
    EXPECT_EQ(field(*body, "tag")["value"], "elite");  // a str field shows its text
    EXPECT_EQ(field(*body, "level")["value"], 3);
    // The relation: its data is a component, its targets are listed.
    const json* follows = find_component(r.body, "insp::Follows");
    ASSERT_NE(follows, nullptr);
    EXPECT_EQ(field(*follows, "since")["value"], 9);
    ASSERT_EQ(r.body["relations"].size(), 1u);
    EXPECT_EQ(r.body["relations"][0]["relation"], "insp::Follows");
    EXPECT_EQ(r.body["relations"][0]["targets"], json::array({id(s.b)}));

    // b is the target: the reverse lookup; and its tag component.
    r = get(port, "/api/entity/" + id(s.b));
    ASSERT_EQ(r.status, 200) << r.body;
    ASSERT_EQ(r.body["related_by"].size(), 1u);
    EXPECT_EQ(r.body["related_by"][0]["sources"], json::array({id(s.a)}));
    const json* frozen = find_component(r.body, "insp::Frozen");
    ASSERT_NE(frozen, nullptr);
    EXPECT_EQ((*frozen)["tag"], true);
    EXPECT_TRUE((*frozen)["fields"].empty());

    // c: an enableable component switched off, an unreflected component (listed, no fields).
    r = get(port, "/api/entity/" + id(s.c));
    ASSERT_EQ(r.status, 200) << r.body;
    const json* ai = find_component(r.body, "insp::Ai");
    ASSERT_NE(ai, nullptr);
    EXPECT_EQ((*ai)["enableable"], true);
    EXPECT_EQ((*ai)["enabled"], false);
    EXPECT_EQ(field(*ai, "mood")["value"], 7);
    const json* opaque = find_component(r.body, "insp::Opaque");
    ASSERT_NE(opaque, nullptr);
    EXPECT_EQ((*opaque)["reflected"], false);
    EXPECT_TRUE((*opaque)["fields"].empty());
}

TEST(Inspector, EntityListsSparseComponentsAndTakesTheirEdits) {
    Scene s;
    s.world.add(s.a, Poison{4}, Marked{});
    s.world.add(s.b, Poison{1});
    s.world.enable<Poison>(s.b, false);
    ts::Inspector inspector(0);
    const std::uint16_t port = inspector.port();
    {
        FrameLoop loop(inspector, s.world);
        Reply r = get(port, "/api/entity/" + id(s.a));
        ASSERT_EQ(r.status, 200) << r.body;
        const json* poison = find_component(r.body, "insp::Poison");
        ASSERT_NE(poison, nullptr) << r.body;
        EXPECT_EQ((*poison)["sparse"], true);
        EXPECT_EQ((*poison)["enabled"], true);
        EXPECT_EQ(field(*poison, "dose")["value"], 4);
        const json* marked = find_component(r.body, "insp::Marked");
        ASSERT_NE(marked, nullptr);
        EXPECT_EQ((*marked)["tag"], true);
        EXPECT_EQ((*marked)["sparse"], true);
        EXPECT_EQ(find_component(r.body, "insp::Body")->contains("sparse"), false);
        r = get(port, "/api/entity/" + id(s.b));
        ASSERT_EQ(r.status, 200) << r.body;
        EXPECT_EQ((*find_component(r.body, "insp::Poison"))["enabled"], false);
        EXPECT_EQ(find_component(r.body, "insp::Marked"), nullptr);
        // Edits reach the set, by full and short name.
        r = put(port, "/api/entity/" + id(s.a) + "/insp::Poison/dose", "9");
        ASSERT_EQ(r.status, 200) << r.body;
        EXPECT_EQ(r.body["value"], 9);
        EXPECT_EQ(put(port, "/api/entity/" + id(s.b) + "/Poison/dose", "2").status, 200);
        EXPECT_EQ(put(port, "/api/entity/" + id(s.c) + "/Poison/dose", "2").status, 404);
    }
    EXPECT_EQ(s.world.get<Poison>(s.a).dose, 9);
    EXPECT_EQ(s.world.get<Poison>(s.b).dose, 2);
    // The entity list filters by sparse components too.
    {
        FrameLoop loop(inspector, s.world);
        Reply r = get(port, "/api/entities?with=Poison");
        ASSERT_EQ(r.status, 200) << r.body;
        EXPECT_EQ(r.body["total"], 2);
        r = get(port, "/api/entities?with=Body,Poison&without=Marked");
        ASSERT_EQ(r.status, 200) << r.body;
        ASSERT_EQ(r.body["total"], 1);
        EXPECT_EQ(r.body["entities"][0]["id"], id(s.b));
    }
    EXPECT_EQ(s.world.changed_tick<Poison>(s.a), s.world.tick());
}

TEST(Inspector, RuntimeComponentsShowTheirFields) {
    ts::World world;
    const ts::ComponentId health =
        world.component("InspHealth", {{"hp", ts::Field::i32}, {"name", ts::Field::str}});
    const ts::Entity e = world.spawn();
    world.add(e, health);
    world.set_field(e, health, "hp", 12);
    world.set_field(e, health, "name", "Ayla");
    ts::Inspector inspector(0);
    {
        FrameLoop loop(inspector, world);
        const Reply r = get(inspector.port(), "/api/entity/" + id(e));
        ASSERT_EQ(r.status, 200) << r.body;
        const json* h = find_component(r.body, "InspHealth");
        ASSERT_NE(h, nullptr);
        EXPECT_EQ(field(*h, "hp")["value"], 12);
        EXPECT_EQ(field(*h, "name")["value"], "Ayla");
        const Reply w =
            put(inspector.port(), "/api/entity/" + id(e) + "/InspHealth/name", "\"Bo\"");
        ASSERT_EQ(w.status, 200) << w.body;
        EXPECT_EQ(w.body["value"], "Bo");
    }
    EXPECT_EQ(world.get_field<std::string>(e, health, "name"), "Bo");
}

TEST(Inspector, SystemsReportPhasesOrderAccessAndTimes) {
    ts::World world;
    world.spawn(Body{}, Vel{1, 1});
    ts::Schedule schedule;
    schedule.add("move", [](ts::View<Body&, const Vel&> v) {
        v.each([](Body& b, const Vel& d) { b.pos.x += d.dx; });
    });
    schedule.add("early", [](ts::View<const Body&>) {}).phase(ts::Phase::pre_update);
    schedule.add("raw", [](ts::World&) {}).phase(ts::Phase::post_update);
    ts::Inspector inspector(0);
    FrameLoop loop(inspector, world, &schedule);
    // Wait until a few frames were timed.
    Reply r;
    for (int i = 0; i < 200; ++i) {
        r = get(inspector.port(), "/api/systems");
        ASSERT_EQ(r.status, 200) << r.body;
        if (r.body["systems"].size() == 3 && r.body["systems"][1]["runs"].get<int>() >= 3) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(r.body["profiling"], true);  // update turned it on
    const json& sys = r.body["systems"];
    ASSERT_EQ(sys.size(), 3u);
    EXPECT_EQ(sys[0]["name"], "early");
    EXPECT_EQ(sys[0]["phase"], "pre_update");
    EXPECT_EQ(sys[1]["name"], "move");
    EXPECT_EQ(sys[1]["phase"], "update");
    EXPECT_EQ(sys[1]["position"], 0);
    EXPECT_EQ(sys[1]["writes"], json::array({"insp::Body"}));
    EXPECT_EQ(sys[1]["reads"], json::array({"insp::Vel"}));
    EXPECT_EQ(sys[1]["exclusive"], false);
    EXPECT_GE(sys[1]["runs"].get<int>(), 3);
    EXPECT_GT(sys[1]["median_ns"].get<std::int64_t>(), 0);
    EXPECT_GE(sys[1]["p99_ns"].get<std::int64_t>(), sys[1]["median_ns"].get<std::int64_t>());
    EXPECT_TRUE(sys[1].contains("last_ns"));
    EXPECT_EQ(sys[2]["name"], "raw");
    EXPECT_EQ(sys[2]["exclusive"], true);
}

TEST(Inspector, SystemsWithoutAScheduleIsEmpty) {
    ts::World world;
    ts::Inspector inspector(0);
    FrameLoop loop(inspector, world);
    const Reply r = get(inspector.port(), "/api/systems");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(r.body["systems"].empty());
}

TEST(Inspector, PutChangesAReflectedFieldAtTheNextUpdate) {
    Scene s;
    ts::Inspector inspector(0);
    const std::uint16_t port = inspector.port();
    {
        FrameLoop loop(inspector, s.world);
        Reply r = put(port, "/api/entity/" + id(s.a) + "/insp::Body/hp", "55");
        ASSERT_EQ(r.status, 200) << r.body;
        EXPECT_EQ(r.body["value"], 55);
        EXPECT_EQ(r.body["component"], "insp::Body");
        // Nested fields, array elements, bools, strings, floats, {"value": v}, short names.
        EXPECT_EQ(put(port, "/api/entity/" + id(s.a) + "/insp::Body/pos.y", "2.5").status, 200);
        EXPECT_EQ(put(port, "/api/entity/" + id(s.a) + "/Body/rgb[1]", "{\"value\": 1}").status,
                  200);
        EXPECT_EQ(put(port, "/api/entity/" + id(s.a) + "/Body/awake", "false").status, 200);
        EXPECT_EQ(put(port, "/api/entity/" + id(s.a) + "/Body/title", "\"Major\"").status, 200);
        EXPECT_EQ(put(port, "/api/entity/" + id(s.a) + "/Body/tag", "\"veteran\"").status, 200);
        EXPECT_EQ(put(port, "/api/entity/" + id(s.a) + "/Follows/since", "11").status, 200);
        // A disabled component's fields are still editable.
        EXPECT_EQ(put(port, "/api/entity/" + id(s.c) + "/Ai/mood", "-3").status, 200);
        // The API reads the new values back.
        r = get(port, "/api/entity/" + id(s.a));
        EXPECT_EQ(field(*find_component(r.body, "insp::Body"), "title")["value"], "Major");
    }
    const Body& b = s.world.get<Body>(s.a);
    EXPECT_EQ(b.hp, 55);
    EXPECT_EQ(b.pos.y, 2.5f);
    EXPECT_EQ(b.rgb[1], 1.0f);
    EXPECT_FALSE(b.awake);
    EXPECT_EQ(b.title, "Major");
    EXPECT_EQ(s.world.strings().get(b.tag.value), "veteran");
    EXPECT_EQ(s.world.relation<Follows>(s.a)->since, 11u);
    EXPECT_EQ(s.world.get<Ai>(s.c).mood, -3);
}

TEST(Inspector, EditsAnswerWhatIsTrueAfterTheirObservers) {
    Scene s;
    // "hp <= 0: despawn", "hp == 1: remove Body", "hp over 100: clamp": the observers of the
    // write change the world before the answer is read.
    ts::Observer o = s.world.on_set<Body>([](ts::World& w, ts::Entity e, Body& body) {
        if (body.hp <= 0)
            w.despawn(e);
        else if (body.hp == 1)
            w.remove<Body>(e);
        else if (body.hp > 100)
            body.hp = 100;
    });
    ts::Inspector inspector(0);
    const std::uint16_t port = inspector.port();
    {
        FrameLoop loop(inspector, s.world);
        Reply r = put(port, "/api/entity/" + id(s.a) + "/Body/hp", "0");
        EXPECT_EQ(r.status, 404) << r.body;
        EXPECT_TRUE(r.body["error"].is_string()) << r.body;
        r = put(port, "/api/entity/" + id(s.b) + "/Body/hp", "1");
        EXPECT_EQ(r.status, 200) << r.body;
        EXPECT_TRUE(r.body["value"].is_null()) << r.body;
        EXPECT_EQ(r.body["removed"], true) << r.body;
        r = put(port, "/api/entity/" + id(s.c) + "/Body/hp", "500");
        EXPECT_EQ(r.status, 200) << r.body;
        EXPECT_EQ(r.body["value"], 100) << r.body;
        EXPECT_FALSE(r.body.contains("removed"));
        // The inspector still serves: the dead one is gone, the others as they are now.
        EXPECT_EQ(get(port, "/api/entity/" + id(s.a)).status, 404);
        EXPECT_EQ(get(port, "/api/entity/" + id(s.b)).status, 200);
    }
    EXPECT_FALSE(s.world.is_alive(s.a));
    EXPECT_TRUE(s.world.is_alive(s.b));
    EXPECT_FALSE(s.world.has<Body>(s.b));
    EXPECT_EQ(s.world.get<Body>(s.c).hp, 100);
}

TEST(Inspector, BadEditsGet4xxAndChangeNothing) {
    Scene s;
    const std::uint64_t before = ts::state_hash(s.world);
    ts::InspectorOptions options;
    options.max_body = 64;
    ts::Inspector inspector(0, options);
    const std::uint16_t port = inspector.port();
    const std::string a = "/api/entity/" + id(s.a);
    struct Case {
        std::string path, body;
        int status;
    };
    const std::vector<Case> cases = {
        {"/api/entity/999:1/insp::Body/hp", "1", 404},              // never spawned
        {"/api/entity/" + id(s.dead) + "/insp::Vel/dx", "1", 404},  // dead
        {"/api/entity/" + std::to_string(s.a.index) + ":9/insp::Body/hp", "1", 404},  // stale
        {"/api/entity/abc/insp::Body/hp", "1", 400},                    // malformed id
        {"/api/entity/1:/insp::Body/hp", "1", 400},                     // malformed id
        {a + "/insp::Nope/hp", "1", 404},                               // unknown component
        {a + "/insp::Ai/mood", "1", 404},                               // a has no Ai
        {a + "/insp::Body/nope", "1", 404},                             // unknown field
        {a + "/insp::Body/pos.z", "1", 404},                            // unknown nested field
        {a + "/insp::Body/rgb[3]", "1", 404},                           // past the array
        {a + "/insp::Body/hp", "1.5", 400},                             // float into i32
        {a + "/insp::Body/hp", "\"x\"", 400},                           // string into i32
        {a + "/insp::Body/hp", "true", 400},                            // bool into i32
        {a + "/insp::Body/hp", "4294967296", 400},                      // out of range
        {a + "/insp::Body/level", "-1", 400},                           // out of range (u8)
        {a + "/insp::Body/awake", "1", 400},                            // number into bool
        {a + "/insp::Body/title", "7", 400},                            // number into string
        {a + "/insp::Body/pos", "1", 400},                              // a struct
        {a + "/insp::Body/rgb", "1", 400},                              // an array
        {a + "/insp::Body/hp", "", 400},                                // no body
        {a + "/insp::Body/hp", "{not json", 400},                       // not JSON
        {a + "/insp::Body/hp", "null", 400},                            // not a value
        {a + "/insp::Body/hp", "[1]", 400},                             // not a value
        {a + "/insp::Body/hp", "{\"v\": 1}", 400},                      // not a value
        {a + "/insp::Body/hp", std::string(100, ' ') + "1", 413},       // too large
        {"/api/entity/" + id(s.c) + "/insp::Opaque/secret", "1", 400},  // unreflected
        {a + "/insp::Body", "1", 404},                                  // no field in the path
    };
    {
        FrameLoop loop(inspector, s.world);
        for (const Case& c : cases) {
            const Reply r = put(port, c.path, c.body);
            EXPECT_EQ(r.status, c.status) << c.path << " <- " << c.body << ": " << r.body;
            ASSERT_TRUE(r.body.is_object()) << c.path;
            EXPECT_TRUE(r.body["error"].is_string()) << c.path << ": " << r.body;
        }
    }
    EXPECT_EQ(ts::state_hash(s.world), before);
    EXPECT_EQ(s.world.get<Body>(s.a).hp, 40);
}

TEST(Inspector, BadReadsGet4xx) {
    Scene s;
    ts::Inspector inspector(0);
    FrameLoop loop(inspector, s.world);
    const std::uint16_t port = inspector.port();
    const std::vector<std::pair<std::string, int>> cases = {
        {"/api/entity/999:1", 404},
        {"/api/entity/" + id(s.dead), 404},
        {"/api/entity/" + std::to_string(s.a.index) + ":7", 404},
        {"/api/entity/x", 400},
        {"/api/entity/1:2:3", 400},
        {"/api/entity/-1:1", 400},
        {"/api/entity/99999999999:1", 400},
        {"/api/entities?limit=0", 400},
        {"/api/entities?limit=1001", 400},
        {"/api/entities?limit=-5", 400},
        {"/api/entities?limit=ten", 400},
        {"/api/entities?offset=-1", 400},
        {"/api/entities?offset=1e3", 400},
        {"/api/entities?offset=", 400},
        {"/api/entities?with=insp::Nope", 400},
        {"/api/entities?without=Nope", 400},
        {"/api/archetypes?limit=5000", 400},
        {"/api/nothing", 404},
        {"/nothing", 404},
    };
    for (const auto& [path, status] : cases) {
        const Reply r = get(port, path);
        EXPECT_EQ(r.status, status) << path << ": " << r.body;
        ASSERT_TRUE(r.body.is_object()) << path;
        EXPECT_TRUE(r.body["error"].is_string()) << path << ": " << r.body;
    }
    // Methods the API doesn't have.
    httplib::Client cli("127.0.0.1", port);
    const auto r = cli.Delete("/api/entity/" + id(s.a));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404);
    EXPECT_EQ(put(port, "/api/stats", "1").status, 404);
}

TEST(Inspector, WithoutUpdatesRequestsTimeOutAndEditsAreDropped) {
    Scene s;
    ts::InspectorOptions options;
    options.reply_timeout = std::chrono::milliseconds(100);
    ts::Inspector inspector(0, options);
    Reply r = get(inspector.port(), "/api/stats");
    EXPECT_EQ(r.status, 503);
    EXPECT_TRUE(r.body["error"].is_string());
    r = put(inspector.port(), "/api/entity/" + id(s.a) + "/insp::Body/hp", "1");
    EXPECT_EQ(r.status, 503);
    // The timed-out edit is not applied by a later update.
    inspector.update(s.world);
    EXPECT_EQ(s.world.get<Body>(s.a).hp, 40);
    // Malformed requests are answered without an update.
    EXPECT_EQ(get(inspector.port(), "/api/entity/nope").status, 400);
}

TEST(Inspector, ForeignHostHeadersAreRefused) {
    ts::World world;
    ts::Inspector inspector(0);
    FrameLoop loop(inspector, world);
    httplib::Client cli("127.0.0.1", inspector.port());
    const auto bad =
        cli.Get("/api/stats", {{"Host", "evil.example:" + std::to_string(inspector.port())}});
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->status, 403);
    const auto good =
        cli.Get("/api/stats", {{"Host", "localhost:" + std::to_string(inspector.port())}});
    ASSERT_TRUE(good);
    EXPECT_EQ(good->status, 200);
}

TEST(Inspector, RequestsWithoutExactlyOneHostAreBad) {
    ts::World world;
    ts::Inspector inspector(0);
    FrameLoop loop(inspector, world);
    const std::string host = "Host: 127.0.0.1:" + std::to_string(inspector.port()) + "\r\n";
    const auto ask = [&](const std::string& headers) {
        RawConnection c(inspector.port());
        EXPECT_TRUE(c.connected());
        c.send("GET /api/stats HTTP/1.1\r\nConnection: close\r\n" + headers + "\r\n");
        const std::string response = c.read_all(std::chrono::seconds(5));
        if (status_of(response) >= 400) {
            EXPECT_TRUE(body_of(response)["error"].is_string()) << response;
        }
        return status_of(response);
    };
    EXPECT_EQ(ask(host), 200);
    EXPECT_EQ(ask(""), 400);            // none
    EXPECT_EQ(ask("Host:\r\n"), 400);   // empty
    EXPECT_EQ(ask("Host: \r\n"), 400);  // empty
    EXPECT_EQ(ask(host + host), 400);   // two, even when both are right
    EXPECT_EQ(ask(host + "host: evil.example\r\n"), 400);
    // The page too, and with allow_remote as well.
    RawConnection page(inspector.port());
    page.send("GET / HTTP/1.0\r\n\r\n");
    EXPECT_EQ(status_of(page.read_all(std::chrono::seconds(5))), 400);
    ts::InspectorOptions options;
    options.allow_remote = true;
    ts::Inspector open(0, options);
    RawConnection c(open.port());
    c.send("GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(status_of(c.read_all(std::chrono::seconds(5))), 400);
}

TEST(Inspector, SlowClientsAreCutOffAndDontHoldUpOthers) {
    using clock = std::chrono::steady_clock;
    ts::World world;
    world.spawn(Body{});
    ts::Inspector inspector(0);
    const std::uint16_t port = inspector.port();
    FrameLoop loop(inspector, world);
    const std::string head_start =
        "GET /api/stats HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\nX-Slow: ";
    // Thirty clients trickle a header a byte every 250 ms (each read is quick, the head never
    // ends); ten connect and send nothing.
    const auto t0 = clock::now();
    std::vector<std::unique_ptr<RawConnection>> slow;
    for (int i = 0; i < 40; ++i) {
        slow.push_back(std::make_unique<RawConnection>(port));
        ASSERT_TRUE(slow.back()->connected());
        if (i < 30) slow.back()->send(head_start);
    }
    std::vector<clock::duration> closed_after(slow.size(), clock::duration::max());
    std::atomic<bool> trickling{true};
    std::thread trickle([&] {
        while (trickling.load()) {
            for (std::size_t i = 0; i < slow.size(); ++i) {
                if (closed_after[i] != clock::duration::max()) continue;
                if (slow[i]->server_closed() || (i < 30 && !slow[i]->send("x")))
                    closed_after[i] = clock::now() - t0;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(250));
        }
    });
    // Meanwhile normal requests are answered promptly, one also sent in slow pieces (but in
    // time).
    std::vector<std::pair<int, clock::duration>> normal;
    while (clock::now() - t0 < std::chrono::milliseconds(3500)) {
        httplib::Client cli("127.0.0.1", port);
        cli.set_read_timeout(5);
        const auto start = clock::now();
        const auto r = cli.Get("/api/stats");
        normal.emplace_back(r ? r->status : 0, clock::now() - start);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    RawConnection paced(port);
    const std::vector<std::string> pieces = {
        "GET /api/stats HTTP/1.1\r\n",
        "Host: 127.0.0.1:", std::to_string(port) + "\r\nConnection: close\r\n\r\n"};
    for (const std::string& piece : pieces) {
        paced.send(piece);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    EXPECT_EQ(status_of(paced.read_all(std::chrono::seconds(5))), 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    trickling.store(false);
    trickle.join();

    ASSERT_GT(normal.size(), 5u);
    for (const auto& [status, took] : normal) {
        EXPECT_EQ(status, 200);
        EXPECT_LT(took, std::chrono::seconds(1))
            << std::chrono::duration<double>(took).count() << " s";
    }
    // Every slow connection was closed about 2 s (request_timeout) after it opened.
    for (std::size_t i = 0; i < slow.size(); ++i) {
        EXPECT_GT(closed_after[i], std::chrono::milliseconds(1500)) << i;
        EXPECT_LT(closed_after[i], std::chrono::milliseconds(3500)) << i;
    }
}

TEST(Inspector, ServesItsPageWithoutExternalResources) {
    ts::Inspector inspector(0);
    httplib::Client cli("127.0.0.1", inspector.port());
    const auto r = cli.Get("/");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_NE(r->get_header_value("Content-Type").find("text/html"), std::string::npos);
    EXPECT_NE(r->body.find("<html"), std::string::npos);
    EXPECT_EQ(r->body.find("http://"), std::string::npos);
    EXPECT_EQ(r->body.find("https://"), std::string::npos);
    EXPECT_EQ(r->body.find("src=\"//"), std::string::npos);
}

TEST(Inspector, ShutdownAnswersWaitingRequests) {
    ts::InspectorOptions options;
    options.reply_timeout = std::chrono::seconds(30);
    auto inspector = std::make_unique<ts::Inspector>(0, options);
    const std::uint16_t port = inspector->port();
    Reply r;
    std::thread client([&] { r = get(port, "/api/stats"); });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const auto t0 = std::chrono::steady_clock::now();
    inspector.reset();
    client.join();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
    EXPECT_TRUE(r.status == 503 || r.status == 0) << r.status;
}

TEST(Inspector, ManyClientsWhileTheWorldChangesEveryFrame) {
    ts::World world;
    std::vector<ts::Entity> live;
    for (int i = 0; i < 200; ++i) live.push_back(world.spawn(Body{}, Vel{float(i), 0}));
    ts::Schedule schedule;
    schedule.add("move", [](ts::View<Body&, const Vel&> v) {
        v.each([](Body& b, const Vel& d) { b.pos.x += d.dx; });
    });
    std::uint32_t frame = 0;
    // Every frame: despawn one, spawn two of varying shape, so tables and ids churn.
    auto churn = [&] {
        ++frame;
        if (!live.empty()) {
            world.despawn(live[frame * 7919u % live.size()]);
            live.erase(live.begin() + static_cast<std::ptrdiff_t>(frame * 7919u % live.size()));
        }
        live.push_back(world.spawn(Body{}, Vel{1, 1}));
        live.push_back(frame % 3 == 0 ? world.spawn(Body{}, Frozen{}) : world.spawn(Body{}));
    };
    ts::Inspector inspector(0);
    const std::uint16_t port = inspector.port();
    std::atomic<int> ok{0}, gone{0}, bad{0};
    {
        FrameLoop loop(inspector, world, &schedule, churn);
        std::vector<std::thread> clients;
        for (int t = 0; t < 6; ++t) {
            clients.emplace_back([&, t] {
                httplib::Client cli("127.0.0.1", port);
                cli.set_read_timeout(10);
                for (int i = 0; i < 40; ++i) {
                    const httplib::Result r = [&] {
                        const std::string e = std::to_string(i * 5) + ":1";
                        switch ((t + i) % 6) {
                            case 0: return cli.Get("/api/stats");
                            case 1: return cli.Get("/api/archetypes");
                            case 2: return cli.Get("/api/systems");
                            case 3:
                                return cli.Get("/api/entities?with=Body&limit=50&offset=" +
                                               std::to_string(i * 3));
                            case 4: return cli.Get("/api/entity/" + e);
                            default:
                                return cli.Put("/api/entity/" + e + "/insp::Body/hp",
                                               std::to_string(i), "application/json");
                        }
                    }();
                    if (!r) {
                        ++bad;
                        continue;
                    }
                    const json body = json::parse(r->body, nullptr, false);
                    if (body.is_discarded() || !body.is_object())
                        ++bad;
                    else if (r->status == 200)
                        ++ok;
                    else if (r->status == 404 && body["error"].is_string())
                        ++gone;  // that entity had died
                    else
                        ++bad;
                }
            });
        }
        for (std::thread& c : clients) c.join();
    }
    EXPECT_EQ(bad.load(), 0);
    EXPECT_EQ(ok.load() + gone.load(), 240);
    EXPECT_GT(ok.load(), 150);
    EXPECT_GT(inspector.frames(), 10u);
}

}  // namespace

// ----- the map's points, the field list, the charts' history -----------------------------

namespace {

/// `spec` percent-encoded for a query string ('[' and ']' in paths, ':' in names).
std::string q(const std::string& spec) {
    return httplib::detail::encode_query_param(spec);
}

}  // namespace

TEST(Inspector, PointsAreTheChosenFieldsOfTheMatchingRows) {
    ts::World world;
    const ts::Entity p = world.spawn(Body{{1.5f, -2}, 7, false, "", {}, {}, 9}, Vel{0.25f, 0});
    const ts::Entity r = world.spawn(Body{{3, 4}, 8, false, "", {}, {}, 200});  // no Vel
    world.spawn(Body{{5, 6}, 9, false, "", {}, {}, 1}, Frozen{});
    world.spawn(Vel{9, 9});  // no Body: never a point
    ts::Inspector inspector(0);
    FrameLoop loop(inspector, world);
    // Colour by a field: null where the row lacks its component.
    Reply a = get(inspector.port(),
                  "/api/points?x=Body.pos.x&y=insp::Body.pos.y&color=Vel.dx"
                  "&without=Frozen");
    ASSERT_EQ(a.status, 200) << a.body;
    EXPECT_EQ(a.body["x"], "insp::Body.pos.x");
    EXPECT_EQ(a.body["y"], "insp::Body.pos.y");
    EXPECT_EQ(a.body["color"], "insp::Vel.dx");
    EXPECT_EQ(a.body["total"], 2);
    EXPECT_EQ(a.body["count"], 2);
    EXPECT_EQ(a.body["stride"], 1);
    // Archetype order: p's table (Body, Vel) was made first.
    EXPECT_EQ(a.body["entities"], json::array({p.index, p.generation, r.index, r.generation}));
    EXPECT_EQ(a.body["points"], json::parse("[1.5, -2, 0.25, 3, 4, null]"));
    EXPECT_EQ(a.body["archetypes"].size(), 2u);
    // By archetype (the default), integer and bool fields too.
    Reply b = get(inspector.port(), "/api/points?x=Body.level&y=Body.awake&with=Frozen");
    ASSERT_EQ(b.status, 200) << b.body;
    EXPECT_EQ(b.body["color"], "archetype");
    ASSERT_EQ(b.body["points"].size(), 3u);
    EXPECT_EQ(b.body["points"][0], 1);
    EXPECT_EQ(b.body["points"][1], 0);
    const std::string archetype = std::to_string(b.body["points"][2].get<int>());
    ASSERT_TRUE(b.body["archetypes"].contains(archetype)) << b.body;
    EXPECT_EQ(b.body["archetypes"][archetype], json::array({"insp::Body", "insp::Frozen"}));
    // Array elements by index.
    Reply c = get(inspector.port(), "/api/points?x=" + q("Body.rgb[2]") + "&y=Body.hp");
    ASSERT_EQ(c.status, 200) << c.body;
    EXPECT_EQ(c.body["count"], 3);
}

TEST(Inspector, PointsWithBadFieldsOrLimitsGet400) {
    Scene s;
    ts::Inspector inspector(0);
    FrameLoop loop(inspector, s.world);
    const std::string ok = "x=Body.pos.x&y=Body.pos.y";
    struct Case {
        std::string query;
        std::string says;  ///< in the message
    };
    const Case cases[] = {
        {"y=Body.pos.y", "x is missing"},
        {"x=Body.pos.x", "y is missing"},
        {"x=Body&y=Body.pos.y", "not Component.field"},
        {"x=Nothing.x&y=Body.pos.y", "unknown component 'Nothing'"},
        {"x=Body.speed&y=Body.pos.y", "no field 'speed'"},
        {"x=Body.pos&y=Body.pos.y", "struct"},
        {"x=Body.rgb&y=Body.pos.y", "array"},
        {"x=" + q("Body.rgb[3]") + "&y=Body.pos.y", "past the array"},
        {"x=Body.title&y=Body.pos.y", "not a number"},
        {"x=Body.tag&y=Body.pos.y", "not a number"},
        {"x=Opaque.secret&y=Body.pos.y", "no field metadata"},
        {ok + "&color=Body.title", "not a number"},
        {ok + "&color=Vel", "not Component.field"},
        {ok + "&with=Nothing", "unknown component 'Nothing'"},
        {ok + "&limit=0", "limit"},
        {ok + "&limit=100001", "limit"},
        {ok + "&limit=ten", "limit"},
        {"x=" + std::string(600, 'a') + ".x&y=Body.pos.y", "longer than"},
    };
    for (const Case& c : cases) {
        const Reply r = get(inspector.port(), "/api/points?" + c.query);
        EXPECT_EQ(r.status, 400) << c.query << ": " << r.body;
        const std::string message = r.body.value("error", std::string());
        EXPECT_NE(message.find(c.says), std::string::npos) << c.query << ": " << message;
    }
    // The largest limit is accepted.
    EXPECT_EQ(get(inspector.port(), "/api/points?" + ok + "&limit=100000").status, 200);
}

// Request text in messages is quoted with NUL, control characters and bad bytes escaped, and
// the message is whole: a NUL in a field path no longer cuts it.
TEST(Inspector, MessagesQuoteRequestTextEscaped) {
    Scene s;
    ts::Inspector inspector(0);
    FrameLoop loop(inspector, s.world);
    const std::string a = "/api/entity/" + id(s.a);
    const std::string ok_y = "&y=Body.pos.y";
    struct Case {
        std::string path;
        int status;
        std::string says;  ///< in the message
    };
    const Case cases[] = {
        {"/api/points?x=" +
             q(std::string("Body.sp\0ee\x01"
                           "d",
                           12)) +
             ok_y,
         400, R"(no field 'sp\x00ee\x01d')"},
        {"/api/points?x=" + q(std::string("No\0pe.x", 7)) + ok_y, 400,
         R"(x 'No\x00pe.x': unknown component 'No\x00pe')"},
        {"/api/points?x=" + q("Body\xff") + ok_y, 400, R"('Body\xFF' is not Component.field)"},
        {"/api/entities?with=" + q(std::string("Bo\0dy", 5)), 400,
         R"(unknown component 'Bo\x00dy')"},
        {"/api/entity/" + q("1:\x1b"), 400, R"(bad entity id '1:\x1B')"},
    };
    for (const Case& c : cases) {
        const Reply r = get(inspector.port(), c.path);
        EXPECT_EQ(r.status, c.status) << c.path << ": " << r.body;
        const std::string message = r.body.value("error", std::string());
        EXPECT_NE(message.find(c.says), std::string::npos) << c.path << ": " << message;
    }
    const Reply edit = put(inspector.port(), a + "/insp::Body/" + q(std::string("h\0p", 3)), "1");
    EXPECT_EQ(edit.status, 404) << edit.body;
    const std::string message = edit.body.value("error", std::string());
    EXPECT_NE(message.find(R"(has no field 'h\x00p')"), std::string::npos) << message;
    EXPECT_EQ(s.world.get<Body>(s.a).hp, 40);
}

TEST(Inspector, PointsAreBoundedBySamplingEveryKthRow) {
    ts::World world;
    world.spawn_many(5000, [](std::size_t i, Body& b) { b.pos = {float(i), 2.0f * float(i)}; });
    world.spawn_many(1000, [](std::size_t i, Body& b, Vel&) { b.pos = {-float(i), 0}; });
    ts::Inspector inspector(0);
    FrameLoop loop(inspector, world);
    const Reply r = get(inspector.port(), "/api/points?x=Body.pos.x&y=Body.pos.y&limit=1000");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body["total"], 6000);
    EXPECT_EQ(r.body["stride"], 6);
    EXPECT_EQ(r.body["limit"], 1000);
    ASSERT_EQ(r.body["count"], 1000);
    ASSERT_EQ(r.body["points"].size(), 3000u);
    ASSERT_EQ(r.body["entities"].size(), 2000u);
    // Every 6th row of the two tables, in order: 0, 6, ..., 4998, then the second table from
    // its row 4 (global row 5004): -4, -10, ..., -994.
    EXPECT_EQ(r.body["points"][3 * 1], 6.0);
    EXPECT_EQ(r.body["points"][3 * 1 + 1], 12.0);
    EXPECT_EQ(r.body["points"][3 * 833], 4998.0);
    EXPECT_EQ(r.body["points"][3 * 834], -4.0);
    EXPECT_EQ(r.body["points"][3 * 999], -994.0);
    // The default bound, and the size of an answer: a few dozen bytes a point.
    httplib::Client cli("127.0.0.1", inspector.port());
    const auto all = cli.Get("/api/points?x=Body.pos.x&y=Body.pos.y");
    ASSERT_TRUE(all);
    const json body = json::parse(all->body);
    EXPECT_EQ(body["count"], 6000);
    EXPECT_EQ(body["limit"], 20000);
    EXPECT_LT(all->body.size(), 6000u * 48);
}

TEST(Inspector, FieldsListTheNumericLeavesOfEachComponent) {
    Scene s;
    s.world.spawn(ts::LocalTransform{});
    ts::Inspector inspector(0);
    FrameLoop loop(inspector, s.world);
    const Reply r = get(inspector.port(), "/api/fields");
    ASSERT_EQ(r.status, 200) << r.body;
    std::map<std::string, json> by_name;
    for (const json& c : r.body["components"]) by_name[c["name"]] = c["fields"];
    ASSERT_TRUE(by_name.contains("insp::Body")) << r.body;
    EXPECT_EQ(by_name["insp::Body"],
              json::parse(R"(["pos.x", "pos.y", "hp", "awake", "rgb[0]", "rgb[1]", "rgb[2]",
                             "level"])"));  // not title (a string) nor tag (a str id)
    EXPECT_EQ(by_name["insp::Vel"], json::parse(R"(["dx", "dy"])"));
    EXPECT_FALSE(by_name.contains("insp::Opaque"));  // not reflected
    EXPECT_FALSE(by_name.contains("insp::Frozen"));  // a tag
    ASSERT_TRUE(by_name.contains("tessera::LocalTransform"));
    EXPECT_EQ(by_name["tessera::LocalTransform"].size(), 16u);
    EXPECT_EQ(by_name["tessera::LocalTransform"][13], "matrix[3].y");
}

TEST(Inspector, TransformsShowTheirFieldsAndTakeEdits) {
    ts::World world;
    glm::mat4 m(1.0f);
    m[3][0] = 4.5f;
    const ts::Entity e = world.spawn(ts::LocalTransform{m}, ts::WorldTransform{m});
    ts::Inspector inspector(0);
    {
        FrameLoop loop(inspector, world);
        const Reply r = get(inspector.port(), "/api/entity/" + id(e));
        ASSERT_EQ(r.status, 200) << r.body;
        const json* local = find_component(r.body, "tessera::LocalTransform");
        ASSERT_NE(local, nullptr) << r.body;
        EXPECT_EQ((*local)["reflected"], true);
        EXPECT_EQ((*local)["fields"].size(), 16u);
        EXPECT_EQ(field(*local, "matrix[3].x")["value"], 4.5);
        EXPECT_EQ(field(*local, "matrix[3].x")["type"], "f32");
        const Reply put_r =
            put(inspector.port(), "/api/entity/" + id(e) + "/LocalTransform/" + q("matrix[3].y"),
                "-2.25");
        ASSERT_EQ(put_r.status, 200) << put_r.body;
        EXPECT_EQ(put_r.body["value"], -2.25);
        // The map's default for a world without x/y fields: the translation.
        const Reply p = get(inspector.port(), "/api/points?x=WorldTransform." + q("matrix[3].x") +
                                                  "&y=WorldTransform." + q("matrix[3].y"));
        ASSERT_EQ(p.status, 200) << p.body;
        EXPECT_EQ(p.body["points"][0], 4.5);
    }
    EXPECT_EQ(world.get<ts::LocalTransform>(e).matrix[3][1], -2.25f);
}

TEST(Inspector, HistoryChartsFramesCountsAndWatchedSystemTimes) {
    ts::World world;
    world.spawn(Body{}, Vel{1, 1});
    ts::Schedule schedule;
    schedule.add("move", [](ts::View<Body&, const Vel&> v) {
        v.each([](Body& b, const Vel& d) { b.pos.x += d.dx; });
    });
    std::atomic<int> frame{0};
    ts::Inspector inspector(0);
    // Spawns an entity every frame, so the entity count rises through the history.
    FrameLoop loop(inspector, world, &schedule, [&] {
        world.spawn(Vel{});
        frame.fetch_add(1);
    });
    Reply first = get(inspector.port(), "/api/history");
    ASSERT_EQ(first.status, 200) << first.body;
    EXPECT_EQ(first.body["capacity"], 300);
    // System times are recorded from the first request on: wait for a few.
    Reply r;
    for (int i = 0; i < 400; ++i) {
        r = get(inspector.port(), "/api/history");
        ASSERT_EQ(r.status, 200) << r.body;
        if (!r.body["systems"].empty()) {
            const json& ns = r.body["systems"][0]["ns"];
            if (std::count_if(ns.begin(), ns.end(), [](const json& v) { return !v.is_null(); }) >=
                5)
                break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const std::size_t n = r.body["frames"];
    ASSERT_GE(n, 6u);
    ASSERT_EQ(r.body["frame_ms"].size(), n);
    ASSERT_EQ(r.body["entities"].size(), n);
    ASSERT_EQ(r.body["archetypes"].size(), n);
    for (std::size_t i = 1; i < n; ++i)
        EXPECT_GT(r.body["entities"][i].get<int>(), r.body["entities"][i - 1].get<int>()) << i;
    EXPECT_GT(r.body["frame_ms"][n - 1].get<double>(), 0.0);
    ASSERT_EQ(r.body["systems"].size(), 1u);
    EXPECT_EQ(r.body["systems"][0]["name"], "move");
    const json& ns = r.body["systems"][0]["ns"];
    ASSERT_EQ(ns.size(), n);
    EXPECT_TRUE(ns[0].is_null());  // before anyone watched
    EXPECT_GT(ns[n - 1].get<std::int64_t>(), 0);
    // Frames run on: the history keeps at most 300.
    while (frame.load() < 320) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const Reply full = get(inspector.port(), "/api/history");
    EXPECT_EQ(full.body["frames"], 300);
    EXPECT_EQ(full.body["frame_ms"].size(), 300u);
}

namespace {

struct Physics {
    static constexpr std::string_view name = "physics";
    void build(ts::World&, ts::Schedule&) {}
};

TEST(Inspector, ShowsNamesPrefabsAndModules) {
    Scene s;
    ts::Schedule schedule;
    s.world.import <Physics>(schedule);
    s.world.set_name(s.a, "captain");
    s.world.set_name(s.b, "mate");
    const ts::Entity orc = s.world.prefab(Vel{3, 4});
    const ts::Entity grunt = s.world.instantiate(orc);
    ts::Inspector inspector(0);
    FrameLoop loop(inspector, s.world);
    const std::uint16_t port = inspector.port();

    Reply r = get(port, "/api/stats");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body["modules"], json::array({"physics"}));

    r = get(port, "/api/entity/" + id(s.a));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body["name"], "captain");
    EXPECT_TRUE(r.body["prefab"].is_null());
    r = get(port, "/api/entity/" + id(grunt));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body["prefab"], id(orc));
    EXPECT_EQ(r.body["name"], "");

    // The entity list searches by name (a substring) and shows the names it has.
    r = get(port, "/api/entities?name=a");
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body["total"], 2);
    std::vector<std::string> names;
    for (const json& e : r.body["entities"]) names.push_back(e["name"]);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"captain", "mate"}));
    r = get(port, "/api/entities?name=capt");
    ASSERT_EQ(r.status, 200) << r.body;
    ASSERT_EQ(r.body["total"], 1);
    EXPECT_EQ(r.body["entities"][0]["id"], id(s.a));
    r = get(port, "/api/entities?name=nobody");
    EXPECT_EQ(r.body["total"], 0);
}

}  // namespace

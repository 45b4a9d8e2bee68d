// net.hpp: Replicator and Mirror. A model-based test (random server changes over thousands of
// ticks, clients losing, repeating and reordering messages) against a reference map of the
// replicated state, and one test per behaviour: visibility, the full-state fallback, tags,
// reflected values, and each kind of hostile message (the client world is unchanged). The row
// logs the replicator keeps (detail/archetype.hpp RowLog) are checked against their definition
// after every kind of row move, and by a second model test with clients at different baselines.
#include <tessera/detail/storage.hpp>
#include <tessera/net.hpp>
#include <tessera/serialize.hpp>
#include <tessera/tessera.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace net_test {
struct Pos {
    float x = 0, y = 0;
    friend bool operator==(const Pos&, const Pos&) = default;
};
struct Vel {
    std::int32_t dx = 0, dy = 0;
    friend bool operator==(const Vel&, const Vel&) = default;
};
struct Frozen {};
struct Label {
    std::string text;
    std::int32_t level = 0;
    friend bool operator==(const Label&, const Label&) = default;
};
struct Flags {
    bool on = false;
    std::uint8_t mode = 0;
    friend bool operator==(const Flags&, const Flags&) = default;
};
struct Local {  // never replicated
    int v = 0;
};
struct Local2 {  // never replicated, not trivially copyable
    std::string s;
};
struct SparseHp {  // sparse: refused by replicate
    int hp = 0;
};
}  // namespace net_test

template <>
struct tessera::component_traits<net_test::SparseHp> {
    static constexpr auto storage = tessera::storage_kind::sparse;
};

TESSERA_REFLECT(net_test::Label, text, level)
TESSERA_REFLECT(net_test::Flags, on, mode)

namespace {

namespace ts = tessera;
namespace net = tessera::net;
using namespace net_test;

// The replicated state of one entity, and of a world: server entity bits -> state.
struct Row {
    std::optional<Pos> pos;
    std::optional<Vel> vel;
    bool frozen = false;
    std::optional<Label> label;
    friend bool operator==(const Row&, const Row&) = default;
};
using State = std::map<std::uint64_t, Row>;

Row row_of(const ts::World& w, ts::Entity e) {
    Row r;
    if (const Pos* p = w.try_get<Pos>(e)) r.pos = *p;
    if (const Vel* v = w.try_get<Vel>(e)) r.vel = *v;
    r.frozen = w.has<Frozen>(e);
    if (const Label* l = w.try_get<Label>(e)) r.label = *l;
    return r;
}

bool replicated(const Row& r) {
    return r.pos || r.vel || r.frozen || r.label;
}

// The server's state as a client with this view should see it (`seen` null: everything).
State server_state(const ts::World& w, const std::function<bool(ts::Entity)>& seen = {}) {
    State s;
    for (const ts::Entity e : w.entities()) {
        Row r = row_of(w, e);
        if (replicated(r) && (!seen || seen(e))) s[e.to_bits()] = r;
    }
    return s;
}

State client_state(const ts::World& w) {
    State s;
    for (const ts::Entity e : w.entities()) {
        const net::Replica* rep = w.try_get<net::Replica>(e);
        if (rep == nullptr) continue;
        EXPECT_EQ(s.count(rep->remote.to_bits()), 0u) << "two mirrors of one entity";
        s[rep->remote.to_bits()] = row_of(w, e);
    }
    return s;
}

std::string describe(const State& s) {
    std::string out;
    for (const auto& [bits, r] : s) {
        const ts::Entity e = ts::Entity::from_bits(bits);
        out += std::to_string(e.index) + ":" + std::to_string(e.generation) + " [";
        if (r.pos) out += " pos(" + std::to_string(r.pos->x) + "," + std::to_string(r.pos->y) + ")";
        if (r.vel)
            out += " vel(" + std::to_string(r.vel->dx) + "," + std::to_string(r.vel->dy) + ")";
        if (r.frozen) out += " frozen";
        if (r.label) out += " label(" + r.label->text + "," + std::to_string(r.label->level) + ")";
        out += " ]\n";
    }
    return out;
}

void replicate_all(net::Replicator& rep) {
    rep.replicate<Pos, Vel, Frozen, Label>();
}

// A server and one client, for the focused tests.
struct Pair {
    ts::World server;
    ts::World client;
    net::Replicator rep{server};
    net::Mirror mirror{client};
    net::ClientId c;
    Pair() {
        replicate_all(rep);
        c = rep.connect();
    }
    // Sends one message, applies and acknowledges it.
    std::vector<std::byte> sync() {
        std::vector<std::byte> m = rep.delta(c);
        rep.ack(c, mirror.apply(m));
        return m;
    }
};

std::uint64_t baseline_of(const std::vector<std::byte>& m) {
    std::uint64_t b;
    std::memcpy(&b, m.data() + 12, 8);
    return b;
}

TEST(Net, FirstMessageIsTheFullStateAndDeltasFollow) {
    Pair p;
    const ts::Entity a = p.server.spawn(Pos{1, 2}, Vel{3, 4});
    const ts::Entity b = p.server.spawn(Label{"Ayla", 3}, Frozen{});
    p.server.spawn(Local{5});  // nothing replicated: not sent
    const std::vector<std::byte> first = p.sync();
    EXPECT_EQ(baseline_of(first), 0u);
    EXPECT_EQ(client_state(p.client), server_state(p.server));
    EXPECT_EQ(p.mirror.size(), 2u);
    const ts::Entity la = p.mirror.local(a);
    ASSERT_TRUE(p.client.is_alive(la));
    EXPECT_EQ(p.mirror.remote(la), a);
    EXPECT_EQ(p.client.get<net::Replica>(la).remote, a);

    p.server.set(a, Pos{5, 6});
    p.server.remove<Frozen>(b);
    p.server.add(b, Vel{7, 7});
    const ts::Entity c = p.server.spawn(Pos{9, 9});
    p.server.despawn(a);
    const std::vector<std::byte> second = p.sync();
    EXPECT_NE(baseline_of(second), 0u);
    EXPECT_EQ(client_state(p.client), server_state(p.server)) << describe(client_state(p.client));
    EXPECT_FALSE(p.mirror.local(a));
    EXPECT_FALSE(p.client.is_alive(la));
    EXPECT_TRUE(p.mirror.local(c));
    EXPECT_EQ(p.mirror.remote(ts::Entity{12345, 1}), ts::Entity::null());
}

TEST(Net, NothingChangedIsAHeaderOnlyMessageAndChangesAreFoundInMutAndQueryWrites) {
    Pair p;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 100; ++i) es.push_back(p.server.spawn(Pos{float(i), 0}, Vel{i, 0}));
    p.sync();
    const std::vector<std::byte> idle = p.sync();
    const std::size_t header = idle.size();
    EXPECT_LT(header, 160u);  // header + component table (names) + two empty counts
    // A T& query term stamps the whole column.
    p.server.each([](Pos& pos) { pos.y += 1; });
    EXPECT_EQ(p.sync().size() > header, true);
    EXPECT_EQ(client_state(p.client), server_state(p.server));
    // Mut<T> marks only the rows written.
    p.server.query<ts::Mut<Vel>>().each([](ts::Mut<Vel> v) {
        if (v->dx % 10 == 0) v.write().dy = 5;
    });
    const std::vector<std::byte> some = p.sync();
    EXPECT_LT(some.size(), header + 10 * (8 + 8));
    EXPECT_EQ(client_state(p.client), server_state(p.server));
    EXPECT_EQ(p.sync().size(), header);
}

TEST(Net, ColumnBoundFollowsEveryWrite) {
    ts::World w;
    const ts::Entity e = w.spawn(Pos{});
    const ts::ComponentId id = ts::component_id<Pos>();
    w.changed_tick<Pos>(e);  // tracking on
    auto column = [&]() -> const ts::detail::Column& {
        const auto& a = w.storage().archetype(w.storage().try_record(e)->archetype);
        return a.columns[static_cast<std::uint32_t>(a.column_index(id))];
    };
    w.advance_tick();
    w.set(e, Pos{1, 1});
    EXPECT_EQ(column().changed_bound(), w.tick());
    w.advance_tick();
    w.query<ts::Mut<Pos>>().each([](ts::Mut<Pos> p) { p.write().x = 2; });
    EXPECT_GE(column().changed_bound(), w.tick() - 1);
    const std::uint64_t before = column().changed_bound();
    w.advance_tick();
    w.query<const Pos&>().each([](const Pos&) {});  // reads mark nothing
    EXPECT_EQ(column().changed_bound(), before);
    w.spawn_many(40, [](std::size_t, Pos& p) { p = {}; });
    EXPECT_EQ(column().changed_bound(), w.tick());
}

TEST(Net, TagsAndReflectedStringsReplicate) {
    Pair p;
    const ts::Entity e = p.server.spawn(Label{"caf\xc3\xa9", 1});
    p.sync();
    EXPECT_EQ(p.client.get<Label>(p.mirror.local(e)).text, "caf\xc3\xa9");
    p.server.add<Frozen>(e);
    p.sync();
    EXPECT_TRUE(p.client.has<Frozen>(p.mirror.local(e)));
    p.server.get_mut<Label>(e).text = std::string(300, 'x');
    p.sync();
    EXPECT_EQ(p.client.get<Label>(p.mirror.local(e)).text, std::string(300, 'x'));
    p.server.remove<Frozen>(e);
    p.sync();
    EXPECT_FALSE(p.client.has<Frozen>(p.mirror.local(e)));
    // A tag-only entity.
    const ts::Entity t = p.server.spawn(Frozen{});
    p.sync();
    EXPECT_TRUE(p.client.has<Frozen>(p.mirror.local(t)));
    // Losing its last replicated component despawns the mirror.
    p.server.add(t, Local{1});
    p.server.remove<Frozen>(t);
    p.sync();
    EXPECT_FALSE(p.mirror.local(t));
    EXPECT_EQ(client_state(p.client), server_state(p.server));
}

TEST(Net, ClientComponentsOnMirrorsStayAndObserversSeeOneBatch) {
    Pair p;
    const ts::Entity e = p.server.spawn(Pos{1, 1}, Vel{1, 1}, Frozen{});
    int spawns = 0;
    int adds = 0;
    ts::Observer o1 = p.client.on_spawn([&](ts::World&, ts::Entity) { ++spawns; });
    ts::Observer o2 = p.client.on_add<Pos>([&](ts::World&, ts::Entity) { ++adds; });
    p.sync();
    EXPECT_EQ(spawns, 1);
    EXPECT_EQ(adds, 1);
    const ts::Entity l = p.mirror.local(e);
    p.client.add(l, Local{7});
    p.server.remove<Vel>(e);  // sent whole: Vel goes, Local stays
    p.sync();
    EXPECT_EQ(p.client.get<Local>(l).v, 7);
    EXPECT_FALSE(p.client.has<Vel>(l));
    EXPECT_TRUE(p.client.has<Pos>(l));
}

TEST(Net, LostDuplicateAndLateMessagesAreHarmless) {
    Pair p;
    const ts::Entity e = p.server.spawn(Pos{1, 1});
    p.sync();
    p.server.set(e, Pos{2, 2});
    const std::vector<std::byte> m1 = p.rep.delta(p.c);  // lost
    p.server.set(e, Pos{3, 3});
    const ts::Entity f = p.server.spawn(Vel{1, 1});
    const std::vector<std::byte> m2 = p.rep.delta(p.c);
    const std::uint64_t t2 = p.mirror.apply(m2);
    EXPECT_EQ(p.client.get<Pos>(p.mirror.local(e)), (Pos{3, 3}));
    EXPECT_EQ(p.mirror.apply(m2), t2);  // duplicate
    EXPECT_EQ(p.mirror.apply(m1), t2);  // late
    EXPECT_EQ(p.client.get<Pos>(p.mirror.local(e)), (Pos{3, 3}));
    EXPECT_TRUE(p.mirror.local(f));
    p.rep.ack(p.c, t2);
    EXPECT_EQ(p.rep.baseline(p.c), t2);
    EXPECT_THROW(p.rep.ack(p.c, t2 + 100), ts::Error);
}

TEST(Net, VisibilityEnteringSendsTheWholeEntityLeavingDespawns) {
    Pair p;
    p.rep.set_visibility(p.c, net::Visibility::whitelist);
    const ts::Entity a = p.server.spawn(Pos{1, 1}, Frozen{});
    const ts::Entity b = p.server.spawn(Pos{2, 2});
    p.sync();
    EXPECT_EQ(p.mirror.size(), 0u);
    p.rep.show(p.c, a);
    p.sync();
    ASSERT_TRUE(p.mirror.local(a));
    EXPECT_TRUE(p.client.has<Frozen>(p.mirror.local(a)));
    EXPECT_FALSE(p.mirror.local(b));
    p.server.set(b, Pos{3, 3});  // b unseen: not sent
    p.server.set(a, Pos{4, 4});
    p.sync();
    EXPECT_FALSE(p.mirror.local(b));
    EXPECT_EQ(p.client.get<Pos>(p.mirror.local(a)), (Pos{4, 4}));
    p.rep.hide(p.c, a);
    p.sync();
    EXPECT_FALSE(p.mirror.local(a));
    EXPECT_EQ(p.mirror.size(), 0u);
    p.rep.show(p.c, a);
    p.server.despawn(a);  // shown, then dead: nothing arrives, nothing stays listed
    p.sync();
    EXPECT_EQ(p.mirror.size(), 0u);
    EXPECT_EQ(p.rep.client_state_size(p.c), 0u);

    p.rep.set_visibility(p.c, net::Visibility::blacklist);  // full state next
    const std::vector<std::byte> full = p.sync();
    EXPECT_EQ(baseline_of(full), 0u);
    EXPECT_TRUE(p.mirror.local(b));
    p.rep.hide(p.c, b);
    p.sync();
    EXPECT_FALSE(p.mirror.local(b));
    EXPECT_THROW(p.rep.show(net::ClientId{99}, b), ts::Error);
    p.rep.set_visibility(p.c, net::Visibility::all);
    EXPECT_THROW(p.rep.show(p.c, b), ts::Error);
}

TEST(Net, ALaggingClientGetsAFullStateAndCostsBoundedMemory) {
    ts::World server;
    ts::World client;
    net::Replicator rep(server, {.max_lag = 20});
    replicate_all(rep);
    net::Mirror mirror(client);
    const net::ClientId lazy = rep.connect();
    const net::ClientId good = rep.connect();
    net::Mirror good_mirror(client);  // not applied: only the replicator's memory matters
    std::vector<ts::Entity> es;
    for (int i = 0; i < 50; ++i) es.push_back(server.spawn(Pos{float(i), 0}, Frozen{}));
    rep.ack(lazy, mirror.apply(rep.delta(lazy)));
    std::size_t most = 0;
    for (int t = 0; t < 200; ++t) {
        server.remove<Frozen>(es[static_cast<std::size_t>(t) % es.size()]);
        server.add<Frozen>(es[static_cast<std::size_t>(t + 7) % es.size()]);
        const std::vector<std::byte> m = rep.delta(lazy);  // never applied nor acked
        (void)m;
        rep.ack(good, rep.delta(good).empty() ? 0 : server.tick() - 1);
        most = std::max(most, rep.log_size());
    }
    EXPECT_LE(most, 2u * 20u + 4u);  // the log of max_lag ticks, not of 200
    const std::vector<std::byte> late = rep.delta(lazy);
    EXPECT_EQ(baseline_of(late), 0u);  // a full state
    mirror.apply(late);
    EXPECT_EQ(client_state(client), server_state(server));
}

// ---- hostile messages ----

// The layout fingerprint the format sends for a type without field metadata: FNV-1a of its
// size's 8 bytes (src/net/wire.hpp).
std::uint64_t fingerprint_of_info(const ts::ComponentInfo& info) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    const std::uint64_t size = info.size;
    for (int i = 0; i < 8; ++i) h = (h ^ ((size >> (8 * i)) & 0xFF)) * 0x100000001b3ull;
    return h;
}

// Builds messages by hand (the format of docs/networking.md).
struct Forge {
    std::vector<std::byte> b;
    void u8(std::uint8_t v) { b.push_back(std::byte{v}); }
    void raw(const void* p, std::size_t n) {
        const auto* c = static_cast<const std::byte*>(p);
        b.insert(b.end(), c, c + n);
    }
    void u32(std::uint32_t v) { raw(&v, 4); }
    void u64(std::uint64_t v) { raw(&v, 8); }
    void varint(std::uint64_t v) {
        while (v >= 0x80) {
            u8(static_cast<std::uint8_t>(v | 0x80));
            v >>= 7;
        }
        u8(static_cast<std::uint8_t>(v));
    }
    void text(std::string_view s) {
        varint(s.size());
        raw(s.data(), s.size());
    }
    void header(std::uint64_t tick, std::uint64_t base) {
        raw("TSN", 3);
        u8(1);
        u64(tick);
        u64(base);
    }
};

// The full state a server with one Pos entity, a Label entity and a Flags entity sends.
std::vector<std::byte> valid_full(ts::World& server, net::Replicator& rep, net::ClientId c) {
    (void)server;
    return rep.delta(c);
}

TEST(Net, HostileMessagesAreRefusedAndChangeNothing) {
    ts::World server;
    net::Replicator rep(server);
    rep.replicate<Pos, Vel, Frozen, Label, Flags>();
    const net::ClientId c = rep.connect();
    server.spawn(Pos{1, 2}, Frozen{});
    server.spawn(Label{"hello", 2}, Flags{true, 3});
    const std::vector<std::byte> full = valid_full(server, rep, c);

    ts::World client;
    net::Mirror mirror(client);
    const ts::Entity own = client.spawn(Pos{7, 7});
    const std::uint64_t hash = ts::state_hash(client);
    auto refused = [&](const std::vector<std::byte>& m, const char* what) {
        try {
            mirror.apply(m);
            ADD_FAILURE() << what << ": accepted";
        } catch (const ts::Error& e) {
            EXPECT_EQ(e.code(), ts::errc::invalid_argument) << what;
        }
        EXPECT_EQ(ts::state_hash(client), hash) << what;
        EXPECT_EQ(client.count(), 1u) << what;
        EXPECT_EQ(mirror.tick(), 0u) << what;
    };
    // Every truncation of a valid message.
    for (std::size_t n = 0; n < full.size(); ++n)
        refused(std::vector<std::byte>(full.begin(), full.begin() + static_cast<long>(n)),
                "truncated");
    {
        std::vector<std::byte> m = full;
        m.push_back(std::byte{0});
        refused(m, "trailing byte");
        m = full;
        m[0] = std::byte{'X'};
        refused(m, "bad magic");
        m = full;
        m[3] = std::byte{9};
        refused(m, "bad version");
    }
    const std::string pos_name(ts::component_info<Pos>().name);
    const std::string label_name(ts::component_info<Label>().name);
    const std::string flags_name(ts::component_info<Flags>().name);
    auto component = [](Forge& f, std::string_view name, std::uint8_t kind, std::uint64_t size,
                        std::uint64_t fp) {
        f.text(name);
        f.u8(kind);
        f.varint(size);
        f.u64(fp);
    };
    // The fingerprints the server sent, read back from its message (after the header).
    auto fingerprint_of = [&](const std::string& name) {
        const auto at =
            std::search(full.begin(), full.end(), reinterpret_cast<const std::byte*>(name.data()),
                        reinterpret_cast<const std::byte*>(name.data()) + name.size());
        std::uint64_t fp;
        std::size_t off = static_cast<std::size_t>(at - full.begin()) + name.size() + 1;
        while ((static_cast<std::uint8_t>(full[off]) & 0x80) != 0) ++off;
        std::memcpy(&fp, full.data() + off + 1, 8);
        return fp;
    };
    const std::uint64_t pos_fp = fingerprint_of(pos_name);
    const std::uint64_t label_fp = fingerprint_of(label_name);
    const std::uint64_t flags_fp = fingerprint_of(flags_name);
    // A good message to start from: one Pos record.
    auto one_pos = [&](ts::Entity e, std::uint32_t despawns = 0) {
        Forge f;
        f.header(5, 0);
        f.varint(1);
        component(f, pos_name, 1, sizeof(Pos), pos_fp);
        f.u32(despawns);
        f.u32(1);
        f.varint(e.index);
        f.varint(e.generation);
        f.varint(1 << 1 | 1);
        const Pos v{1, 1};
        f.raw(&v, sizeof v);
        return f.b;
    };
    {
        // The forge itself is right: this one applies (to a second client world).
        ts::World other;
        net::Mirror m2(other);
        EXPECT_EQ(m2.apply(one_pos({3, 1})), 5u);
        EXPECT_EQ(other.count(), 1u);
    }
    refused(one_pos({0xFFFFFFFFu, 1}), "null entity");
    refused(one_pos({3, 0}), "generation 0");
    {
        std::vector<std::byte> m = one_pos({3, 1});
        m[m.size() - sizeof(Pos) - 3 - 4] = std::byte{0x7F};  // the record count's low byte
        refused(m, "bad record count");
    }
    {
        Forge f;
        f.header(5, 0);
        f.varint(1);
        component(f, "net_test::NoSuchThing", 1, 8, 0);
        f.u32(0);
        f.u32(0);
        refused(f.b, "unknown component");
    }
    {
        Forge f;
        f.header(5, 0);
        f.varint(1);
        component(f, pos_name, 1, 12, pos_fp);
        f.u32(0);
        f.u32(0);
        refused(f.b, "bad size");
    }
    {
        Forge f;
        f.header(5, 0);
        f.varint(1);
        component(f, pos_name, 1, sizeof(Pos), pos_fp ^ 1);
        f.u32(0);
        f.u32(0);
        refused(f.b, "different fields");
    }
    {
        Forge f;
        f.header(5, 0);
        f.varint(1);
        component(f, pos_name, 1, sizeof(Pos), pos_fp);
        f.u32(1);  // despawn of 3:1, then a record of 3:1
        f.varint(3);
        f.varint(1);
        f.u32(1);
        f.varint(3);
        f.varint(1);
        f.varint(1 << 1);
        const Pos v{};
        f.raw(&v, sizeof v);
        refused(f.b, "entity twice");
    }
    {
        Forge f;
        f.header(5, 0);
        f.varint(1);
        component(f, pos_name, 1, sizeof(Pos), pos_fp);
        f.u32(0);
        f.u32(1);
        f.varint(3);
        f.varint(1);
        f.varint(4 << 1);  // bit 2: past the table
        refused(f.b, "component index past the table");
    }
    auto label_record = [&](std::string_view text) {
        Forge f;
        f.header(5, 0);
        f.varint(1);
        component(f, label_name, 2, sizeof(Label), label_fp);
        f.u32(0);
        f.u32(1);
        f.varint(4);
        f.varint(1);
        f.varint(1 << 1 | 1);
        f.text(text);
        const std::int32_t level = 1;
        f.raw(&level, 4);
        return f.b;
    };
    {
        ts::World other;
        net::Mirror m2(other);
        m2.apply(label_record("ok"));
        EXPECT_EQ(other.get<Label>(m2.local({4, 1})).text, "ok");
    }
    refused(label_record("bad \xff utf8"), "invalid UTF-8");
    refused(label_record("\xc3"), "cut UTF-8");
    {
        Forge f;
        f.header(5, 0);
        f.varint(1);
        component(f, flags_name, 1, sizeof(Flags), flags_fp);
        f.u32(0);
        f.u32(1);
        f.varint(4);
        f.varint(1);
        f.varint(1 << 1 | 1);
        const std::uint8_t bytes[2] = {2, 0};  // a bool of 2
        f.raw(bytes, 2);
        refused(f.b, "bad bool");
    }
    {
        Forge f;
        f.header(5, 7);  // relative to tick 7, never applied
        f.varint(0);
        f.u32(0);
        f.u32(0);
        refused(f.b, "unapplied baseline");
        Forge g;
        g.header(5, 5);
        g.varint(0);
        g.u32(0);
        g.u32(0);
        refused(g.b, "baseline not before tick");
    }
    {
        Forge f;
        f.header(5, 0);
        f.varint(1);
        component(f, std::string(ts::component_info<net::Replica>().name), 1, sizeof(net::Replica),
                  0);
        f.u32(0);
        f.u32(0);
        refused(f.b, "Replica itself");
    }
    {
        // A type of the client that is not trivially copyable, named with its own size and
        // fingerprint (which a hostile server can compute): never filled with bytes.
        Forge f;
        f.header(5, 0);
        f.varint(1);
        component(f, std::string(ts::component_info<Local2>().name), 1, sizeof(Local2),
                  fingerprint_of_info(ts::component_info<Local2>()));
        f.u32(0);
        f.u32(0);
        refused(f.b, "bytes into a non-trivially-copyable type");
    }
    // After all that, the valid message still applies, and the client's own entity stays.
    mirror.apply(full);
    EXPECT_EQ(client_state(client), server_state(server));
    EXPECT_TRUE(client.is_alive(own));
}

TEST(Net, ReplicateRefusesWhatItCantSend) {
    ts::World w;
    net::Replicator rep(w);
    EXPECT_THROW(rep.replicate<ts::ChildOf>(), ts::Error);
    EXPECT_EQ(rep.components().size(), 0u);
    // A sparse component: the delta would never see its changes.
    try {
        rep.replicate<Pos, SparseHp>();
        ADD_FAILURE() << "a sparse component was accepted";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::invalid_argument);
        EXPECT_NE(std::string(e.what()).find("sparse"), std::string::npos) << e.what();
    }
    EXPECT_EQ(rep.components().size(), 0u);  // nothing of the call, Pos included
    rep.replicate<Pos>();
    rep.replicate<Pos, Vel>();  // again: adds Vel only
    EXPECT_EQ(rep.components().size(), 2u);
    EXPECT_THROW((void)rep.delta(net::ClientId{3}), ts::Error);
    EXPECT_THROW(rep.disconnect(net::ClientId{3}), ts::Error);
    const net::ClientId c = rep.connect();
    EXPECT_EQ(rep.client_count(), 1u);
    rep.disconnect(c);
    EXPECT_EQ(rep.client_count(), 0u);
    EXPECT_THROW(rep.ack(c, 1), ts::Error);
}

// ---- the model ----

struct Link {
    double drop;       // a message is lost
    double duplicate;  // a message arrives twice
    double reorder;    // messages in flight are delivered in a random order
    double ack_loss;   // an acknowledgement is lost
    bool acks = true;  // false: acknowledges nothing until the end
    net::Visibility view = net::Visibility::all;
};

TEST(Net, ModelRandomChangesOverLossyLinksConverge) {
    std::mt19937 rng(20261206);
    auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
    auto pick = [&](std::size_t n) {
        return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
    };

    ts::World server;
    constexpr std::uint64_t max_lag = 64;
    net::Replicator rep(server, {.max_lag = max_lag});
    replicate_all(rep);
    const std::vector<Link> links = {
        {0.2, 0.1, 0.5, 0.2},
        {0.5, 0.0, 0.2, 0.5, true, net::Visibility::whitelist},
        {0.05, 0.3, 0.3, 0.1, true, net::Visibility::blacklist},
        {0.3, 0.1, 0.5, 0.0, false},
    };
    struct Peer {
        net::ClientId id;
        ts::World world;
        net::Mirror mirror{world};
        std::vector<std::vector<std::byte>> in_flight;
        std::set<std::uint64_t> listed;  // the test's own copy of the show/hide list
    };
    std::vector<std::unique_ptr<Peer>> peers;
    for (const Link& l : links) {
        auto p = std::make_unique<Peer>();
        p->id = rep.connect();
        if (l.view != net::Visibility::all) rep.set_visibility(p->id, l.view);
        peers.push_back(std::move(p));
    }
    std::vector<ts::Entity> alive;
    auto sees = [&](const Peer& p, const Link& l) {
        return [&p, &l](ts::Entity e) {
            if (l.view == net::Visibility::all) return true;
            const bool in = p.listed.count(e.to_bits()) != 0;
            return l.view == net::Visibility::whitelist ? in : !in;
        };
    };
    auto random_change = [&] {
        const std::size_t op = pick(10);
        if (op == 0 || alive.empty()) {
            ts::Entity e = server.spawn();
            if (chance(0.6)) server.add(e, Pos{float(pick(100)), 0});
            if (chance(0.5)) server.add(e, Vel{int(pick(100)), 1});
            if (chance(0.3)) server.add<Frozen>(e);
            if (chance(0.3)) server.add(e, Label{"l" + std::to_string(pick(1000)), 1});
            if (chance(0.2)) server.add(e, Local{1});
            alive.push_back(e);
            return;
        }
        const std::size_t i = pick(alive.size());
        const ts::Entity e = alive[i];
        switch (op) {
            case 1:
                server.despawn(e);
                alive[i] = alive.back();
                alive.pop_back();
                break;
            case 2: server.add(e, Pos{float(pick(100)), 2}); break;
            case 3: server.add<Frozen>(e); break;
            case 4: server.remove<Pos>(e); break;
            case 5: server.remove<Frozen>(e); break;
            case 6: server.remove<Label, Vel>(e); break;
            case 7:
                if (server.has<Vel>(e)) server.set(e, Vel{int(pick(100)), 3});
                break;
            case 8:
                if (server.has<Label>(e)) server.get_mut<Label>(e).text += "x";
                break;
            default:
                if (chance(0.1)) {
                    server.each([](Pos& p) { p.y += 1; });  // stamps whole columns
                } else {
                    server.query<ts::Mut<Vel>>().each([&](ts::Mut<Vel> v) {
                        if (pick(8) == 0) v.write().dy += 1;
                    });
                }
        }
    };
    auto deliver = [&](Peer& p, const Link& l, bool everything) {
        if (!everything && chance(l.reorder))
            std::shuffle(p.in_flight.begin(), p.in_flight.end(), rng);
        std::vector<std::vector<std::byte>> later;
        for (std::vector<std::byte>& m : p.in_flight) {
            if (!everything && chance(0.3)) {  // still on its way
                later.push_back(std::move(m));
                continue;
            }
            const std::uint64_t t = p.mirror.apply(m);
            if (l.acks && !chance(l.ack_loss)) rep.ack(p.id, t);
        }
        p.in_flight = std::move(later);
    };
    constexpr int frames = 3000;
    for (int frame = 0; frame < frames; ++frame) {
        const std::size_t changes = pick(6);
        for (std::size_t k = 0; k < changes; ++k) random_change();
        for (std::size_t k = 0; k < peers.size(); ++k) {
            Peer& p = *peers[k];
            const Link& l = links[k];
            if (l.view != net::Visibility::all && !alive.empty() && chance(0.3)) {
                const ts::Entity e = alive[pick(alive.size())];
                if (chance(0.5)) {
                    rep.show(p.id, e);
                    if (l.view == net::Visibility::whitelist)
                        p.listed.insert(e.to_bits());
                    else
                        p.listed.erase(e.to_bits());
                } else {
                    rep.hide(p.id, e);
                    if (l.view == net::Visibility::whitelist)
                        p.listed.erase(e.to_bits());
                    else
                        p.listed.insert(e.to_bits());
                }
            }
            std::vector<std::byte> m = rep.delta(p.id);
            if (!chance(l.drop)) {
                if (chance(l.duplicate)) p.in_flight.push_back(m);
                p.in_flight.push_back(std::move(m));
            }
            if (p.in_flight.size() > 8) p.in_flight.erase(p.in_flight.begin());  // lost in the net
            deliver(p, l, false);
        }
        // Nothing grows without bound: the log holds max_lag ticks of changes at most.
        ASSERT_LE(rep.log_size(), (max_lag + 8) * 6 * 4) << "frame " << frame;
        for (const auto& p : peers)
            ASSERT_LE(rep.client_state_size(p->id), alive.size() + p->listed.size() + max_lag * 2)
                << "frame " << frame;
        if (frame % 500 == 499) {
            // Dead entities leave the test's lists as the replicator drops them.
            for (auto& p : peers) {
                for (auto it = p->listed.begin(); it != p->listed.end();) {
                    if (!server.is_alive(ts::Entity::from_bits(*it)))
                        it = p->listed.erase(it);
                    else
                        ++it;
                }
            }
        }
    }
    // The last message reaches every client: each sees the server's state.
    for (std::size_t k = 0; k < peers.size(); ++k) {
        Peer& p = *peers[k];
        deliver(p, links[k], true);
        const std::vector<std::byte> m = rep.delta(p.id);
        p.mirror.apply(m);
        const State want = server_state(server, sees(p, links[k]));
        const State got = client_state(p.world);
        EXPECT_EQ(got, want) << "client " << k << "\n got:\n"
                             << describe(got) << " want:\n"
                             << describe(want);
        EXPECT_GT(want.size(), 0u);
    }
}

// Every row log of `w` is what it says: exactly the rows whose changed tick is newer than its
// epoch, each once, positions matching. Returns how many columns have a trusted log.
std::size_t check_row_logs(const ts::World& w) {
    const ts::detail::Storage& s = w.storage();
    std::size_t trusted = 0;
    for (std::size_t i = 0; i < s.archetype_end(); ++i) {
        const ts::detail::Archetype& a = s.archetype(static_cast<std::uint32_t>(i));
        for (const ts::detail::Column& c : a.columns) {
            ts::detail::RowLog* log = c.log;
            if (log == nullptr || !log->valid) continue;
            ++trusted;
            EXPECT_EQ(log->ticks, c.changed);
            EXPECT_GE(log->capacity, a.size);
            std::set<std::uint32_t> listed;
            for (std::uint32_t k = 0; k < log->count; ++k) {
                const std::uint32_t row = log->rows()[k];
                EXPECT_LT(row, a.size) << c.info->name;
                EXPECT_TRUE(listed.insert(row).second) << c.info->name << " row twice " << row;
                EXPECT_EQ(log->positions()[row], k);
            }
            for (std::uint32_t row = 0; row < a.size; ++row) {
                EXPECT_EQ(listed.count(row) != 0, c.changed[row] > log->epoch)
                    << c.info->name << " row " << row << " tick " << c.changed[row] << " epoch "
                    << log->epoch;
            }
        }
    }
    return trusted;
}

// The row log of `T`'s column in the table of `e`.
template <class T>
const ts::detail::RowLog* row_log_of(const ts::World& w, ts::Entity e) {
    const ts::detail::Storage& s = w.storage();
    const ts::detail::EntityRecord* r = s.try_record(e);
    const ts::detail::Archetype& a = s.archetype(r->archetype);
    const std::int32_t c = a.column_index(ts::component_id<T>());
    return c < 0 ? nullptr : a.columns[static_cast<std::uint32_t>(c)].log;
}

TEST(Net, RowLogListsEachWrittenRowOnceAndIsTrimmedByAcks) {
    Pair p;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 1000; ++i) es.push_back(p.server.spawn(Pos{float(i), 0}, Local{i}));
    p.sync();  // the full state
    const ts::detail::RowLog* log = row_log_of<Pos>(p.server, es[0]);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(log->count, 0u);  // acknowledged: nothing newer
    for (int k = 0; k < 3; ++k) {
        for (int i = 0; i < 1000; i += 100) p.server.set(es[i], Pos{float(k), 1});
    }
    EXPECT_EQ(log->count, 10u);  // each row once
    // A component no replicator asked a log of has none.
    EXPECT_EQ(row_log_of<Local>(p.server, es[0]), nullptr);
    const std::vector<std::byte> m = p.rep.delta(p.c);
    EXPECT_EQ(check_row_logs(p.server), 1u);
    EXPECT_EQ(log->count, 10u);  // not acknowledged yet
    p.rep.ack(p.c, p.mirror.apply(m));
    EXPECT_EQ(log->count, 0u);
    EXPECT_EQ(client_state(p.client), server_state(p.server));
    // Mut<T> writes, and writes from par_each workers, are listed too.
    p.server.query<ts::Mut<Pos>>().each([](ts::Entity e, ts::Mut<Pos> pos) {
        if (e.index % 7 == 0) pos.write().y = 5;
    });
    p.server.query<ts::Mut<Pos>>().par_each([](ts::Entity e, ts::Mut<Pos> pos) {
        if (e.index % 11 == 0) pos.write().y = 6;
    });
    std::size_t want = 0;
    for (const ts::Entity e : es) want += (e.index % 7 == 0 || e.index % 11 == 0) ? 1 : 0;
    EXPECT_EQ(log->count, want);
    EXPECT_EQ(check_row_logs(p.server), 1u);
    p.sync();
    EXPECT_EQ(client_state(p.client), server_state(p.server));
}

TEST(Net, RowLogStaysRightThroughMovesGrowthCloneAndRestore) {
    Pair p;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 200; ++i) es.push_back(p.server.spawn(Pos{float(i), 0}, Vel{i, 0}));
    p.sync();
    const auto written = [&](int step) {
        for (std::size_t i = 0; i < es.size(); i += 3) {
            if (p.server.is_alive(es[i]) && p.server.has<Pos>(es[i]))
                p.server.set(es[i], Pos{float(step), float(i)});
        }
    };
    written(1);
    // Swap-and-pop: despawns of listed and unlisted rows, the last row included.
    for (std::size_t i = 0; i < es.size(); i += 5) p.server.despawn(es[i]);
    p.server.despawn(es[199]);
    check_row_logs(p.server);
    // Moves between tables (a component added and removed that is not replicated).
    for (std::size_t i = 1; i < es.size(); i += 4) {
        if (p.server.is_alive(es[i])) p.server.add(es[i], Local{1});
    }
    for (std::size_t i = 1; i < es.size(); i += 8) {
        if (p.server.is_alive(es[i])) p.server.remove<Local>(es[i]);
    }
    written(2);
    check_row_logs(p.server);
    // Growth: a table's arrays move (logs with them); spawn_many lists its rows.
    const auto more = p.server.spawn_many(5000, [](std::size_t i, Pos& pos, Vel& v) {
        pos = {float(i), 9};
        v = {1, 1};
    });
    es.insert(es.end(), more.begin(), more.end());
    written(3);
    // A despawn of many frees whole words of rows at the end.
    std::vector<ts::Entity> last(es.end() - 300, es.end());
    p.server.despawn(std::span<const ts::Entity>(last));
    es.resize(es.size() - 300);
    EXPECT_GT(check_row_logs(p.server), 0u);
    // A whole-column stamp (T& term), then a row entering that table with an older tick.
    p.server.each([](Pos& pos) { pos.x += 1; });
    const ts::Entity old = es[2];
    p.server.add(old, Local{3});
    p.server.remove<Local>(old);
    check_row_logs(p.server);
    p.sync();
    EXPECT_EQ(client_state(p.client), server_state(p.server));
    // A clone has no row logs and replicates like any world.
    const ts::World copy = p.server.clone();
    EXPECT_EQ(check_row_logs(copy), 0u);
    // A restore replaces every table: the replicator lists the rows again.
    const ts::Snapshot snap = p.server.snapshot();
    written(4);
    p.sync();
    p.server.restore(snap);
    written(5);
    p.sync();  // a full state (the tables changed)
    EXPECT_GT(check_row_logs(p.server), 0u);
    written(6);
    p.sync();
    EXPECT_GT(check_row_logs(p.server), 0u);
    EXPECT_EQ(client_state(p.client), server_state(p.server));
}

TEST(Net, ASecondReplicatorOfTheSameComponentsScansBlockBounds) {
    Pair p;
    net::Replicator other(p.server);
    replicate_all(other);
    const net::ClientId oc = other.connect();
    ts::World oworld;
    net::Mirror omirror(oworld);
    std::vector<ts::Entity> es;
    for (int i = 0; i < 500; ++i) es.push_back(p.server.spawn(Pos{float(i), 0}));
    for (int round = 0; round < 4; ++round) {
        for (std::size_t i = round; i < es.size(); i += 9)
            p.server.set(es[i], Pos{1, float(round)});
        p.sync();
        other.ack(oc, omirror.apply(other.delta(oc)));
        EXPECT_EQ(client_state(p.client), server_state(p.server));
        EXPECT_EQ(client_state(oworld), server_state(p.server));
    }
}

// Random sets mixed with structural changes (spawns, spawn_many, despawns one and many, moves
// between tables, whole-column stamps, Mut writes) on a few large tables, clients acknowledging
// at different lags: every client that applies its latest message holds the server's state,
// every frame, and every row log is exact after every frame.
TEST(Net, ModelRowLogsWithClientsAtDifferentBaselines) {
    std::mt19937 rng(20261207);
    auto pick = [&](std::size_t n) {
        return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng);
    };
    ts::World server;
    net::Replicator rep(server, {.max_lag = 40});
    replicate_all(rep);
    std::vector<ts::Entity> alive;
    for (int i = 0; i < 3000; ++i) {
        alive.push_back(i % 3 == 0 ? server.spawn(Pos{float(i), 0}, Vel{i, 0})
                                   : server.spawn(Pos{float(i), 0}));
    }
    struct Peer {
        net::ClientId id;
        ts::World world;
        net::Mirror mirror{world};
        std::size_t lag;  // acknowledges the message of `lag` frames ago
        std::vector<std::uint64_t> ticks;
    };
    std::vector<std::unique_ptr<Peer>> peers;
    for (const std::size_t lag : {0, 1, 3, 7}) {
        auto p = std::make_unique<Peer>();
        p->id = rep.connect();
        p->lag = lag;
        peers.push_back(std::move(p));
    }
    std::size_t logged_frames = 0;
    for (int frame = 0; frame < 400; ++frame) {
        const std::size_t changes = 5 + pick(40);
        for (std::size_t k = 0; k < changes; ++k) {
            const std::size_t op = pick(20);
            const std::size_t i = pick(alive.size());
            const ts::Entity e = alive[i];
            if (op < 12) {
                if (server.has<Pos>(e)) server.set(e, Pos{float(frame), float(k)});
            } else if (op == 12) {
                server.despawn(e);
                alive[i] = alive.back();
                alive.pop_back();
            } else if (op == 13) {
                alive.push_back(server.spawn(Pos{1, 1}, Vel{1, 1}));
            } else if (op == 14) {
                server.add(e, Local{int(k)});
            } else if (op == 15) {
                server.remove<Local>(e);
            } else if (op == 16) {
                if (server.has<Vel>(e))
                    server.remove<Vel>(e);
                else
                    server.add(e, Vel{2, 2});
            } else if (op == 17 && pick(10) == 0) {
                const auto more = server.spawn_many(1 + pick(100), [](std::size_t, Pos& p) {
                    p = {7, 7};
                });
                alive.insert(alive.end(), more.begin(), more.end());
            } else if (op == 18 && pick(10) == 0 && alive.size() > 200) {
                std::vector<ts::Entity> gone;
                for (int n = 0; n < 50; ++n) {
                    const std::size_t j = pick(alive.size());
                    gone.push_back(alive[j]);
                    alive[j] = alive.back();
                    alive.pop_back();
                }
                server.despawn(std::span<const ts::Entity>(gone));
            } else if (op == 19) {
                if (pick(15) == 0) {
                    server.each([](Vel& v) { v.dy += 1; });  // stamps whole columns
                } else {
                    server.query<ts::Mut<Pos>>().each([&](ts::Mut<Pos> p) {
                        if (pick(200) == 0) p.write().y += 1;
                    });
                }
            }
        }
        if (alive.empty()) alive.push_back(server.spawn(Pos{0, 0}));
        for (auto& pp : peers) {
            Peer& p = *pp;
            const std::uint64_t t = p.mirror.apply(rep.delta(p.id));
            p.ticks.push_back(t);
            if (p.ticks.size() > p.lag) rep.ack(p.id, p.ticks[p.ticks.size() - 1 - p.lag]);
            ASSERT_EQ(client_state(p.world), server_state(server))
                << "frame " << frame << " lag " << p.lag;
        }
        logged_frames += check_row_logs(server) != 0 ? 1 : 0;
        ASSERT_FALSE(::testing::Test::HasFailure()) << "frame " << frame;
    }
    EXPECT_GT(logged_frames, 300u);  // the logs were in use, not rebuilt every frame
}

}  // namespace

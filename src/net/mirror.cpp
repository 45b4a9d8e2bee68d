// The client side of replication (net/mirror.hpp): checks a message whole (wire.hpp), then
// queues its changes in the client world's deferral and applies them as one batch.
#include "wire.hpp"

#include <tessera/detail/operations.hpp>
#include <tessera/detail/storage.hpp>
#include <tessera/error.hpp>
#include <tessera/net/mirror.hpp>
#include <tessera/world.hpp>

#include <algorithm>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera::net {

using tessera::detail::Command;
using tessera::detail::Storage;
using wire::Reader;

namespace {

// A component of the message, resolved in this program.
struct Resolved {
    const ComponentInfo* info;
    wire::Kind kind;
};

// A record of the message, checked.
struct Record {
    Entity remote;
    std::uint64_t mask;
    bool exact;
    std::size_t values;  // offset of its first value
};

}  // namespace

struct Mirror::Impl {
    World* world;
    Storage* s;
    std::unordered_map<std::uint64_t, Entity> locals;  // remote bits -> local
    std::uint64_t applied = 0;
    // Scratch, kept between calls.
    std::vector<Resolved> comps;
    std::vector<Entity> despawns;
    std::vector<Record> records;
    std::vector<std::uint64_t> seen;

    explicit Impl(World& w) : world(&w), s(&w.storage()) {}

    [[nodiscard]] Entity local_of(Entity remote) const noexcept {
        const auto it = locals.find(remote.to_bits());
        if (it == locals.end() || !world->is_alive(it->second)) return Entity::null();
        return it->second;
    }

    // ---- checking: nothing below changes the world ----
    void check_components(Reader& r) {
        const std::uint32_t n = r.count(r.varint32("the component table"), 12, "components");
        if (n > wire::max_components)
            Reader::fail("more than " + std::to_string(wire::max_components) + " components (" +
                         std::to_string(n) + ")");
        comps.clear();
        for (std::uint32_t i = 0; i < n; ++i) {
            const std::string_view name = r.text("a component name");
            if (tessera::detail::invalid_utf8_at(name) != std::string_view::npos)
                Reader::fail("a component name that is not valid UTF-8");
            const std::uint8_t kind = r.u8("the component table");
            const std::uint64_t size = r.varint("the component table");
            const std::uint64_t fp = r.u64("the component table");
            const std::string quoted = "component '" + std::string(name) + "'";
            if (kind > static_cast<std::uint8_t>(wire::Kind::fields))
                Reader::fail(quoted + ": unknown value kind " + std::to_string(kind));
            const ComponentId id = tessera::detail::find_component(name);
            if (!id.valid())
                Reader::fail("unknown " + quoted +
                             " (no component of this program has that name: register the "
                             "type before applying)");
            const ComponentInfo& info = component_info(id);
            if (info.size != size)
                Reader::fail(quoted + ": " + std::to_string(size) + " bytes on the server, " +
                             std::to_string(info.size) + " here");
            if (static_cast<std::uint8_t>(wire::kind_of(info)) != kind ||
                wire::fingerprint(info) != fp)
                Reader::fail(quoted + ": its fields differ from the server's");
            if (info.reserved || id == component_id<Replica>())
                Reader::fail(quoted + " can't be replicated");
            for (const Resolved& c : comps) {
                if (c.info == &info) Reader::fail(quoted + " is listed twice");
            }
            comps.push_back({&info, static_cast<wire::Kind>(kind)});
        }
    }

    void check_records(Reader& r) {
        const std::uint32_t nd = r.count(r.u32("the despawn count"), 2, "despawns");
        despawns.clear();
        for (std::uint32_t i = 0; i < nd; ++i) despawns.push_back(r.entity("a despawn"));
        const std::uint32_t nr = r.count(r.u32("the record count"), 3, "records");
        records.clear();
        const std::uint64_t all =
            comps.size() == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << comps.size()) - 1;
        for (std::uint32_t i = 0; i < nr; ++i) {
            Record rec{};
            rec.remote = r.entity("a record");
            const std::uint64_t head = r.varint("a record");
            rec.exact = (head & 1) != 0;
            rec.mask = head >> 1;
            if ((rec.mask & ~all) != 0)
                Reader::fail("entity " + std::to_string(rec.remote.index) + ":" +
                             std::to_string(rec.remote.generation) +
                             ": a component index past the component table");
            rec.values = r.position();
            for (std::size_t k = 0; k < comps.size(); ++k) {
                if ((rec.mask >> k & 1) == 0 || comps[k].kind == wire::Kind::tag) continue;
                wire::check_value(r, *comps[k].info, comps[k].kind,
                                  wire::place(comps[k].info->name, rec.remote));
            }
            records.push_back(rec);
        }
        if (r.left() != 0)
            Reader::fail(std::to_string(r.left()) + " bytes after the last record");
        // Each entity once: a despawn and a record of one entity, or two records, are forged.
        seen.clear();
        seen.reserve(despawns.size() + records.size());
        for (const Entity e : despawns) seen.push_back(e.to_bits());
        for (const Record& rec : records) seen.push_back(rec.remote.to_bits());
        std::sort(seen.begin(), seen.end());
        if (const auto dup = std::adjacent_find(seen.begin(), seen.end()); dup != seen.end()) {
            const Entity e = Entity::from_bits(*dup);
            Reader::fail("entity " + std::to_string(e.index) + ":" +
                         std::to_string(e.generation) + " appears twice");
        }
    }

    // ---- applying: queued in the world's deferral, applied when it closes ----
    // Queues one add of the record's components (values read from the message) on `e`; a
    // spawned entity (`place`) gets Replica too, in the same move.
    void queue_values(Reader& r, const Record& rec, Entity e, bool place) {
        std::uint16_t n = 0;
        for (std::size_t k = 0; k < comps.size(); ++k) n += (rec.mask >> k & 1) != 0 ? 1 : 0;
        if (place) ++n;
        if (n == 0) return;
        tessera::detail::CommandQueue& q = s->deferred();
        q.reserve(std::size_t{n} + (place ? 1 : 0));
        s->reserve_watch(n);
        if (place) q.push_place(e, n);
        bool first = true;
        auto push = [&](const ComponentInfo& info, std::byte* v) {
            s->watch(e, info.id, q.mark());
            q.push_add(e, info, v, first ? n : 0);
            first = false;
        };
        r.seek(rec.values);
        for (std::size_t k = 0; k < comps.size(); ++k) {
            if ((rec.mask >> k & 1) == 0) continue;
            const Resolved& c = comps[k];
            s->ensure_component(c.info->id);
            std::byte* v = q.allocate_value(*c.info);
            if (c.kind == wire::Kind::raw) {
                wire::read_value(r, *c.info, c.kind, v);
            } else {
                c.info->construct_value(v);
                if (c.kind == wire::Kind::fields) {
                    try {
                        wire::read_value(r, *c.info, c.kind, v);
                    } catch (...) {
                        if (c.info->destroy != nullptr) c.info->destroy(v, 1);
                        throw;
                    }
                }
            }
            push(*c.info, v);
        }
        if (place) {
            const ComponentInfo& info = s->ensure_component(component_id<Replica>());
            std::byte* v = q.allocate_value(info);
            ::new (v) Replica{rec.remote};
            push(info, v);
        }
    }

    // Queues the removal of the message's components that `e` has and `rec` lacks.
    void queue_removals(const Record& rec, Entity e) {
        const tessera::detail::EntityRecord* er = s->try_record(e);
        if (er == nullptr) return;
        const tessera::detail::Archetype& a = s->archetype(er->archetype);
        std::vector<ComponentId> gone;
        for (std::size_t k = 0; k < comps.size(); ++k) {
            if ((rec.mask >> k & 1) == 0 && a.contains(comps[k].info->id))
                gone.push_back(comps[k].info->id);
        }
        if (gone.empty()) return;
        tessera::detail::CommandQueue& q = s->deferred();
        q.reserve(gone.size());
        s->reserve_watch(gone.size());
        for (std::size_t i = 0; i < gone.size(); ++i) {
            s->watch(e, gone[i], q.mark());
            q.push(Command::Kind::remove, e, gone[i],
                   static_cast<std::uint16_t>(i == 0 ? gone.size() : 0));
        }
    }

    void apply(Reader& r, bool full) {
        // Room for every new entity's mapping first: past the queueing nothing may fail.
        locals.reserve(locals.size() + records.size());
        std::vector<std::pair<std::uint64_t, Entity>> spawned;
        std::vector<std::uint64_t> forgotten;
        tessera::detail::DeferScope scope(*s);
        tessera::detail::QueueGuard guard(*s);
        if (full) {
            // The full state lists every entity the client may see: the others go.
            seen.clear();
            for (const Record& rec : records) seen.push_back(rec.remote.to_bits());
            std::sort(seen.begin(), seen.end());
            for (const auto& [remote, local] : locals) {
                if (std::binary_search(seen.begin(), seen.end(), remote)) continue;
                forgotten.push_back(remote);
                if (world->is_alive(local)) world->despawn(local);
            }
        }
        for (const Entity remote : despawns) {
            const Entity local = local_of(remote);
            forgotten.push_back(remote.to_bits());
            if (local) world->despawn(local);
        }
        spawned.reserve(records.size());
        for (const Record& rec : records) {
            Entity local = local_of(rec.remote);
            if (!local) {
                s->deferred().reserve(1);
                local = s->spawn_pending();
                spawned.emplace_back(rec.remote.to_bits(), local);
                queue_values(r, rec, local, true);
            } else {
                queue_values(r, rec, local, false);
                if (rec.exact) queue_removals(rec, local);
            }
        }
        guard.release();
        for (const std::uint64_t remote : forgotten) locals.erase(remote);
        for (const auto& [remote, local] : spawned) locals[remote] = local;
        scope.close();
    }
};

Mirror::Mirror(World& world) : impl_(std::make_unique<Impl>(world)) {}
Mirror::~Mirror() = default;
Mirror::Mirror(Mirror&&) noexcept = default;
Mirror& Mirror::operator=(Mirror&&) noexcept = default;

std::uint64_t Mirror::apply(std::span<const std::byte> message) {
    Impl& m = *impl_;
    Reader r(message);
    const std::byte* head = r.take(4, "the header");
    if (std::memcmp(head, wire::magic, 3) != 0)
        Reader::fail("not a tessera replication message (bad magic)");
    if (static_cast<std::uint8_t>(head[3]) != wire::version)
        Reader::fail("format version " + std::to_string(static_cast<unsigned>(head[3])) +
                     ", this program reads version " + std::to_string(wire::version));
    const std::uint64_t tick = r.u64("the header");
    const std::uint64_t base = r.u64("the header");
    if (tick == 0 || base >= tick)
        Reader::fail("tick " + std::to_string(tick) + " relative to " + std::to_string(base) +
                     ": the baseline must be earlier than the tick");
    m.check_components(r);
    m.check_records(r);
    if (tick <= m.applied) return m.applied;  // late or repeated: changes nothing
    if (base != 0 && base > m.applied)
        Reader::fail("a delta relative to tick " + std::to_string(base) +
                     ", which this mirror has not applied (it applied " +
                     std::to_string(m.applied) + "): the server must send a full state");
    m.apply(r, base == 0);
    m.applied = tick;
    return tick;
}

Entity Mirror::local(Entity remote) const noexcept {
    return impl_->local_of(remote);
}

Entity Mirror::remote(Entity local) const noexcept {
    const Replica* r = impl_->world->try_get<Replica>(local);
    return r != nullptr ? r->remote : Entity::null();
}

std::uint64_t Mirror::tick() const noexcept {
    return impl_->applied;
}

std::size_t Mirror::size() const noexcept {
    return impl_->locals.size();
}

}  // namespace tessera::net

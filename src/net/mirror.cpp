// The client side of replication (net/mirror.hpp): checks a message whole (wire.hpp), then
// queues its changes in the client world's deferral and applies them as one batch.
#include "wire.hpp"

#include <tessera/detail/operations.hpp>
#include <tessera/detail/storage.hpp>
#include <tessera/error.hpp>
#include <tessera/net/mirror.hpp>
#include <tessera/world.hpp>

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory_resource>
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
    // Set while applying: the local entity, and the components written in place.
    Entity local;
    std::uint64_t in_place;
};

constexpr std::uint64_t empty_slot = ~std::uint64_t{0};  // no entity has these bits (index)

// The in-place values of reflected types, decoded before anything changes (decoding a string
// allocates) and moved into their rows afterwards, which can't fail. Those not moved yet are
// destroyed with it.
struct Staging {
    struct Value {
        const ComponentInfo* info;
        std::byte* value;  // null once moved into its row
    };
    std::pmr::monotonic_buffer_resource memory;
    std::vector<Value> values;
    std::size_t next = 0;  // the next value to move into its row

    Staging() = default;
    Staging(const Staging&) = delete;
    Staging& operator=(const Staging&) = delete;
    ~Staging() {
        for (const Value& v : values) {
            if (v.value != nullptr && v.info->destroy != nullptr) v.info->destroy(v.value, 1);
        }
    }
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
    std::vector<std::uint64_t> seen;  // an open-addressing set of the message's entities
    std::uint32_t seen_shift = 64;

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
            // Bytes go only into trivially copyable values, fields only into constructible
            // ones: a message naming any other type of this program is refused.
            if (kind == static_cast<std::uint8_t>(wire::Kind::raw) && !info.trivially_copyable)
                Reader::fail(quoted + " is not trivially copyable here");
            if (kind == static_cast<std::uint8_t>(wire::Kind::fields) && !info.constructible())
                Reader::fail(quoted + " is not default constructible here");
            for (const Resolved& c : comps) {
                if (c.info == &info) Reader::fail(quoted + " is listed twice");
            }
            comps.push_back({&info, static_cast<wire::Kind>(kind)});
        }
    }

    void check_records(Reader& r) {
        const std::uint32_t nd = r.count(r.u32("the despawn count"), 2, "despawns");
        despawns.clear();
        despawns.reserve(nd);
        for (std::uint32_t i = 0; i < nd; ++i) despawns.push_back(r.entity("a despawn"));
        const std::uint32_t nr = r.count(r.u32("the record count"), 3, "records");
        records.clear();
        records.reserve(nr);
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
        if (r.left() != 0) Reader::fail(std::to_string(r.left()) + " bytes after the last record");
        // Each entity once: a despawn and a record of one entity, or two records, are forged.
        std::size_t slots = 16;
        while (slots < 2 * (despawns.size() + records.size())) slots *= 2;
        seen.assign(slots, empty_slot);
        seen_shift = static_cast<std::uint32_t>(64 - std::countr_zero(slots));
        auto insert = [&](Entity e) {
            const std::uint64_t bits = e.to_bits();
            for (std::size_t i = slot_of(bits);; i = (i + 1) & (seen.size() - 1)) {
                if (seen[i] == empty_slot) {
                    seen[i] = bits;
                    return;
                }
                if (seen[i] == bits)
                    Reader::fail("entity " + std::to_string(e.index) + ":" +
                                 std::to_string(e.generation) + " appears twice");
            }
        };
        for (const Entity e : despawns) insert(e);
        for (const Record& rec : records) insert(rec.remote);
    }
    [[nodiscard]] std::size_t slot_of(std::uint64_t bits) const noexcept {
        return static_cast<std::size_t>((bits * 0x9E3779B97F4A7C15ull) >> seen_shift);
    }
    /// Whether the message names `bits` (after check_records).
    [[nodiscard]] bool named(std::uint64_t bits) const noexcept {
        for (std::size_t i = slot_of(bits);; i = (i + 1) & (seen.size() - 1)) {
            if (seen[i] == bits) return true;
            if (seen[i] == empty_slot) return false;
        }
    }

    // ---- applying: queued in the world's deferral, applied when it closes ----
    // Whether component `k` of `rec` is written in place on `e` (it has it, no observer
    // watches it, no queued add or remove of it): no structural change, no queue.
    bool in_place(Entity e, const tessera::detail::Archetype& a, std::size_t k) {
        const ComponentId id = comps[k].info->id;
        return a.contains(id) && !s->hooked(id) &&
               (!s->writes_watched() || s->queued_change(e, id) == nullptr);
    }

    // Queues one add of the record's components that are not written in place (values read
    // from the message) on `rec.local`; with `place`, spawns it pending first (`rec.local`) with
    // its place command in the same step, so a throw leaves nothing a QueueGuard can't take
    // back, and it gets Replica too, in the same move.
    void queue_values(Reader& r, Record& rec, bool place) {
        std::uint64_t queued = rec.mask;
        rec.in_place = 0;
        if (!place) {
            const tessera::detail::Archetype& a = s->archetype(s->try_record(rec.local)->archetype);
            const Entity e = rec.local;
            for (std::size_t k = 0; k < comps.size(); ++k) {
                if ((rec.mask >> k & 1) != 0 && in_place(e, a, k))
                    rec.in_place |= std::uint64_t{1} << k;
            }
            queued &= ~rec.in_place;
        }
        const auto n = static_cast<std::uint16_t>(std::popcount(queued) + (place ? 1 : 0));
        if (n == 0) return;
        tessera::detail::CommandQueue& q = s->deferred();
        q.reserve(std::size_t{n} + (place ? 1 : 0));
        s->reserve_watch(n);
        if (place) {
            rec.local = s->spawn_pending();
            q.push_place(rec.local, n);
        }
        const Entity e = rec.local;
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
            if ((queued >> k & 1) == 0) {
                skip_value(r, c);
                continue;
            }
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

    static void skip_value(Reader& r, const Resolved& c) {
        if (c.kind == wire::Kind::raw)
            r.take(c.info->size, "a value");
        else if (c.kind == wire::Kind::fields)
            wire::check_fields(r, *c.info->schema, std::string());
    }

    // Decodes the record's in-place values of reflected types into `staged` (may throw:
    // nothing has changed yet). Precondition: room in `staged.values` for them.
    void stage_in_place(Reader& r, const Record& rec, Staging& staged) {
        r.seek(rec.values);
        for (std::size_t k = 0; k < comps.size(); ++k) {
            if ((rec.mask >> k & 1) == 0) continue;
            const Resolved& c = comps[k];
            if ((rec.in_place >> k & 1) == 0 || c.kind != wire::Kind::fields) {
                skip_value(r, c);
                continue;
            }
            auto* v =
                static_cast<std::byte*>(staged.memory.allocate(c.info->size, c.info->alignment));
            c.info->construct_value(v);
            staged.values.push_back({c.info, v});
            wire::read_value(r, *c.info, c.kind, v);
        }
    }

    // Writes the record's in-place components into `e`'s table (the reflected ones from
    // `staged`, in the order `stage_in_place` made them) and marks them changed. Can't fail.
    void write_in_place(Reader& r, const Record& rec, Staging& staged) noexcept {
        r.seek(rec.values);
        for (std::size_t k = 0; k < comps.size(); ++k) {
            if ((rec.mask >> k & 1) == 0) continue;
            const Resolved& c = comps[k];
            if ((rec.in_place >> k & 1) == 0 || c.kind == wire::Kind::tag) {
                skip_value(r, c);
                continue;
            }
            const tessera::detail::Location loc = s->try_location(rec.local, c.info->id);
            const tessera::detail::Column& col =
                loc.archetype->columns[static_cast<std::uint32_t>(loc.column)];
            std::byte* const at = col.data + std::size_t{loc.row} * col.size;
            if (c.kind == wire::Kind::raw) {
                wire::read_value(r, *c.info, c.kind, at);  // a memcpy of checked bytes
            } else {
                skip_value(r, c);
                Staging::Value& v = staged.values[staged.next++];
                if (c.info->destroy != nullptr) c.info->destroy(at, 1);
                c.info->relocate_values(at, v.value, 1);
                v.value = nullptr;
            }
            s->stamp_changed(*loc.archetype, loc.row, loc.column);
        }
    }

    // Queues the removal of the message's components that `e` has and `rec` lacks.
    void queue_removals(const Record& rec) {
        const Entity e = rec.local;
        const tessera::detail::EntityRecord* er = s->try_record(e);
        if (er == nullptr) return;
        const tessera::detail::Archetype& a = s->archetype(er->archetype);
        ComponentId gone[wire::max_components];
        std::size_t n = 0;
        for (std::size_t k = 0; k < comps.size(); ++k) {
            if ((rec.mask >> k & 1) == 0 && a.contains(comps[k].info->id))
                gone[n++] = comps[k].info->id;
        }
        if (n == 0) return;
        tessera::detail::CommandQueue& q = s->deferred();
        q.reserve(n);
        s->reserve_watch(n);
        for (std::size_t i = 0; i < n; ++i) {
            s->watch(e, gone[i], q.mark());
            q.push(Command::Kind::remove, e, gone[i], static_cast<std::uint16_t>(i == 0 ? n : 0));
        }
    }

    void apply(Reader& r, bool full) {
        // Everything that can fail comes first: the components recorded, room for every new
        // entity's mapping, then the queued changes (taken back on a throw).
        for (const Resolved& c : comps) s->ensure_component(c.info->id);
        s->ensure_component(component_id<Replica>());
        locals.reserve(locals.size() + records.size());
        std::vector<std::pair<std::uint64_t, Entity>> spawned;
        std::vector<std::uint64_t> forgotten;
        tessera::detail::DeferScope scope(*s);
        tessera::detail::QueueGuard guard(*s);
        if (full) {
            // The full state lists every entity the client may see: the others go.
            for (const auto& [remote, local] : locals) {
                if (named(remote)) continue;
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
        bool writes = false;
        for (Record& rec : records) {
            rec.local = local_of(rec.remote);
            if (!rec.local) {
                queue_values(r, rec, true);
                spawned.emplace_back(rec.remote.to_bits(), rec.local);
                rec.in_place = 0;
            } else {
                queue_values(r, rec, false);
                if (rec.exact) queue_removals(rec);
                writes = writes || rec.in_place != 0;
            }
        }
        // What can still fail comes before anything changes: the new mappings' nodes (the
        // splice into `locals` below allocates nothing, its buckets are reserved), the
        // decoded in-place values of reflected types, and the client world's room for the
        // whole batch (target tables, rows, sparse entries), so that its flush can't fail.
        std::unordered_map<std::uint64_t, Entity> fresh(spawned.begin(), spawned.end());
        Staging staged;
        if (writes) {
            std::size_t reflected = 0;
            for (const Record& rec : records) {
                for (std::size_t k = 0; k < comps.size(); ++k) {
                    if ((rec.in_place >> k & 1) != 0 && comps[k].kind == wire::Kind::fields)
                        ++reflected;
                }
            }
            staged.values.reserve(reflected);
            for (const Record& rec : records) {
                if (rec.in_place != 0) stage_in_place(r, rec, staged);
            }
        }
        tessera::detail::reserve_queued(*s);
        guard.release();
        for (const std::uint64_t remote : forgotten) locals.erase(remote);
        for (const auto& [remote, local] : spawned) locals.erase(remote);  // a dead local's
        locals.merge(fresh);
        if (writes) {
            for (const Record& rec : records) {
                if (rec.in_place != 0) write_in_place(r, rec, staged);
            }
        }
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

// A world's state beside its core: deferral, and the places where observers, relations and
// strings attach. Calls nothing of those modules: attachments bring their own functions.
#include <tessera/detail/storage.hpp>
#include <tessera/error.hpp>

#include <string>
#include <utility>

namespace tessera::detail {

Storage::Storage(std::pmr::memory_resource* mr)
    : Core(mr), deferred_(mr), queued_changes_(mr), spawned_(mr) {}

Storage::~Storage() {
    relations_.reset(resource());
    strings_.reset(resource());
    names_.reset(resource());
}

void QueuedChanges::reserve(std::size_t n) {
    if ((used_ + n) * 2 <= buckets_.size()) return;
    std::size_t cap = buckets_.empty() ? 16 : buckets_.size();
    while ((used_ + n) * 2 > cap) cap *= 2;
    std::pmr::vector<Bucket> grown(cap, Bucket{}, buckets_.get_allocator());
    for (const Bucket& s : buckets_) {
        if (s.position != npos) grown[probe(grown, s.entity, s.id)] = s;
    }
    buckets_.swap(grown);
}

void QueuedChanges::note(Entity e, ComponentId id, std::size_t position) noexcept {
    Bucket& s = buckets_[probe(buckets_, e.to_bits(), id.value)];
    if (s.position == npos) ++used_;
    s = Bucket{e.to_bits(), id.value, position};
}

std::size_t QueuedChanges::find(Entity e, ComponentId id) const noexcept {
    if (buckets_.empty()) return npos;
    return buckets_[probe(buckets_, e.to_bits(), id.value)].position;
}

void QueuedChanges::forget(Entity e, ComponentId id) noexcept {
    if (buckets_.empty()) return;
    Bucket& s = buckets_[probe(buckets_, e.to_bits(), id.value)];
    if (s.position != npos) s.position = gone;
}

void QueuedChanges::clear() noexcept {
    if (used_ == 0) return;
    for (Bucket& s : buckets_) s = Bucket{};
    used_ = 0;
}

std::size_t QueuedChanges::probe(const std::pmr::vector<Bucket>& buckets, std::uint64_t entity,
                                 std::uint32_t id) noexcept {
    const std::size_t mask = buckets.size() - 1;
    const std::uint64_t h = (entity ^ (std::uint64_t{id} << 40 | id)) * 0x9E3779B97F4A7C15ull;
    std::size_t i = static_cast<std::size_t>(h ^ (h >> 29)) & mask;
    while (buckets[i].position != npos && (buckets[i].entity != entity || buckets[i].id != id))
        i = (i + 1) & mask;
    return i;
}

const Command* Storage::queued_change(Entity e, ComponentId id) noexcept {
    const auto is_change = [e, id](const Command& c) {
        // A relate replaces the relation's data (its id), an unrelate may remove it.
        return c.kind != Command::Kind::place && c.kind != Command::Kind::despawn &&
               c.entity == e && c.id == id;
    };
    if (deferred_.empty()) {
        if (!parallel()) queued_changes_.clear();  // workers only read
        return nullptr;
    }
    const std::size_t at = queued_changes_.find(e, id);
    if (at == QueuedChanges::npos || at == QueuedChanges::gone) return nullptr;
    const std::size_t end = deferred_.mark();
    const std::size_t first = end - deferred_.size();
    // Applied: so is every earlier add or remove of the pair.
    if (at < first) return nullptr;
    if (at < end && is_change(deferred_.since(at)[0])) return &deferred_.since(at)[0];
    // A failed call took back the command noted last: an earlier one may still be queued.
    const std::span<const Command> pending = deferred_.pending();
    for (std::size_t i = pending.size(); i-- > 0;) {
        if (is_change(pending[i])) return &pending[i];
    }
    if (!parallel()) queued_changes_.forget(e, id);
    return nullptr;
}

bool Storage::despawn_pending(Entity e) const noexcept {
    for (const Command& c : deferred_.pending()) {
        if (c.kind == Command::Kind::despawn && c.entity == e) return true;
    }
    return false;
}

void Storage::set_subscriptions(bool any, bool all, std::span<const std::uint8_t> by_id) noexcept {
    subscribed_any_ = any;
    set_hooks(any || relations_.object != nullptr, all, by_id);
}

void Storage::attach_relations(Attachment a) noexcept {
    TESSERA_ASSERT(relations_.object == nullptr, "attach_relations: relations already attached");
    relations_ = a;
    refresh_hooked();
}

void Storage::throw_relation_component(ComponentId id, const char* op) {
    const std::string name(component_info(id).name);
    throw Error(errc::invalid_argument,
                std::string(op) + '<' + name + ">: " + name +
                    (relation_only(id) ? " belongs to a relation"
                                       : " belongs to a relation in this world") +
                    ", which only relate/unrelate add and remove");
}

void Storage::copy_from(const Storage& src, const char* op) {
    Core::copy_from(src, op);
    name_hooks_ = src.name_hooks_;
    for (auto [from, to] : {std::pair{&src.relations_, &relations_},
                            {&src.strings_, &strings_},
                            {&src.names_, &names_}}) {
        if (from->object == nullptr) continue;
        Attachment copy = *from;
        copy.object = from->copy(from->object, *this);
        *to = copy;
    }
    refresh_hooked();
}

void Storage::swap_state(Storage& other) noexcept {
    Core::swap_state(other);
    std::swap(relations_, other.relations_);
    std::swap(strings_, other.strings_);
    std::swap(names_, other.names_);
    std::swap(name_hooks_, other.name_hooks_);
    refresh_hooked();
    other.refresh_hooked();
}

}  // namespace tessera::detail

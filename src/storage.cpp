// A world's state beside its core: deferral, and the slots where observers, relations and
// strings attach. Calls nothing of those modules: attachments bring their own functions.
#include <tessera/detail/storage.hpp>
#include <tessera/error.hpp>

#include <string>
#include <utility>

namespace tessera::detail {

Storage::Storage(std::pmr::memory_resource* mr) : Core(mr), deferred_(mr), spawned_(mr) {}

Storage::~Storage() {
    relations_.reset(resource());
    strings_.reset(resource());
}

bool Storage::despawn_pending(Entity e) const noexcept {
    for (const Command& c : deferred_.pending()) {
        if (c.kind == Command::Kind::despawn && c.entity == e) return true;
    }
    return false;
}

void Storage::set_observation(bool any, bool all, std::span<const std::uint8_t> by_id) noexcept {
    observers_any_ = any;
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
    for (auto [from, to] : {std::pair{&src.relations_, &relations_}, {&src.strings_, &strings_}}) {
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
    refresh_hooked();
    other.refresh_hooked();
}

}  // namespace tessera::detail

// World::clone, World::snapshot, World::restore: whole-world copies through
// Storage::copy_from, and the swap that puts a copy in place (serialize.hpp).
#include <tessera/detail/storage.hpp>
#include <tessera/error.hpp>
#include <tessera/serialize.hpp>
#include <tessera/world.hpp>

#include <algorithm>
#include <string>
#include <utility>

namespace tessera {

namespace detail {

void check_quiet(const Storage& s, const char* op) {
    if (s.deferring()) {
        throw Error(errc::invalid_argument, std::string(op) +
                                                ": the world is iterating; call it outside loops, "
                                                "observers and parallel systems");
    }
}

/// Puts `built` (a complete world state made with `target`'s memory resource) in place of
/// `target`'s state, keeping what the world has beyond its state: observers, resources, the
/// components it knows (tracked ones stay tracked, so live change filters keep their ticks),
/// and a tick that never goes back. `built` ends up holding the old state. Strong guarantee:
/// everything that can fail happens before the swap.
void replace_state(Storage& target, Storage& built) {
    target.for_each_component([&](ComponentId id) {
        built.ensure_component(id);
        if (target.tracked(id)) built.track(id);
    });
    const std::uint64_t tick = std::max(target.tick(), built.tick());
    target.swap_state(built);
    target.set_tick(tick);
    refresh_subscriptions(target);
}

}  // namespace detail

Snapshot::Snapshot(Snapshot&& other) noexcept : storage_(std::exchange(other.storage_, nullptr)) {}

Snapshot& Snapshot::operator=(Snapshot&& other) noexcept {
    if (this != &other) {
        detail::delete_storage(storage_);
        storage_ = std::exchange(other.storage_, nullptr);
    }
    return *this;
}

Snapshot::~Snapshot() {
    detail::delete_storage(storage_);
}

std::size_t Snapshot::count() const noexcept {
    return storage_ == nullptr ? 0 : storage_->count();
}

std::uint64_t Snapshot::tick() const noexcept {
    return storage_ == nullptr ? 0 : storage_->tick();
}

World World::clone() const {
    detail::check_quiet(*storage_, "World::clone");
    World copy(memory_resource());
    copy.storage_->copy_from(*storage_, "World::clone");
    return copy;
}

Snapshot World::snapshot() const {
    detail::check_quiet(*storage_, "World::snapshot");
    detail::StorageGuard copy{detail::new_storage(memory_resource())};
    copy.s->copy_from(*storage_, "World::snapshot");
    return Snapshot(copy.release());
}

void World::restore(const Snapshot& snapshot) {
    if (snapshot.empty())
        throw Error(errc::invalid_argument, "World::restore: the snapshot is empty");
    detail::check_quiet(*storage_, "World::restore");
    detail::StorageGuard built{detail::new_storage(memory_resource())};
    built.s->copy_from(*snapshot.storage_, "World::restore");
    detail::replace_state(*storage_, *built.s);
}

}  // namespace tessera

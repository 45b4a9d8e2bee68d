// spawn_many's way back: when its init changed the world, a copy of the state from before the
// commit, put back if applying those changes fails (detail/world_impl.hpp, spawn_many_now).
#include <tessera/detail/observe.hpp>
#include <tessera/detail/storage.hpp>
#include <tessera/error.hpp>
#include <tessera/world.hpp>

namespace tessera::detail {

SpawnRollback::~SpawnRollback() {
    delete_storage(copy_);
    if (pending_ != nullptr) {
        pending_->~vector();
        resource_->deallocate(pending_, sizeof(std::pmr::vector<Entity>),
                              alignof(std::pmr::vector<Entity>));
    }
}

bool SpawnRollback::save(Storage& s, std::size_t queue_mark, Storage::IndexMark index_mark) {
    const CommandQueue& q = s.deferred();
    const std::span<const Command> queued = q.since(queue_mark);
    if (q.pending().size() != queued.size()) return false;  // commands from before the call
    resource_ = s.resource();
    void* mem =
        resource_->allocate(sizeof(std::pmr::vector<Entity>), alignof(std::pmr::vector<Entity>));
    pending_ = ::new (mem) std::pmr::vector<Entity>(resource_);
    for (const Command& c : queued) {
        if (c.kind == Command::Kind::place) pending_->push_back(c.entity);
    }
    StorageGuard copy{new_storage(resource_)};
    try {
        copy.s->copy_from(s, "World::spawn_many");
    } catch (const Error&) {
        return false;  // a component without copy constructor (checked before copying anything)
    }
    copy_ = copy.release();
    index_mark_ = index_mark;
    return true;
}

void SpawnRollback::restore(Storage& s) noexcept {
    // Every queued command is this call's (save checked): what the failure left goes.
    s.deferred().clear();
    s.swap_state(*copy_);  // the copy now holds the failed state, freed with it
    refresh_observation(s);
    // The state put back has init's spawns pending, as they were made: their indices go back.
    s.release_pending(index_mark_, *pending_);
}

}  // namespace tessera::detail

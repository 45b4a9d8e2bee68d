// spawn_many's way back when its init changed the world (detail/spawn_many.hpp): the call's
// rows and entity ids taken back when init only spawned, else a copy of the state from before
// the commit.
#include <tessera/detail/operations.hpp>
#include <tessera/detail/storage.hpp>
#include <tessera/error.hpp>
#include <tessera/world.hpp>

namespace tessera::detail {

namespace {
/// Whether `queued` holds spawns only: each place followed by the adds of its components.
bool spawns_only(std::span<const Command> queued) noexcept {
    for (std::size_t i = 0; i < queued.size(); i += std::size_t{queued[i].group} + 1) {
        if (queued[i].kind != Command::Kind::place) return false;
    }
    return true;
}
}  // namespace

SpawnRollback::~SpawnRollback() {
    delete_storage(copy_);
    if (taken_ != nullptr) {
        taken_->~vector();
        resource_->deallocate(taken_, sizeof(std::pmr::vector<Entity>),
                              alignof(std::pmr::vector<Entity>));
    }
}

void SpawnRollback::save(Storage& s, std::size_t queue_mark, Storage::IndexMark index_mark,
                         std::size_t n) {
    const std::span<const Command> queued = s.deferred().since(queue_mark);
    TESSERA_ASSERT(s.deferred().pending().size() == queued.size(),
                   "SpawnRollback::save: commands from before the call are queued");
    resource_ = s.resource();
    index_mark_ = index_mark;
    void* mem =
        resource_->allocate(sizeof(std::pmr::vector<Entity>), alignof(std::pmr::vector<Entity>));
    taken_ = ::new (mem) std::pmr::vector<Entity>(resource_);
    taken_->reserve(queued.size() + n);
    for (const Command& c : queued) {
        if (c.kind == Command::Kind::place) taken_->push_back(c.entity);
    }
    init_spawns_ = taken_->size();
    const bool spawns = spawns_only(queued);
    // Spawns alone are taken back row by row. A copy undoes anything: needed when init did
    // more, or when observers may queue other changes while the spawns apply, if it can be made.
    if (spawns && !s.hooked()) {
        truncate_ = true;
        return;
    }
    StorageGuard copy{new_storage(resource_)};
    try {
        copy.s->copy_from(s, "World::spawn_many");
    } catch (const Error&) {
        // A component without copy constructor (checked before copying anything). Without a
        // copy, init's changes other than spawns can't be undone: a failure then keeps them.
        truncate_ = spawns;
        return;
    }
    copy_ = copy.release();
}

void SpawnRollback::committed(std::span<const Entity> own) noexcept {
    if (taken_ == nullptr) return;
    taken_->insert(taken_->end(), own.begin(), own.end());  // room reserved
    own_ = own.size();
}

void SpawnRollback::apply(Storage& s) {
    if (!s.leave_defer()) return;
    if (copy_ != nullptr) {
        try {
            flush(s);
        } catch (...) {
            restore(s);
            throw;
        }
        return;
    }
    // Truncation: only spawns may apply, in queue order, each noted before it applies (its
    // observers may spawn more). Anything else (queued by an observer) ends the guarantee: the
    // rest applies as a plain flush, whose failure keeps what applied.
    CommandQueue& q = s.deferred();
    try {
        s.begin_defer();
        struct Leave {
            Storage& s;
            ~Leave() { (void)s.leave_defer(); }
        } leave{s};
        while (Command* c = q.front()) {
            if (c->kind != Command::Kind::place) break;
            if (places_seen_ >= init_spawns_) taken_->push_back(c->entity);
            ++places_seen_;
            apply_front(s, q, c->entity, c->target);
        }
    } catch (...) {
        restore(s);
        throw;
    }
    if (!q.empty()) flush(s);
}

void SpawnRollback::restore(Storage& s) noexcept {
    CommandQueue& q = s.deferred();
    const std::span<const Entity> init(taken_->data(), init_spawns_);
    if (copy_ != nullptr) {
        q.clear();             // every queued command is this call's
        s.swap_state(*copy_);  // the copy now holds the failed state, freed with it
        refresh_subscriptions(s);
        // The state put back has init's spawns pending, as they were made: their ids go back.
        s.release_pending(index_mark_, init);
        return;
    }
    // The spawns still queued are the last the queue showed (`places_seen_`): the failing one,
    // not applied, may be the one shown last; those after it were never noted, and their ids
    // are the newest, given back first.
    const auto shown = [this](std::size_t k) { return (*taken_)[k < init_spawns_ ? k : k + own_]; };
    const std::span<const Command> pending = q.pending();
    std::size_t places = 0;
    for (const Command& c : pending) places += c.kind == Command::Kind::place ? 1 : 0;
    std::size_t first = places_seen_;  // the queue index of the first place still queued
    for (const Command& c : pending) {
        if (c.kind != Command::Kind::place) continue;
        if (places_seen_ > 0 && c.entity == shown(places_seen_ - 1)) first = places_seen_ - 1;
        break;
    }
    std::size_t k = first + places;
    for (auto c = pending.rbegin(); c != pending.rend(); ++c) {
        if (c->kind != Command::Kind::place) continue;
        --k;
        if (k >= places_seen_ && k >= init_spawns_) s.release_pending(index_mark_, {&c->entity, 1});
    }
    q.clear();
    s.take_back_spawned(index_mark_, *taken_);
}

}  // namespace tessera::detail

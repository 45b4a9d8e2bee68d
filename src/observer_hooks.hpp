// The observers' hooks (detail/hooks.hpp): every change in its observed form. The relations'
// hooks (relation.cpp) extend them with despawns that follow relations and the queued relation
// commands. Private to src/.
#pragma once

#include <tessera/detail/notify.hpp>
#include <tessera/detail/operations.hpp>
#include <tessera/detail/storage.hpp>

namespace tessera::detail {

class ObserverHooks : public Hooks {
public:
    void spawned(Storage& s, Entity e) const override { notify_spawned(s, e); }
    void added(Storage& s, Entity e, std::uint32_t from, std::span<const ComponentId> ids,
               const bool* existed) const override {
        notify_added(s, e, from, ids, existed);
    }
    void set(Storage& s, Entity e, ComponentId id) const override { notify_set(s, e, id); }
    bool remove(Storage& s, Entity e, std::span<const ComponentId> ids, const char* op,
                Commit commit) const override {
        return remove_notifying(s, e, ids, op, commit);
    }
    std::size_t despawn_many(Storage& s, std::span<const Entity> es, Commit commit) const override {
        return despawn_notifying(s, es, commit);
    }
    bool despawn(Storage& s, Entity e) const override {
        const EntityRecord* r = s.try_record(e);
        // A sparse component's observers count too (its set, not the table, holds it).
        return r != nullptr && (s.hooked(*r) || sparse_hooked(s, e)) ? despawn_notifying(s, e)
                                                                     : s.despawn(e);
    }
    bool apply(Storage&, const Command&, Entity, Entity, Commit) const override {
        TESSERA_ASSERT(false, "ObserverHooks::apply: a relation command without relations");
        return false;
    }
};

}  // namespace tessera::detail

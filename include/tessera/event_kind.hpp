/// @file event_kind.hpp
/// The kinds of change an observer observes (`Event`) and what a relation event carries: the
/// vocabulary shared by observers (observer.hpp) and relations (relation.hpp), below both.
#pragma once

#include <tessera/entity.hpp>

#include <cstdint>

namespace tessera {

/// What an observer observes.
enum class Event : std::uint8_t {
    add,       ///< a component was added (spawn included)
    remove,    ///< a component is about to be removed (despawn included)
    set,       ///< a component's value was written (set, add of a present one, modified)
    spawn,     ///< an entity was spawned
    despawn,   ///< an entity is about to be despawned
    enter,     ///< an entity started matching a query
    exit,      ///< an entity stopped matching a query
    relate,    ///< a relation gained a target (relation.hpp)
    unrelate,  ///< a relation is about to lose a target (relation.hpp)
};

namespace detail {

/// What a relation observer's callback receives through its value pointer.
struct RelationEvent {
    Entity target;
    void* data;  ///< the source's R (null for tags)
};

}  // namespace detail

}  // namespace tessera

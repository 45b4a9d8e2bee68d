/// @file prefab.hpp
/// Prefabs: template entities that instances copy. `world.prefab(cs...)` spawns one (tagged
/// `ts::Prefab`, so queries skip it unless they name `Prefab`), `world.instantiate(prefab,
/// overrides...)` and `world.instantiate_many(prefab, n)` copy it, `world.prefab_of(e)` tells
/// which prefab an instance came from.
///
/// **Hierarchies.** A prefab's `ChildOf` children are prefabs: relating an entity that is not
/// a prefab as a `ChildOf` child of a prefab is refused (`invalid_argument`); spawn the child
/// with `prefab(...)`. Instantiating a prefab instantiates each of its child prefabs as a
/// `ChildOf` child of the instance, recursively, breadth first.
///
/// **What an instance gets.** Copies of the prefab's components (through each component's copy
/// constructor, runtime components too), except `Prefab` and the prefab's relations (its own
/// `ChildOf` parents included: an instance of a child prefab gets the parent instance instead);
/// the `overrides` of `instantiate` replace copied values or add components; a relation
/// `IsA` to the prefab (`prefab_of`). Each entity is built in its final table in one archetype
/// move: no intermediate archetype. The instances' values are copies: changing the prefab
/// later changes no instance.
///
/// **Guarantees.** All or nothing, `std::bad_alloc` included: every table row, entity slot and
/// relation list the whole tree needs is reserved and every value copied before any entity
/// exists. Observers see each instance (children included) as a spawn of its components
/// (`on_spawn`, `on_add`, query `on_enter`), once the whole tree is in place; `on_relate` does
/// not fire for the `IsA` and `ChildOf` an instance is born with. While the world defers (a
/// query loop, an observer), the instances are alive at once and get their components, `IsA`
/// and children when the queue applies, as `spawn` and `relate` do.
///
/// **World state.** Prefabs are entities: clones, snapshots (binary and JSON) and `state_hash`
/// include them and their `IsA` relations.
///
/// **Cost.** A call without overrides reuses the plan of the prefab tree (tables, copied
/// columns, child prefabs) that an earlier call made, checked against the tree each time and
/// made again when the tree changed (docs/authoring.md).
#pragma once

#include <tessera/prefab_tags.hpp>
#include <tessera/relation.hpp>
#include <tessera/world.hpp>

#include <array>
#include <cstddef>
#include <new>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tessera {

namespace detail {

/// Instantiates `prefab` `n` times with its child prefabs (src/prefab.cpp). `ids` and `values`
/// (`n` == 1 only, at most 64) are the overrides, which the call owns: each value is relocated
/// into the instance once nothing can fail, or destroyed when the call throws. Returns the `n`
/// instances (a view of scratch storage, as `spawn_many`'s).
std::span<const Entity> instantiate(Storage& s, Entity prefab, std::size_t n,
                                    std::span<const ComponentId> ids, std::byte* const* values);
/// `prefab_of`'s body: the first `IsA` target of `e`, or null.
Entity prefab_of(const Storage& s, Entity e) noexcept;

}  // namespace detail

template <class... Ts>
Entity World::prefab(Ts&&... components) {
    static_assert((!std::is_same_v<std::remove_cvref_t<Ts>, Prefab> && ...),
                  "tessera: prefab(...) adds ts::Prefab itself; leave it out");
    return spawn(std::forward<Ts>(components)..., Prefab{});
}

namespace detail {

/// The overrides of one `instantiate` call, constructed in raw storage and handed to the
/// untyped call (`consumed`), which moves them in or destroys them; destroyed here only when
/// a constructor throws before that.
template <class... Us>
class Overrides {
public:
    template <class... Args>
    explicit Overrides(Args&&... args) {
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            // In order; a constructor that throws leaves `made_` values for the destructor.
            ((::new (static_cast<void*>(std::get<I>(slots_).bytes)) Us(std::forward<Args>(args)),
              ++made_),
             ...);
        }
        (std::index_sequence_for<Us...>{});
    }
    Overrides(const Overrides&) = delete;
    Overrides& operator=(const Overrides&) = delete;
    ~Overrides() {
        if (consumed_) return;
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            ((I < made_ ? std::launder(reinterpret_cast<Us*>(std::get<I>(slots_).bytes))->~Us()
                        : void()),
             ...);
        }
        (std::index_sequence_for<Us...>{});
    }
    [[nodiscard]] std::array<std::byte*, sizeof...(Us)> pointers() noexcept {
        return [&]<std::size_t... I>(std::index_sequence<I...>) {
            return std::array<std::byte*, sizeof...(Us)>{std::get<I>(slots_).bytes...};
        }
        (std::index_sequence_for<Us...>{});
    }
    void consumed() noexcept { consumed_ = true; }

private:
    template <class U>
    struct Slot {
        alignas(U) std::byte bytes[sizeof(U)];
    };
    std::tuple<Slot<Us>...> slots_;
    std::size_t made_ = 0;
    bool consumed_ = false;
};

}  // namespace detail

template <class... Ts>
Entity World::instantiate(Entity prefab, Ts&&... overrides) {
    static_assert(detail::unique_types_v<std::remove_cvref_t<Ts>...>,
                  "tessera: instantiate names the same override type twice");
    if constexpr (sizeof...(Ts) == 0) {
        return detail::instantiate(*storage_, prefab, 1, {}, nullptr).front();
    } else {
        static_assert((!std::is_same_v<std::remove_cvref_t<Ts>, Prefab> && ...),
                      "tessera: an instance can't be given ts::Prefab");
        static_assert(sizeof...(Ts) <= 64, "tessera: instantiate takes at most 64 overrides");
        const std::array<ComponentId, sizeof...(Ts)> ids{
            component_id<std::remove_cvref_t<Ts>>()...};
        detail::Overrides<std::remove_cvref_t<Ts>...> values(std::forward<Ts>(overrides)...);
        const std::array<std::byte*, sizeof...(Ts)> ptrs = values.pointers();
        values.consumed();  // the call owns them now: it moves them in or destroys them
        return detail::instantiate(*storage_, prefab, 1, ids, ptrs.data()).front();
    }
}

inline std::span<const Entity> World::instantiate_many(Entity prefab, std::size_t n) {
    return detail::instantiate(*storage_, prefab, n, {}, nullptr);
}

inline Entity World::prefab_of(Entity e) const noexcept {
    return detail::prefab_of(*storage_, e);
}

}  // namespace tessera

/// @file resource.hpp
/// Resources: one value per type, owned by the world (time, input, configuration, ...).
#pragma once

#include <tessera/component.hpp>
#include <tessera/error.hpp>
#include <tessera/world.hpp>

#include <memory_resource>
#include <new>
#include <string>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

namespace tessera {

namespace detail {

/// The world's resources: one heap box per type, never moved once made (so any movable type
/// works, whatever its move constructor may throw). Keyed by `std::type_index`: a lookup
/// hashes once per call, which is fine for per-frame access but not per entity.
///
/// Resources with a per-frame update (event queues: `resource_update<T>::fn` not null) are also
/// listed, in creation order, for `update_events`; replacing or erasing such a resource drops
/// its entry, so the list never points at a destroyed value.
///
/// The map itself (an unordered_map) lives in src/resource.cpp, so this header needs no
/// <unordered_map>; it is made by the first `put`.
class ResourceMap {
public:
    explicit ResourceMap(std::pmr::memory_resource* mr) noexcept : mr_(mr), updaters_(mr) {}
    ~ResourceMap();
    ResourceMap(const ResourceMap&) = delete;
    ResourceMap& operator=(const ResourceMap&) = delete;

    using UpdateFn = void (*)(void* value) noexcept;
    struct Box {
        void* value;
        void (*destroy)(void* value, std::pmr::memory_resource* mr) noexcept;
        UpdateFn update = nullptr;  ///< called by update_events; null for most resources
    };
    [[nodiscard]] void* find(std::type_index type) const noexcept;
    /// Puts `box` under `type`, destroying a previous value; `box` is destroyed if this throws
    /// (then the map is unchanged). A box with `update` goes last in the update list.
    void put(std::type_index type, Box box);
    bool erase(std::type_index type) noexcept;
    /// Calls every box's `update`, in the order the boxes were put. Allocates nothing.
    void update_events() noexcept;
    [[nodiscard]] std::pmr::memory_resource* resource() const noexcept { return mr_; }

private:
    struct Updater {
        std::type_index type;
        void* value;
        UpdateFn update;
    };
    struct Boxes;  ///< the type -> box map (src/resource.cpp)
    void drop_updater(std::type_index type) noexcept;

    std::pmr::memory_resource* mr_;
    Boxes* boxes_ = nullptr;              ///< from mr_, made by the first put
    std::pmr::vector<Updater> updaters_;  ///< creation order; allocated on the first queue
};

/// The per-frame update `World::update_events` calls on a resource of type `T`: null for
/// ordinary resources; events.hpp specialises it for `Events<T>`.
template <class T>
struct resource_update {
    static constexpr ResourceMap::UpdateFn fn = nullptr;
};

template <class T>
void destroy_box(void* value, std::pmr::memory_resource* mr) noexcept {
    static_cast<T*>(value)->~T();
    mr->deallocate(value, sizeof(T), alignof(T));
}

/// Constructs a `U` from `args` in memory from `map`'s resource and puts it in `map`, replacing
/// (and destroying) a previous `U`. Strong guarantee.
template <class U, class... Args>
U& emplace_resource(ResourceMap& map, Args&&... args) {
    std::pmr::memory_resource* mr = map.resource();
    void* mem = mr->allocate(sizeof(U), alignof(U));
    U* made = nullptr;
    try {
        made = ::new (mem) U(std::forward<Args>(args)...);
    } catch (...) {
        mr->deallocate(mem, sizeof(U), alignof(U));
        throw;
    }
    map.put(std::type_index(typeid(U)), {made, &destroy_box<U>, resource_update<U>::fn});
    return *made;
}

[[noreturn]] void throw_missing_resource(std::string_view type);

}  // namespace detail

template <class T>
std::remove_cvref_t<T>& World::insert_resource(T&& value) {
    using U = std::remove_cvref_t<T>;
    static_assert(std::is_move_constructible_v<U> || std::is_copy_constructible_v<U>,
                  "tessera: a resource must be movable or copyable");
    detail::check_not_parallel(storage(), "World::insert_resource");
    return detail::emplace_resource<U>(resources(), std::forward<T>(value));
}

template <class T>
T& World::resource() {
    if (T* p = try_resource<T>()) return *p;
    detail::throw_missing_resource(detail::raw_type_name<T>());
}

template <class T>
const T& World::resource() const {
    if (const T* p = try_resource<T>()) return *p;
    detail::throw_missing_resource(detail::raw_type_name<T>());
}

template <class T0, class T1, class... Ts>
std::tuple<T0&, T1&, Ts&...> World::resource() {
    return {resource<T0>(), resource<T1>(), resource<Ts>()...};
}

template <class T0, class T1, class... Ts>
std::tuple<const T0&, const T1&, const Ts&...> World::resource() const {
    return {resource<T0>(), resource<T1>(), resource<Ts>()...};
}

template <class T>
T* World::try_resource() noexcept {
    detail::ResourceMap* map = resource_map();
    return map == nullptr ? nullptr : static_cast<T*>(map->find(std::type_index(typeid(T))));
}

template <class T>
const T* World::try_resource() const noexcept {
    const detail::ResourceMap* map = resource_map();
    return map == nullptr ? nullptr : static_cast<const T*>(map->find(std::type_index(typeid(T))));
}

template <class T>
bool World::remove_resource() {
    detail::check_not_parallel(storage(), "World::remove_resource");
    detail::ResourceMap* map = resource_map();
    return map != nullptr && map->erase(std::type_index(typeid(T)));
}

template <class T>
bool World::has_resource() const noexcept {
    return try_resource<T>() != nullptr;
}

}  // namespace tessera

/// @file component.hpp
/// Component ids, per-type hooks (`ComponentInfo`) and per-type options (`component_traits`).
#pragma once

#include <compare>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>

namespace tessera {

/// A component's id: process-wide, shared by every world, and a distinct type (never an
/// integer) so that `add(e, id)` can't be mistaken for adding an integer component.
struct ComponentId {
    std::uint32_t value = 0xFFFFFFFFu;  ///< dense index, assigned in order of registration

    /// Whether this names a component (the default-constructed id does not).
    [[nodiscard]] constexpr bool valid() const noexcept { return value != 0xFFFFFFFFu; }
    /// Ids compare by `value`. (`==` is spelled out: nvcc's front end warns that a defaulted
    /// one is "used but never defined".)
    friend constexpr bool operator==(ComponentId a, ComponentId b) noexcept {
        return a.value == b.value;
    }
    friend constexpr auto operator<=>(ComponentId, ComponentId) noexcept = default;
};

/// A list of types, for `component_traits<T>::required`.
template <class... Ts>
struct type_list {};

/// Per-type options, read by detection; specialise it for your type and set any subset:
/// @code
/// template <> struct tessera::component_traits<Ai> {
///     static constexpr bool enableable = true;      // per-entity on/off flag (default false)
///     static constexpr bool track_changes = false;  // never track change ticks (default true)
///     static constexpr bool eager_tracking = true;  // ticks from the first row on (default
///                                                   // false: from the first read of them)
///     static constexpr ts::storage_kind storage = ts::storage_kind::sparse;  // default table
///     using required = tessera::type_list<Position, Velocity>;  // added with Ai when missing
/// };
/// @endcode
/// `required` (transitively: what they require comes too) names components that every add of
/// `T` brings along, value-initialised, in the same archetype move, when the entity lacks them;
/// one it has already is kept as it is. They must be default constructible and not relations;
/// a cycle is a compile error. Removing one later is allowed (it is not re-added).
template <class T>
struct component_traits {};

/// Where a world keeps a component's values (`component_traits<T>::storage`).
enum class storage_kind : std::uint8_t {
    /// In the archetype tables (the default): a column per table, rows packed, adding or
    /// removing the component moves the entity's row to another table.
    table,
    /// In a paged sparse set per world, outside the tables (detail/sparse_set.hpp): adding or
    /// removing it moves no row and makes no archetype; queries naming it are slower per entity.
    sparse,
};

struct Schema;
namespace detail {
struct RelationType;
}

/// Field metadata of `T`, specialised by `TESSERA_REFLECT(T, fields...)` (reflect.hpp) with a
/// `static const Schema& schema()`. Unspecialised: `T` is not reflected.
template <class T>
struct reflect {};

/// What the untyped core knows about a component: layout, lifetime hooks, name and options.
/// Records are owned by the process-wide registry and never move or die.
struct ComponentInfo {
    ComponentId id;               ///< the component's id
    std::string_view name;        ///< type name as the compiler spells it, or the runtime name
    std::uint32_t size = 0;       ///< bytes per value; 0 for tags (empty types)
    std::uint32_t alignment = 1;  ///< alignment of a value
    bool trivially_relocatable = false;  ///< moved with memcpy, never destroyed
    bool enableable = false;             ///< component_traits<T>::enableable
    bool track_changes = true;           ///< component_traits<T>::track_changes
    /// component_traits<T>::eager_tracking: a world tracks the type's ticks from the moment it
    /// first sees it, not from the first read of them.
    bool eager_tracking = false;
    /// Copied with memcpy (trivially copyable and copy constructible; runtime components).
    bool trivially_copyable = false;
    /// A value-initialised value is all zero bytes and `construct` is null (runtime components).
    bool zero_init = false;
    /// component_traits<T>::storage is storage_kind::sparse: worlds keep the values in a sparse
    /// set, never in an archetype table.
    bool sparse = false;
    /// Only a layer above the core adds and removes it, in every world: `ChildOf` and every
    /// relation's `Targets<R>` (plain add, remove and spawn refuse it).
    bool reserved = false;
    /// The fields (reflected C++ structs and runtime components); null when unknown.
    const Schema* schema = nullptr;
    /// For a relation's `Targets<R>`: the relation's description (relation.hpp).
    const detail::RelationType& (*relation)() = nullptr;
    /// Move-constructs `n` values from `src` into uninitialised `dst`, then destroys the `src`
    /// values. Ranges don't overlap.
    void (*relocate)(void* dst, void* src, std::size_t n) noexcept = nullptr;
    /// Destroys `n` values; null when trivially destructible.
    void (*destroy)(void* p, std::size_t n) noexcept = nullptr;
    /// Value-initialises one value; null when not default constructible.
    void (*construct)(void* p) = nullptr;
    /// Copy-constructs one value; null when not copy constructible.
    void (*copy)(void* dst, const void* src) = nullptr;
    /// `==` on two values; null when the type has none.
    bool (*equal)(const void* a, const void* b) = nullptr;
    /// component_traits<T>::required, transitively and without repeats: the components an add
    /// of this one brings along when missing (`required_count` of them). Null when none.
    const ComponentId* required = nullptr;
    std::uint32_t required_count = 0;  ///< entries of `required`

    /// Whether the type takes no column bytes.
    [[nodiscard]] bool is_tag() const noexcept { return size == 0; }
    /// Whether a value can be value-initialised (`construct_value`).
    [[nodiscard]] bool constructible() const noexcept { return zero_init || construct != nullptr; }
    /// Whether values can be copied (`copy_values`).
    [[nodiscard]] bool copyable() const noexcept { return trivially_copyable || copy != nullptr; }
    /// Value-initialises the value at `p`. Precondition: `constructible()`.
    void construct_value(void* p) const {
        if (construct != nullptr)
            construct(p);
        else if (size != 0)
            __builtin_memset(p, 0, size);
    }
    /// Moves `n` values from `src` into uninitialised `dst` and ends the `src` ones: `relocate`,
    /// or a memcpy of trivially relocatable values. Ranges don't overlap.
    void relocate_values(void* dst, void* src, std::size_t n) const noexcept {
        if (relocate != nullptr)
            relocate(dst, src, n);
        else if (size != 0)
            __builtin_memcpy(dst, src, std::size_t{size} * n);
    }
    /// Copy-constructs `n` values from `src` into uninitialised `dst`; when a copy throws, the
    /// ones made are destroyed and the exception propagates. Precondition: `copyable()`.
    void copy_values(void* dst, const void* src, std::size_t n) const {
        if (trivially_copyable) {
            if (n != 0 && size != 0) __builtin_memcpy(dst, src, n * size);
            return;
        }
        std::size_t i = 0;
        try {
            for (; i < n; ++i)
                copy(static_cast<std::byte*>(dst) + i * size,
                     static_cast<const std::byte*>(src) + i * size);
        } catch (...) {
            if (destroy != nullptr) destroy(dst, i);
            throw;
        }
    }
};

/// A C++ type usable as a component: an object type (not a reference, not cv-qualified,
/// not an array) that is nothrow move constructible and nothrow destructible.
template <class T>
concept Component =
    std::is_object_v<T> && !std::is_const_v<T> && !std::is_volatile_v<T> && !std::is_array_v<T> &&
    std::is_nothrow_move_constructible_v<T> && std::is_nothrow_destructible_v<T>;

namespace detail {

/// Whether `T` is described by `TESSERA_REFLECT`.
template <class T>
concept reflected = requires {
    { reflect<T>::schema() } -> std::same_as<const Schema&>;
};

template <class T>
concept has_enableable = requires {
    bool{component_traits<T>::enableable};
};
template <class T>
concept has_track_changes = requires {
    bool{component_traits<T>::track_changes};
};

template <class T>
concept has_eager_tracking = requires {
    bool{component_traits<T>::eager_tracking};
};

template <class T>
concept has_storage = requires {
    storage_kind{component_traits<T>::storage};
};

/// Whether `T` (cv and references stripped) is stored in sparse sets.
template <class T>
constexpr bool sparse_v = [] {
    using U = std::remove_cvref_t<T>;
    if constexpr (has_storage<U>)
        return component_traits<U>::storage == storage_kind::sparse;
    else
        return false;
}();

/// Whether any of `Ts` is.
template <class... Ts>
inline constexpr bool any_sparse_v = (sparse_v<Ts> || ...);

template <class T>
constexpr bool eager_tracking_v = [] {
    if constexpr (has_eager_tracking<T>)
        return component_traits<T>::eager_tracking;
    else
        return false;
}();

template <class T>
constexpr bool enableable_v = [] {
    if constexpr (has_enableable<T>)
        return component_traits<T>::enableable;
    else
        return false;
}();

template <class T>
constexpr bool track_changes_v = [] {
    if constexpr (has_track_changes<T>)
        return component_traits<T>::track_changes;
    else
        return true;
}();

template <class T, class... Ts>
inline constexpr bool one_of_v = (std::is_same_v<T, Ts> || ...);

/// `component_traits<T>::required`, or the empty list.
template <class T>
struct direct_required_of {
    using type = type_list<>;
};
template <class T>
requires requires {
    typename component_traits<T>::required;
}
struct direct_required_of<T> {
    using type = typename component_traits<T>::required;
};

/// Depth-first closure of requirements: `Found` so far, the `Path` of requirers that led here
/// (a requirement on the path is a cycle), and the requirements `Rs` left to visit.
template <class Found, class Path, class List>
struct gather_required;
template <class Found, class Path>
struct gather_required<Found, Path, type_list<>> {
    using type = Found;
};
template <class... F, class... P, class R, class... Rs>
struct gather_required<type_list<F...>, type_list<P...>, type_list<R, Rs...>> {
    static constexpr bool cycle = one_of_v<R, P...>;
    static_assert(!cycle,
                  "tessera: component_traits<T>::required forms a cycle (a component "
                  "requires itself, directly or through others)");
    static_assert(std::is_default_constructible_v<R>,
                  "tessera: a required component must be default constructible (it is "
                  "value-initialised when missing)");
    static_assert(
        !requires { R::tessera_relation(); },
        "tessera: a relation can't be a required component (relate it instead)");
    using with_r = std::conditional_t<one_of_v<R, F...>, type_list<F...>, type_list<F..., R>>;
    using below = typename gather_required<
        with_r, type_list<P..., R>,
        std::conditional_t<cycle, type_list<>, typename direct_required_of<R>::type>>::type;
    using type = typename gather_required<below, type_list<P...>, type_list<Rs...>>::type;
};

/// Every component `T` requires, transitively, each once (not `T`).
template <class T>
using required_closure_t =
    typename gather_required<type_list<>, type_list<T>, typename direct_required_of<T>::type>::type;

/// The components an add or spawn of all of `Ts` brings along: their requirements that are
/// not among `Ts`, each once.
template <class Found, class Named, class... Lists>
struct merged_required_list {
    using type = Found;
};
template <class... F, class... N, class... Ls>
struct merged_required_list<type_list<F...>, type_list<N...>, type_list<>, Ls...>
    : merged_required_list<type_list<F...>, type_list<N...>, Ls...> {};
template <class... F, class... N, class R, class... Rs, class... Ls>
struct merged_required_list<type_list<F...>, type_list<N...>, type_list<R, Rs...>, Ls...>
    : merged_required_list<
          std::conditional_t<one_of_v<R, F..., N...>, type_list<F...>, type_list<F..., R>>,
          type_list<N...>, type_list<Rs...>, Ls...> {};
template <class... Ts>
using required_extra_t =
    typename merged_required_list<type_list<>, type_list<Ts...>, required_closure_t<Ts>...>::type;

template <class L>
struct list_size;
template <class... Ts>
struct list_size<type_list<Ts...>> : std::integral_constant<std::size_t, sizeof...(Ts)> {};

/// Whether adding all of `Ts` brings along components not among them.
template <class... Ts>
inline constexpr bool brings_required_v = list_size<required_extra_t<Ts...>>::value != 0;

template <class T>
ComponentId component_id_for_registry();

/// The ids of `Rs`, in static storage (they never move: `ComponentInfo::required` points there).
template <class... Rs>
const ComponentId* required_ids(type_list<Rs...>) {
    if constexpr (sizeof...(Rs) == 0) {
        return nullptr;
    } else {
        static const ComponentId ids[] = {component_id_for_registry<Rs>()...};
        return ids;
    }
}

/// The compiler's spelling of `T`, e.g. "Position" or "game::{anonymous}::Label".
template <class T>
constexpr std::string_view raw_type_name() noexcept {
    std::string_view s = __PRETTY_FUNCTION__;
#if defined(__clang__)
    constexpr std::string_view key = "T = ";
    const auto start = s.find(key) + key.size();
    const auto end = s.rfind(']');
#else
    constexpr std::string_view key = "T = ";
    const auto start = s.find(key) + key.size();
    auto end = s.find(';', start);
    if (end == std::string_view::npos) end = s.rfind(']');
#endif
    return s.substr(start, end - start);
}

/// Everything the registry needs to record a C++ type.
struct TypeDescriptor {
    std::string_view name;
    const std::type_info* type;
    ComponentInfo info;
};

/// Registers (or finds) a C++ type in the process-wide registry. Types with external linkage
/// are keyed by mangled name so shared libraries agree; others by `type_info` identity. Throws
/// `type_conflict` when a name is already registered with another size or alignment.
ComponentId register_type(const TypeDescriptor& descriptor);

template <class T>
void relocate_fn(void* dst, void* src, std::size_t n) noexcept {
    T* d = static_cast<T*>(dst);
    T* s = static_cast<T*>(src);
    for (std::size_t i = 0; i < n; ++i) {
        ::new (static_cast<void*>(d + i)) T(std::move(s[i]));
        s[i].~T();
    }
}

template <class T>
void destroy_fn(void* p, std::size_t n) noexcept {
    T* t = static_cast<T*>(p);
    for (std::size_t i = 0; i < n; ++i) t[i].~T();
}

template <class T>
TypeDescriptor describe() {
    ComponentInfo info;
    info.name = raw_type_name<T>();
    info.size = std::is_empty_v<T> ? 0u : static_cast<std::uint32_t>(sizeof(T));
    info.alignment = static_cast<std::uint32_t>(alignof(T));
    info.trivially_relocatable = std::is_trivially_copyable_v<T> || std::is_empty_v<T>;
    info.trivially_copyable =
        (std::is_trivially_copyable_v<T> && std::is_copy_constructible_v<T>) || std::is_empty_v<T>;
    if constexpr (reflected<T>) info.schema = &reflect<T>::schema();
    if constexpr (requires { T::tessera_relation(); }) info.relation = &T::tessera_relation;
    info.reserved = requires {
        T::tessera_relation();
    }
    || requires {
        T::tessera_reserved;
    };
    info.enableable = enableable_v<T>;
    info.track_changes = track_changes_v<T>;
    static_assert(!eager_tracking_v<T> || (track_changes_v<T> && !std::is_empty_v<T>),
                  "tessera: eager_tracking needs change ticks: not with track_changes = false, "
                  "and not on a tag");
    info.eager_tracking = eager_tracking_v<T>;
    info.sparse = sparse_v<T>;
    using required = required_closure_t<T>;
    info.required = required_ids(required{});
    info.required_count = static_cast<std::uint32_t>(list_size<required>::value);
    if (!info.trivially_relocatable) info.relocate = &relocate_fn<T>;
    if constexpr (!std::is_trivially_destructible_v<T>) info.destroy = &destroy_fn<T>;
    if constexpr (std::is_default_constructible_v<T>)
        info.construct = [](void* p) { ::new (p) T(); };
    if constexpr (std::is_copy_constructible_v<T>)
        info.copy = [](void* d, const void* s) { ::new (d) T(*static_cast<const T*>(s)); };
    if constexpr (std::equality_comparable<T>)
        info.equal = [](const void* a, const void* b) {
            return static_cast<bool>(*static_cast<const T*>(a) == *static_cast<const T*>(b));
        };
    return TypeDescriptor{info.name, &typeid(T), info};
}

}  // namespace detail

namespace detail {

/// Registers `T` during static initialisation; 0 when that fails (a `type_conflict`: the error
/// is raised again, as an exception, at the type's first use instead of terminating start-up).
template <class T>
std::uint32_t initial_registered_id() noexcept {
    try {
        return register_type(describe<T>()).value + 1;
    } catch (...) {
        return 0;
    }
}

/// `component_id<T>() + 1`, or 0 before its initialiser ran / after a failed registration.
/// Every component type a program names is registered before `main` (dynamic initialisation of
/// this variable), so the hot path is a plain load: no guard, no atomic, and loops that call
/// `component_id` keep their other loads hoisted. Written only by its initialiser.
template <class T>
inline const std::uint32_t registered_id = initial_registered_id<T>();

/// The slow path: a use before static initialisation reached `registered_id<T>` (from another
/// static initialiser), or after a failed registration (rethrows the type_conflict).
template <class T>
// Declared `pure` (it only returns the id as far as callers can tell): otherwise the call would
// make callers reload everything after it, and no loop around a `get` could hoist its loads.
[[gnu::noinline, gnu::cold, gnu::pure]] ComponentId late_component_id() {
    return register_type(describe<T>());
}
}  // namespace detail

/// The process-wide id of component type `T` (cv and references are stripped). Types are
/// registered before `main`; the call is one load. Thread-safe.
/// @throws Error(type_conflict) when another type of the same (mangled) name but different
///         size or alignment was registered first (e.g. two plugins disagreeing on a struct).
template <class T>
[[nodiscard]] inline ComponentId component_id() {
    using U = std::remove_cvref_t<T>;
    static_assert(Component<U>,
                  "tessera: a component type must be an object type that is nothrow move "
                  "constructible and nothrow destructible (mark its move constructor noexcept)");
    const std::uint32_t id_plus_one = detail::registered_id<U>;
    if (id_plus_one != 0) [[likely]]
        return ComponentId{id_plus_one - 1};
    return detail::late_component_id<U>();
}

/// The registry's record for `id`. O(1); the record never moves or dies. For an id the process
/// never assigned (default-constructed, or forged from a number) it is a placeholder: an invalid
/// `id`, the name "(unregistered component)", size 0 and no hooks; `find_component_info` tells
/// the two apart.
[[nodiscard]] const ComponentInfo& component_info(ComponentId id) noexcept;

/// The registry's record for `id`, or null when the process never assigned `id` (the default
/// `ComponentId{}`, or a number no component has). O(1), lock-free. Every public call that takes
/// a runtime `ComponentId` checks it this way: the checked ones throw `Error(not_registered)`,
/// the `noexcept` queries answer false, null or 0.
[[nodiscard]] const ComponentInfo* find_component_info(ComponentId id) noexcept;

namespace detail {
/// `find_component_info(id)` for a call named `op` that must have a component.
/// @throws Error(not_registered) naming `op` and the id when the process never assigned it.
const ComponentInfo& checked_info(ComponentId id, const char* op);
}  // namespace detail

namespace detail {
/// `component_id<T>()`, declared before `describe` needs it.
template <class T>
ComponentId component_id_for_registry() {
    return component_id<T>();
}

/// `late_component_id`, giving the invalid `ComponentId{}` instead of throwing.
template <class T>
[[gnu::noinline, gnu::cold, gnu::pure]] ComponentId late_lookup_id() noexcept {
    try {
        return register_type(describe<T>());
    } catch (...) {
        return ComponentId{};
    }
}

/// `component_id<T>()` for the lookups that cannot throw (`World::has`, `try_get`, ...): the
/// invalid `ComponentId{}` when `T` cannot be registered (a `type_conflict`). No table, index
/// or switch holds that id, so such a type is simply absent everywhere.
template <class T>
[[nodiscard]] inline ComponentId lookup_id() noexcept {
    using U = std::remove_cvref_t<T>;
    const std::uint32_t id_plus_one = registered_id<U>;
    if (id_plus_one != 0) [[likely]]
        return ComponentId{id_plus_one - 1};
    return late_lookup_id<U>();
}
}  // namespace detail

/// The record of `T`. @throws like `component_id<T>()`.
template <class T>
[[nodiscard]] const ComponentInfo& component_info() {
    return component_info(component_id<T>());
}

/// Number of component ids the process has assigned so far.
[[nodiscard]] std::size_t component_id_count() noexcept;

}  // namespace tessera

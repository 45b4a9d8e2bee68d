/// @file detail/type_list.hpp
/// Small compile-time helpers shared by the typed API. Internal, not API.
#pragma once

#include <cstddef>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

namespace tessera::detail {

/// Whether all of `Ts` are distinct types.
template <class... Ts>
inline constexpr bool unique_types_v = true;
template <class T, class... Ts>
inline constexpr bool unique_types_v<T, Ts...> =
    (!std::is_same_v<T, Ts> && ...) && unique_types_v<Ts...>;

/// Whether a `T` can be made from `Args`: by a constructor, or for an aggregate by braces (as
/// `std::make_from_tuple` can't, and compilers before C++20's parenthesised aggregate
/// initialisation need).
template <class T, class... Args>
inline constexpr bool emplaceable_v = std::is_constructible_v<T, Args...> ||
                                      (std::is_aggregate_v<T> && requires(Args && ... args) {
                                          T{std::forward<Args>(args)...};
                                      });

/// Whether making a `T` from `Args` (as `emplaceable_v` says) can't throw.
template <class T, class... Args>
inline constexpr bool nothrow_emplaceable_v = [] {
    if constexpr (std::is_constructible_v<T, Args...>)
        return std::is_nothrow_constructible_v<T, Args...>;
    else
        return noexcept(T{std::declval<Args>()...});
}();

/// Makes a `T` from `args` at `p` (uninitialised), by a constructor or by braces.
template <class T, class... Args>
T* emplace_at(void* p, Args&&... args) noexcept(nothrow_emplaceable_v<T, Args&&...>) {
    if constexpr (std::is_constructible_v<T, Args&&...>)
        return ::new (p) T(std::forward<Args>(args)...);
    else
        return ::new (p) T{std::forward<Args>(args)...};
}

/// A `T` made from `args`, by a constructor or by braces.
template <class T, class... Args>
T make_value(Args&&... args) {
    if constexpr (std::is_constructible_v<T, Args&&...>)
        return T(std::forward<Args>(args)...);
    else
        return T{std::forward<Args>(args)...};
}

/// The parameter types of a callable with one non-template `operator()` (or a function).
template <class F>
struct callable_args : callable_args<decltype(&F::operator())> {};
template <class R, class... A>
struct callable_args<R (*)(A...)> {
    using type = std::tuple<A...>;
};
template <class R, class... A>
struct callable_args<R(A...)> {
    using type = std::tuple<A...>;
};
template <class C, class R, class... A>
struct callable_args<R (C::*)(A...)> {
    using type = std::tuple<A...>;
};
template <class C, class R, class... A>
struct callable_args<R (C::*)(A...) const> {
    using type = std::tuple<A...>;
};
template <class C, class R, class... A>
struct callable_args<R (C::*)(A...) noexcept> {
    using type = std::tuple<A...>;
};
template <class C, class R, class... A>
struct callable_args<R (C::*)(A...) const noexcept> {
    using type = std::tuple<A...>;
};
template <class F>
using callable_args_t = typename callable_args<std::remove_cvref_t<F>>::type;

}  // namespace tessera::detail

/// @file detail/type_list.hpp
/// Small compile-time helpers shared by the typed API. Internal, not API.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>

namespace tessera::detail {

/// Whether all of `Ts` are distinct types.
template <class... Ts>
inline constexpr bool unique_types_v = true;
template <class T, class... Ts>
inline constexpr bool unique_types_v<T, Ts...> =
    (!std::is_same_v<T, Ts> && ...) && unique_types_v<Ts...>;

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

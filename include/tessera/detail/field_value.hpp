// Reading one scalar field of a schema from raw bytes: the one switch over field types that the
// JSON writer, the by-name field reader and the inspector share.
#pragma once

#include <tessera/reflect.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

namespace tessera::detail {

/// Loads the scalar of type `t` at `p` (any alignment) and returns `fn(value)`, where `value` is
/// the field's C++ type for numbers, `bool` for `boolean`, `StringId` for `str` and
/// `const std::string&` for `string`. Precondition: `t` is not `Field::record`.
template <class F>
decltype(auto) visit_scalar(Field t, const std::byte* p, F&& fn) {
    auto load = [p]<class T>(std::type_identity<T>) {
        T x;
        std::memcpy(&x, p, sizeof(T));
        return x;
    };
    switch (t) {
        case Field::f32: return fn(load(std::type_identity<float>{}));
        case Field::f64: return fn(load(std::type_identity<double>{}));
        case Field::i8: return fn(load(std::type_identity<std::int8_t>{}));
        case Field::i16: return fn(load(std::type_identity<std::int16_t>{}));
        case Field::i32: return fn(load(std::type_identity<std::int32_t>{}));
        case Field::i64: return fn(load(std::type_identity<std::int64_t>{}));
        case Field::u8: return fn(load(std::type_identity<std::uint8_t>{}));
        case Field::u16: return fn(load(std::type_identity<std::uint16_t>{}));
        case Field::u32: return fn(load(std::type_identity<std::uint32_t>{}));
        case Field::u64: return fn(load(std::type_identity<std::uint64_t>{}));
        case Field::boolean: return fn(*p != std::byte{0});
        case Field::str: return fn(StringId{load(std::type_identity<std::uint32_t>{})});
        case Field::string: return fn(*reinterpret_cast<const std::string*>(p));
        case Field::record: break;
    }
    std::abort();  // a record has no scalar value: callers handle it before
}

/// Whether a value passed by `visit_scalar` is a number (`bool` and `StringId` are not).
template <class V>
inline constexpr bool is_number_v =
    std::is_arithmetic_v<std::remove_cvref_t<V>> && !std::is_same_v<std::remove_cvref_t<V>, bool>;

}  // namespace tessera::detail

/// @file reflect.hpp
/// Field metadata: the `Schema` of a component, shared by runtime components (dynamic.hpp) and
/// C++ structs described with `TESSERA_REFLECT`, so that tools, snapshots and `state_hash` see
/// both alike; and what a runtime component is defined from (`FieldDef`, `ComponentOptions`),
/// which the component registry (src/registry.cpp) keeps.
///
/// @code
/// struct Stats { std::int32_t hp; float speed; std::string title; std::array<float, 3> rgb; };
/// TESSERA_REFLECT(Stats, hp, speed, title, rgb)  // at global namespace scope
/// const ts::Schema* s = ts::component_info<Stats>().schema;  // s->fields[0].name == "hp"
/// @endcode
#pragma once

#include <tessera/component.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace tessera {

/// The type of one field. The first ten are the runtime schema types (the schema's tokens;
/// `boolean` because `bool` is a keyword); the rest appear in reflected C++ structs only.
enum class Field : std::uint8_t {
    f32,      ///< float
    f64,      ///< double
    i8,       ///< std::int8_t
    i16,      ///< std::int16_t
    i32,      ///< std::int32_t
    u8,       ///< std::uint8_t
    u16,      ///< std::uint16_t
    u32,      ///< std::uint32_t
    boolean,  ///< bool (one byte, 0 or 1)
    str,      ///< an id in the world's `StringTable` (a `std::uint32_t`; `StringId` in C++)
    i64,      ///< std::int64_t (C++ structs only)
    u64,      ///< std::uint64_t (C++ structs only)
    string,   ///< std::string (C++ structs only)
    record,   ///< a nested reflected struct (C++ structs only; `FieldInfo::schema` describes it)
};

/// The stable name of a field type, e.g. "f32", "boolean", "string".
[[nodiscard]] std::string_view to_string(Field type) noexcept;
/// Bytes of one element of a field type (0 for `record`, whose size is its schema's).
[[nodiscard]] std::size_t field_size(Field type) noexcept;

/// A `str` field's value in a C++ struct: an id in the world's `StringTable` (0 is "").
struct StringId {
    std::uint32_t value = 0;  ///< the id (`StringTable::get(value)` is the text)
    /// Same id, hence (in one table) the same text.
    friend constexpr bool operator==(StringId, StringId) noexcept = default;
};

struct Schema;

/// One field of a schema.
struct FieldInfo {
    std::string_view name;           ///< the member's name (static storage or the registry's)
    Field type = Field::u8;          ///< the element type
    std::uint32_t offset = 0;        ///< bytes from the start of the value
    std::uint32_t count = 1;         ///< elements: 1, or N for a fixed array (`T[N]`, `std::array`)
    std::uint32_t stride = 0;        ///< bytes from one element to the next
    const Schema* schema = nullptr;  ///< the nested struct's schema, for `Field::record`
    bool is_enum = false;            ///< an enum, stored as its underlying integer type
};

/// The fields of a component type (or of a nested struct).
struct Schema {
    std::string_view name;              ///< the type's name
    std::span<const FieldInfo> fields;  ///< in declaration order
    std::uint32_t size = 0;             ///< bytes per value (sizeof)
    /// The type is trivially copyable and every field is a number, bool, enum, `str` id or
    /// nested flat struct (no `std::string`): binary snapshots copy its values as they are in
    /// memory (members left out of the description included).
    bool flat = true;

    /// The field called `name`, or null.
    [[nodiscard]] const FieldInfo* find(std::string_view name) const noexcept {
        for (const FieldInfo& f : fields) {
            if (f.name == name) return &f;
        }
        return nullptr;
    }
};

/// One field of a runtime schema: a name and one of the runtime types (`f32` ... `str`).
struct FieldDef {
    std::string_view name;  ///< unique in the schema, not empty; copied by `World::component`
    Field type;             ///< a runtime schema type: `f32` ... `str`
};

/// Options of a runtime component.
struct ComponentOptions {
    bool enableable = false;    ///< per-entity on/off flag (tags too: a column of flags only)
    bool track_changes = true;  ///< false: change ticks can never be asked for
    /// Change ticks from the first row on (as `component_traits<T>::eager_tracking`), not from
    /// the first read of them. Needs `track_changes` and fields.
    bool eager_tracking = false;
};

namespace detail {

/// Registers a runtime component in the process-wide registry (or finds the same definition).
ComponentId register_runtime(std::string_view name, std::span<const FieldDef> fields,
                             const ComponentOptions& options);
/// The component registered under readable name `name` (a runtime name or a C++ type's name as
/// `component_info().name` spells it); invalid when none or when several C++ types share it.
[[nodiscard]] ComponentId find_component(std::string_view name);

/// `T`, or its underlying type when `T` is an enum.
template <class T, bool = std::is_enum_v<T>>
struct plain_type {
    using type = T;
};
template <class T>
struct plain_type<T, true> {
    using type = std::underlying_type_t<T>;
};
template <class T>
using plain_t = typename plain_type<T>::type;

template <class T>
struct is_std_array : std::false_type {};
template <class T, std::size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};

/// The field type of a scalar C++ type (after arrays and enums are peeled).
template <class T>
constexpr Field scalar_field() {
    if constexpr (std::is_same_v<T, bool>)
        return Field::boolean;
    else if constexpr (std::is_same_v<T, float>)
        return Field::f32;
    else if constexpr (std::is_same_v<T, double>)
        return Field::f64;
    else if constexpr (std::is_same_v<T, StringId>)
        return Field::str;
    else if constexpr (std::is_same_v<T, std::string>)
        return Field::string;
    else if constexpr (reflected<T>)
        return Field::record;
    else if constexpr (std::is_integral_v<T> && sizeof(T) == 1)
        return std::is_signed_v<T> ? Field::i8 : Field::u8;
    else if constexpr (std::is_integral_v<T> && sizeof(T) == 2)
        return std::is_signed_v<T> ? Field::i16 : Field::u16;
    else if constexpr (std::is_integral_v<T> && sizeof(T) == 4)
        return std::is_signed_v<T> ? Field::i32 : Field::u32;
    else if constexpr (std::is_integral_v<T> && sizeof(T) == 8)
        return std::is_signed_v<T> ? Field::i64 : Field::u64;
    else
        static_assert(sizeof(T) == 0,
                      "tessera: TESSERA_REFLECT field of an unsupported type: use a number, bool, "
                      "enum, std::string, ts::StringId, a reflected struct, or a fixed array of "
                      "those");
}

/// The `FieldInfo` of a member of type `M` at `offset`.
template <class M>
constexpr FieldInfo make_field(std::string_view name, std::size_t offset) {
    FieldInfo f;
    f.name = name;
    f.offset = static_cast<std::uint32_t>(offset);
    using E = std::conditional_t<std::is_array_v<M>, std::remove_extent_t<M>, M>;
    if constexpr (std::is_array_v<M>) {
        static_assert(std::rank_v<M> == 1,
                      "tessera: TESSERA_REFLECT supports one-dimensional arrays");
        f.count = static_cast<std::uint32_t>(std::extent_v<M>);
        f.stride = sizeof(E);
        using U = plain_t<E>;
        f.type = scalar_field<U>();
        f.is_enum = std::is_enum_v<E>;
        if constexpr (reflected<U>) f.schema = &reflect<U>::schema();
    } else if constexpr (is_std_array<M>::value) {
        using V = typename M::value_type;
        static_assert(sizeof(M) == sizeof(V) * std::tuple_size_v<M>);
        FieldInfo inner = make_field<V[std::tuple_size_v<M>]>(name, offset);
        return inner;
    } else {
        using U = plain_t<M>;
        f.type = scalar_field<U>();
        f.stride = sizeof(M);
        f.is_enum = std::is_enum_v<M>;
        if constexpr (reflected<U>) f.schema = &reflect<U>::schema();
    }
    return f;
}

/// The schema of `T` over `fields`.
template <class T>
Schema make_schema(std::string_view name, std::span<const FieldInfo> fields) {
    Schema s;
    s.name = name;
    s.fields = fields;
    s.size = std::is_empty_v<T> ? 0u : static_cast<std::uint32_t>(sizeof(T));
    s.flat = std::is_trivially_copyable_v<T>;
    for (const FieldInfo& f : fields) {
        s.flat = s.flat && f.type != Field::string && (f.schema == nullptr || f.schema->flat);
    }
    return s;
}

}  // namespace detail
}  // namespace tessera

// ---- TESSERA_REFLECT: a field list for up to 32 members ----

#define TESSERA_DETAIL_FIELD(Type, member) \
    ::tessera::detail::make_field<decltype(Type::member)>(#member, offsetof(Type, member)),
#define TESSERA_DETAIL_EXPAND(x) x
#define TESSERA_DETAIL_FE_1(M, T, x) M(T, x)
#define TESSERA_DETAIL_FE_2(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_1(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_3(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_2(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_4(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_3(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_5(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_4(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_6(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_5(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_7(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_6(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_8(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_7(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_9(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_8(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_10(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_9(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_11(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_10(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_12(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_11(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_13(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_12(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_14(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_13(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_15(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_14(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_16(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_15(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_17(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_16(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_18(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_17(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_19(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_18(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_20(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_19(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_21(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_20(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_22(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_21(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_23(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_22(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_24(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_23(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_25(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_24(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_26(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_25(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_27(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_26(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_28(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_27(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_29(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_28(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_30(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_29(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_31(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_30(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_FE_32(M, T, x, ...) \
    M(T, x) TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_FE_31(M, T, __VA_ARGS__))
#define TESSERA_DETAIL_PICK(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, \
                            _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30,  \
                            _31, _32, NAME, ...)                                                   \
    NAME
#define TESSERA_DETAIL_FOR_EACH(M, T, ...)                                                      \
    TESSERA_DETAIL_EXPAND(TESSERA_DETAIL_PICK(                                                  \
        __VA_ARGS__, TESSERA_DETAIL_FE_32, TESSERA_DETAIL_FE_31, TESSERA_DETAIL_FE_30,          \
        TESSERA_DETAIL_FE_29, TESSERA_DETAIL_FE_28, TESSERA_DETAIL_FE_27, TESSERA_DETAIL_FE_26, \
        TESSERA_DETAIL_FE_25, TESSERA_DETAIL_FE_24, TESSERA_DETAIL_FE_23, TESSERA_DETAIL_FE_22, \
        TESSERA_DETAIL_FE_21, TESSERA_DETAIL_FE_20, TESSERA_DETAIL_FE_19, TESSERA_DETAIL_FE_18, \
        TESSERA_DETAIL_FE_17, TESSERA_DETAIL_FE_16, TESSERA_DETAIL_FE_15, TESSERA_DETAIL_FE_14, \
        TESSERA_DETAIL_FE_13, TESSERA_DETAIL_FE_12, TESSERA_DETAIL_FE_11, TESSERA_DETAIL_FE_10, \
        TESSERA_DETAIL_FE_9, TESSERA_DETAIL_FE_8, TESSERA_DETAIL_FE_7, TESSERA_DETAIL_FE_6,     \
        TESSERA_DETAIL_FE_5, TESSERA_DETAIL_FE_4, TESSERA_DETAIL_FE_3, TESSERA_DETAIL_FE_2,     \
        TESSERA_DETAIL_FE_1)(M, T, __VA_ARGS__))

/// Describes the fields of C++ struct `Type` (at global namespace scope, after the struct and
/// before the type is first used as a component). Fields may be numbers, bool, enums,
/// `std::string`, `ts::StringId`, other reflected structs, and one-dimensional fixed arrays
/// (`T[N]`, `std::array<T, N>`) of those; any other type is a compile-time error naming the
/// rule. At most 32 fields. Members left out are not hashed, not in JSON, and reset to their
/// default by a JSON load; binary snapshots of a trivially copyable struct (`Schema::flat`)
/// copy whole values, left-out members included.
// clang-format off
#define TESSERA_REFLECT(Type, ...)                                                                 \
    template <>                                                                                    \
    struct tessera::reflect<Type> {                                                                \
        static const ::tessera::Schema& schema() {                                                 \
            _Pragma("GCC diagnostic push")                                                         \
            _Pragma("GCC diagnostic ignored \"-Winvalid-offsetof\"")                               \
            static const ::tessera::FieldInfo fields[] = {                                         \
                TESSERA_DETAIL_FOR_EACH(TESSERA_DETAIL_FIELD, Type, __VA_ARGS__)};                 \
            _Pragma("GCC diagnostic pop")                                                          \
            static const ::tessera::Schema s =                                                     \
                ::tessera::detail::make_schema<Type>(#Type, fields);                               \
            return s;                                                                              \
        }                                                                                          \
    };
// clang-format on

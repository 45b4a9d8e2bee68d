/// @file dynamic.hpp
/// Runtime components: components defined at run time from a schema of typed fields,
/// read and written by field name or index, and queries built from component ids.
///
/// @code
/// ts::ComponentId health =
///     world.component("Health", {{"hp", ts::Field::i32}, {"max", ts::Field::i32}});
/// world.add(e, health);  // fields start at zero
/// world.set_field(e, health, "hp", 30);
/// std::int32_t hp = world.get_field<std::int32_t>(e, health, "hp");
/// @endcode
///
/// A runtime component gets an id from the same process-wide space as C++ types, so it works
/// with any number of worlds: defining the same name with the same schema again (in any world)
/// returns the same id. Its values are plain bytes laid out like a C struct (fields in order,
/// each at its natural alignment): trivially copyable, zero when added. The same field access
/// works on C++ components described with `TESSERA_REFLECT` (reflect.hpp). `FieldDef` and
/// `ComponentOptions`, which a schema is made of, are in reflect.hpp.
#pragma once

#include <tessera/component.hpp>
#include <tessera/entity.hpp>
#include <tessera/error.hpp>
#include <tessera/query.hpp>
#include <tessera/reflect.hpp>
#include <tessera/world.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory_resource>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace tessera {

/// A world's interned strings, for `str` fields: each distinct string gets a dense id, id 0 is
/// "". Strings are never evicted, so don't intern unbounded unique values. Views returned by
/// `get` stay valid as long as the table.
class StringTable {
public:
    /// A table holding only "" (id 0), allocating from `mr` (which must outlive it).
    explicit StringTable(std::pmr::memory_resource* mr = std::pmr::get_default_resource());
    /// A copy with the same ids, allocating from `other`'s memory resource. O(total length).
    StringTable(const StringTable& other);
    StringTable& operator=(const StringTable&) = delete;
    ~StringTable();

    /// The id of `s`, added if new. Amortised O(length). May throw bad_alloc (table unchanged).
    std::uint32_t intern(std::string_view s);
    /// The id of `s`, or -1 (as an unsigned value: 0xFFFFFFFF) when it was never interned.
    [[nodiscard]] std::uint32_t find(std::string_view s) const noexcept;
    /// The string of `id`. @throws Error(invalid_argument) for an id the table never gave.
    [[nodiscard]] std::string_view get(std::uint32_t id) const;
    /// Number of strings, "" included.
    [[nodiscard]] std::size_t size() const noexcept { return strings_.size(); }

private:
    void grow_buckets();
    char* store(std::string_view s);
    std::pmr::memory_resource* mr_;
    std::pmr::vector<std::string_view> strings_;  ///< by id, viewing `blocks_`
    std::pmr::vector<std::uint32_t> buckets_;     ///< open addressing: id + 1, 0 = empty
    std::pmr::vector<std::pair<char*, std::size_t>> blocks_;  ///< character storage
    std::size_t used_ = 0;                                    ///< bytes used in the last block
};

/// A query built from component ids at run time: `spec.all` must all be present, one of
/// `spec.any` (when not empty), none of `spec.none`. Cached like `Query`: archetypes are matched
/// incrementally. Iterate it with `each_chunk`; a `Chunk` gives raw column pointers
/// (`Chunk::column_bytes`), and a component's schema gives each field's offset.
class DynamicQuery {
public:
    /// A query over `world` matching `spec` (`World::query_dynamic` makes them). It must not
    /// outlive the world. @throws Error(not_registered) for an id no component has.
    DynamicQuery(World& world, QuerySpec spec);

    /// Calls `fn(Chunk&)` for every non-empty matching archetype. Structural changes made by
    /// `fn` are deferred until the loop ends (like `Query::each_chunk`).
    template <class F>
    void each_chunk(F&& fn);
    /// Number of matching entities (enable flags not applied). O(matched archetypes).
    [[nodiscard]] std::size_t count();

private:
    detail::Storage* storage_;
    detail::QueryState state_;
};

namespace detail {

/// A field value crossing the typed/untyped boundary.
struct FieldValue {
    enum class Kind : std::uint8_t { signed_int, unsigned_int, floating, boolean, text, string_id };
    Kind kind = Kind::signed_int;
    std::int64_t i = 0;
    std::uint64_t u = 0;
    double d = 0;
    bool b = false;
    std::string_view s;
};

/// What `get_field<T>` wants.
enum class FieldWant : std::uint8_t {
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
    u8,
    u16,
    u32,
    u64,
    boolean,
    text,
    string_id
};

template <class V>
FieldValue to_field_value(const V& v) {
    FieldValue out;
    using U = std::remove_cvref_t<V>;
    if constexpr (std::is_same_v<U, bool>) {
        out.kind = FieldValue::Kind::boolean;
        out.b = v;
    } else if constexpr (std::is_same_v<U, StringId>) {
        out.kind = FieldValue::Kind::string_id;
        out.u = v.value;
    } else if constexpr (std::is_enum_v<U>) {
        return to_field_value(static_cast<std::underlying_type_t<U>>(v));
    } else if constexpr (std::is_floating_point_v<U>) {
        out.kind = FieldValue::Kind::floating;
        out.d = static_cast<double>(v);
    } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>) {
        out.kind = FieldValue::Kind::signed_int;
        out.i = v;
    } else if constexpr (std::is_integral_v<U>) {
        out.kind = FieldValue::Kind::unsigned_int;
        out.u = v;
    } else if constexpr (std::is_convertible_v<const V&, std::string_view>) {
        out.kind = FieldValue::Kind::text;
        out.s = std::string_view(v);
    } else {
        static_assert(sizeof(U) == 0,
                      "tessera: set_field takes a number, bool, enum, string or ts::StringId");
    }
    return out;
}

template <class T>
constexpr FieldWant field_want() {
    using U = plain_t<T>;
    if constexpr (std::is_same_v<U, bool>)
        return FieldWant::boolean;
    else if constexpr (std::is_same_v<U, float>)
        return FieldWant::f32;
    else if constexpr (std::is_same_v<U, double>)
        return FieldWant::f64;
    else if constexpr (std::is_same_v<U, StringId>)
        return FieldWant::string_id;
    else if constexpr (std::is_same_v<U, std::string_view> || std::is_same_v<U, std::string>)
        return FieldWant::text;
    else if constexpr (std::is_integral_v<U> && sizeof(U) == 1)
        return std::is_signed_v<U> ? FieldWant::i8 : FieldWant::u8;
    else if constexpr (std::is_integral_v<U> && sizeof(U) == 2)
        return std::is_signed_v<U> ? FieldWant::i16 : FieldWant::u16;
    else if constexpr (std::is_integral_v<U> && sizeof(U) == 4)
        return std::is_signed_v<U> ? FieldWant::i32 : FieldWant::u32;
    else if constexpr (std::is_integral_v<U> && sizeof(U) == 8)
        return std::is_signed_v<U> ? FieldWant::i64 : FieldWant::u64;
    else
        static_assert(sizeof(U) == 0,
                      "tessera: get_field<T> reads a number, bool, enum, std::string_view, "
                      "std::string or ts::StringId");
}

/// Where a field is: its `FieldInfo` and its byte offset in the value (`path` may name a
/// nested field, "a.b", and an array element, "a[2]").
struct FieldRef {
    const FieldInfo* info = nullptr;
    std::uint32_t offset = 0;
};
/// The field `path` of component `id`. @throws invalid_argument naming the component and field.
FieldRef resolve_field(ComponentId id, std::string_view path, const char* op);
FieldRef resolve_field(ComponentId id, std::size_t index, const char* op);

/// Writes `value` into field `f` of `e`'s `id` (checks and conversions in src/dynamic.cpp).
void set_field(World& w, Entity e, ComponentId id, FieldRef f, const FieldValue& value,
               const char* op);
/// Reads field `f` of `e`'s `id` as `want` into `out` (a `T`, or a `std::string_view` for text).
void get_field(const World& w, Entity e, ComponentId id, FieldRef f, FieldWant want, void* out,
               const char* op);

}  // namespace detail

template <class V>
void World::set_field(Entity e, ComponentId id, std::string_view field, const V& value) {
    detail::set_field(*this, e, id, detail::resolve_field(id, field, "World::set_field"),
                      detail::to_field_value(value), "World::set_field");
}

template <class V>
void World::set_field(Entity e, ComponentId id, std::size_t field, const V& value) {
    detail::set_field(*this, e, id, detail::resolve_field(id, field, "World::set_field"),
                      detail::to_field_value(value), "World::set_field");
}

template <class T>
T World::get_field(Entity e, ComponentId id, std::string_view field) const {
    return get_field<T>(e, id, detail::resolve_field(id, field, "World::get_field"));
}

template <class T>
T World::get_field(Entity e, ComponentId id, std::size_t field) const {
    return get_field<T>(e, id, detail::resolve_field(id, field, "World::get_field"));
}

template <class T>
T World::get_field(Entity e, ComponentId id, detail::FieldRef f) const {
    if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::string_view>) {
        std::string_view s;
        detail::get_field(*this, e, id, f, detail::FieldWant::text, &s, "World::get_field");
        return T(s);
    } else {
        T out{};
        detail::get_field(*this, e, id, f, detail::field_want<T>(), &out, "World::get_field");
        return out;
    }
}

template <class F>
void DynamicQuery::each_chunk(F&& fn) {
    detail::DeferScope defer(*storage_);
    for (const std::uint32_t index : state_.update()) {
        detail::Archetype& a = storage_->archetype(index);
        if (a.size == 0) continue;
        Chunk chunk(*storage_, a);
        fn(chunk);
    }
    defer.close();
}

}  // namespace tessera

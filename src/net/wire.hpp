// The replication message format (docs/networking.md, "The message"), shared by the
// Replicator (src/net/replicator.cpp) and the Mirror (src/net/mirror.cpp). Little-endian.
//
//   "TSN" u8 version      4 bytes
//   u64 tick              the server tick the message is as of
//   u64 baseline          the tick it is relative to; 0 = a full state
//   varint components     then per component: varint name length, name (UTF-8), u8 kind
//                         (tag, raw, fields), varint size, u64 layout fingerprint
//   u32 despawns          then per despawn: entity
//   u32 records           then per record: entity, varint (mask << 1 | exact), then the value
//                         of each non-tag component whose bit is in mask, in bit order
//
// An entity is varint index, varint generation. A raw value is its bytes; a fields value is
// each field element in schema order: numbers and bools as their bytes, std::string as varint
// length + bytes, nested records recursively.
#pragma once

#include "../utf8.hpp"

#include <tessera/component.hpp>
#include <tessera/entity.hpp>
#include <tessera/error.hpp>
#include <tessera/reflect.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

static_assert(std::endian::native == std::endian::little,
              "tessera::net: the message format is little-endian; big-endian hosts need byte "
              "swapping in src/net/wire.hpp");

namespace tessera::net::wire {

inline constexpr unsigned char magic[3] = {'T', 'S', 'N'};
inline constexpr std::uint8_t version = 1;
inline constexpr std::size_t max_components = 63;

/// How a component's values travel.
enum class Kind : std::uint8_t {
    tag = 0,     ///< no bytes
    raw = 1,     ///< the value's bytes (trivially copyable)
    fields = 2,  ///< field by field (reflected, not flat: std::string fields)
};

/// How `info`'s values travel.
inline Kind kind_of(const ComponentInfo& info) noexcept {
    if (info.is_tag()) return Kind::tag;
    if (info.schema != nullptr && !info.schema->flat) return Kind::fields;
    return Kind::raw;
}

namespace detail {
inline std::uint64_t mix(std::uint64_t h, std::uint64_t v) noexcept {
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xFF)) * 0x100000001b3ull;
    return h;
}
inline std::uint64_t mix(std::uint64_t h, std::string_view s) noexcept {
    h = mix(h, s.size());
    for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    return h;
}
inline std::uint64_t schema_hash(std::uint64_t h, const Schema& s) noexcept {
    h = mix(h, s.size);
    h = mix(h, s.fields.size());
    for (const FieldInfo& f : s.fields) {
        h = mix(h, f.name);
        h = mix(h, (std::uint64_t{static_cast<std::uint8_t>(f.type)} << 32) | f.count);
        h = mix(h, (std::uint64_t{f.offset} << 32) | f.stride);
        if (f.schema != nullptr) h = schema_hash(h, *f.schema);
    }
    return h;
}
}  // namespace detail

/// A hash of `info`'s size and field layout (names, types, counts, offsets): two programs
/// agree on a component's values when their fingerprints are equal.
inline std::uint64_t fingerprint(const ComponentInfo& info) noexcept {
    std::uint64_t h = detail::mix(0xcbf29ce484222325ull, info.size);
    if (info.schema != nullptr) h = detail::schema_hash(h, *info.schema);
    return h;
}

/// Writes into a byte vector from its start, growing it geometrically; the destructor cuts it
/// to what was written (so a reused vector keeps its capacity and is not zero-filled again).
class Writer {
public:
    explicit Writer(std::vector<std::byte>& out) noexcept : out_(out) {}
    ~Writer() { out_.resize(used_); }
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;
    /// Room for `n` bytes, taken: the caller writes them.
    std::byte* grow(std::size_t n) {
        if (used_ + n > out_.size())
            out_.resize(std::max<std::size_t>(out_.size() * 2, used_ + n + 256));
        std::byte* p = out_.data() + used_;
        used_ += n;
        return p;
    }
    void bytes(const void* p, std::size_t n) {
        if (n != 0) std::memcpy(grow(n), p, n);
    }
    void u8(std::uint8_t v) { *grow(1) = static_cast<std::byte>(v); }
    void u32(std::uint32_t v) { bytes(&v, 4); }
    void u64(std::uint64_t v) { bytes(&v, 8); }
    void varint(std::uint64_t v) {
        std::byte* p = grow(10);
        std::size_t n = 0;
        while (v >= 0x80) {
            p[n++] = static_cast<std::byte>((v & 0x7F) | 0x80);
            v >>= 7;
        }
        p[n++] = static_cast<std::byte>(v);
        used_ -= 10 - n;
    }
    void entity(Entity e) {
        varint(e.index);
        varint(e.generation);
    }
    void text(std::string_view s) {
        varint(s.size());
        bytes(s.data(), s.size());
    }
    [[nodiscard]] std::size_t size() const noexcept { return used_; }
    /// Room for up to `n` bytes, not taken: write them, then `commit` the end.
    std::byte* reserve(std::size_t n) {
        if (used_ + n > out_.size())
            out_.resize(std::max<std::size_t>(out_.size() * 2, used_ + n + 256));
        return out_.data() + used_;
    }
    /// Takes the bytes written since `reserve` up to `end`.
    void commit(const std::byte* end) noexcept {
        used_ = static_cast<std::size_t>(end - out_.data());
    }
    /// Writes `v` as a varint at `p`; returns the end.
    static std::byte* put_varint(std::byte* p, std::uint64_t v) noexcept {
        while (v >= 0x80) {
            *p++ = static_cast<std::byte>((v & 0x7F) | 0x80);
            v >>= 7;
        }
        *p++ = static_cast<std::byte>(v);
        return p;
    }
    /// Overwrites the u32 at `at`.
    void patch_u32(std::size_t at, std::uint32_t v) noexcept {
        std::memcpy(out_.data() + at, &v, 4);
    }

private:
    std::vector<std::byte>& out_;
    std::size_t used_ = 0;
};

/// Reads a message; every read is bounds-checked and a failure throws
/// `Error(invalid_argument)` "Mirror::apply: <why>".
class Reader {
public:
    explicit Reader(std::span<const std::byte> in) noexcept : in_(in) {}
    [[noreturn]] static void fail(const std::string& why) {
        throw Error(errc::invalid_argument, "Mirror::apply: " + why);
    }
    [[nodiscard]] std::size_t left() const noexcept { return in_.size() - at_; }
    [[nodiscard]] std::size_t position() const noexcept { return at_; }
    void seek(std::size_t at) noexcept { at_ = at; }
    const std::byte* take(std::size_t n, const char* what) {
        if (n > left()) fail(std::string("the message is truncated (in ") + what + ")");
        const std::byte* p = in_.data() + at_;
        at_ += n;
        return p;
    }
    std::uint8_t u8(const char* what) { return static_cast<std::uint8_t>(*take(1, what)); }
    std::uint32_t u32(const char* what) {
        std::uint32_t v;
        std::memcpy(&v, take(4, what), 4);
        return v;
    }
    std::uint64_t u64(const char* what) {
        std::uint64_t v;
        std::memcpy(&v, take(8, what), 8);
        return v;
    }
    std::uint64_t varint(const char* what) {
        std::uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            const auto b = static_cast<std::uint8_t>(*take(1, what));
            if (shift == 63 && b > 1) break;
            v |= std::uint64_t{b & 0x7Fu} << shift;
            if ((b & 0x80) == 0) return v;
        }
        fail(std::string("a malformed number (in ") + what + ")");
    }
    std::uint32_t varint32(const char* what) {
        const std::uint64_t v = varint(what);
        if (v > 0xFFFFFFFFu) fail(std::string("a number out of range (in ") + what + ")");
        return static_cast<std::uint32_t>(v);
    }
    /// A count of items of at least `item` bytes each, checked against what is left.
    std::uint32_t count(std::uint32_t n, std::size_t item, const char* what) {
        if (std::size_t{n} * item > left())
            fail(std::string("a count larger than the message can hold (") + what + ": " +
                 std::to_string(n) + ")");
        return n;
    }
    /// An entity handle of the server: never null, generation never 0.
    Entity entity(const char* what) {
        const std::uint32_t index = varint32(what);
        const std::uint32_t generation = varint32(what);
        if (index == 0xFFFFFFFFu || generation == 0 || generation == 0xFFFFFFFFu)
            fail(std::string("a forged entity handle ") + std::to_string(index) + ":" +
                 std::to_string(generation) + " (in " + what + ")");
        return Entity{index, generation};
    }
    std::string_view text(const char* what) {
        const std::uint64_t n = varint(what);
        if (n > left()) fail(std::string("the message is truncated (in ") + what + ")");
        const std::byte* p = take(static_cast<std::size_t>(n), what);
        return {reinterpret_cast<const char*>(p), static_cast<std::size_t>(n)};
    }

private:
    std::span<const std::byte> in_;
    std::size_t at_ = 0;
};

/// Calls `fn(field, element address)` for every element of every field of `schema` at `v`.
template <class Byte, class F>
void each_element(const Schema& schema, Byte* v, F&& fn) {
    for (const FieldInfo& f : schema.fields) {
        for (std::uint32_t k = 0; k < f.count; ++k) fn(f, v + f.offset + std::size_t{k} * f.stride);
    }
}

/// Writes a fields value (Kind::fields).
inline void write_fields(Writer& w, const Schema& schema, const std::byte* v) {
    each_element(schema, v, [&](const FieldInfo& f, const std::byte* p) {
        if (f.type == Field::record)
            write_fields(w, *f.schema, p);
        else if (f.type == Field::string)
            w.text(*reinterpret_cast<const std::string*>(p));
        else
            w.bytes(p, field_size(f.type));
    });
}

/// Writes one value of `info` (kind raw or fields).
inline void write_value(Writer& w, const ComponentInfo& info, Kind kind, const std::byte* v) {
    if (kind == Kind::raw)
        w.bytes(v, info.size);
    else
        write_fields(w, *info.schema, v);
}

/// "component 'Name' of entity 3:1"
inline std::string place(std::string_view component, Entity e) {
    return "component '" + std::string(component) + "' of entity " + std::to_string(e.index) + ":" +
           std::to_string(e.generation);
}

/// Checks the bools of a flat value read as bytes.
inline void check_flat(const Schema& schema, const std::byte* v, const std::string& where) {
    each_element(schema, v, [&](const FieldInfo& f, const std::byte* p) {
        if (f.type == Field::record)
            check_flat(*f.schema, p, where);
        else if (f.type == Field::boolean && *p != std::byte{0} && *p != std::byte{1})
            Reader::fail(where + ": field '" + std::string(f.name) +
                         "' holds a bool that is not 0 or 1");
    });
}

/// Whether a flat schema has a field `check_flat` looks at.
inline bool needs_check(const Schema& schema) noexcept {
    for (const FieldInfo& f : schema.fields) {
        if (f.type == Field::boolean) return true;
        if (f.type == Field::record && needs_check(*f.schema)) return true;
    }
    return false;
}

/// Checks a fields value and skips it.
inline void check_fields(Reader& r, const Schema& schema, const std::string& where) {
    for (const FieldInfo& f : schema.fields) {
        for (std::uint32_t k = 0; k < f.count; ++k) {
            if (f.type == Field::record) {
                check_fields(r, *f.schema, where);
            } else if (f.type == Field::string) {
                const std::string_view s = r.text("a text field");
                if (const std::size_t at = tessera::detail::invalid_utf8_at(s);
                    at != std::string_view::npos)
                    Reader::fail(where + ": field '" + std::string(f.name) +
                                 "': the text is not valid UTF-8 (byte " + std::to_string(at) +
                                 ")");
            } else {
                const std::byte* p = r.take(field_size(f.type), "a field");
                if (f.type == Field::boolean && *p != std::byte{0} && *p != std::byte{1})
                    Reader::fail(where + ": field '" + std::string(f.name) +
                                 "' holds a bool that is not 0 or 1");
            }
        }
    }
}

/// Checks one value of `info` and skips it.
inline void check_value(Reader& r, const ComponentInfo& info, Kind kind, const std::string& where) {
    if (kind == Kind::raw) {
        const std::byte* p = r.take(info.size, "a value");
        if (info.schema != nullptr && needs_check(*info.schema)) check_flat(*info.schema, p, where);
    } else {
        check_fields(r, *info.schema, where);
    }
}

/// Reads a checked fields value into the constructed value at `v`.
inline void read_fields(Reader& r, const Schema& schema, std::byte* v) {
    each_element(schema, v, [&](const FieldInfo& f, std::byte* p) {
        if (f.type == Field::record) {
            read_fields(r, *f.schema, p);
        } else if (f.type == Field::string) {
            const std::string_view s = r.text("a text field");
            reinterpret_cast<std::string*>(p)->assign(s.data(), s.size());
        } else {
            std::memcpy(p, r.take(field_size(f.type), "a field"), field_size(f.type));
        }
    });
}

/// Reads a checked value of `info` into `v`: uninitialised for raw (bytes copied), a
/// constructed value for fields (fields assigned).
inline void read_value(Reader& r, const ComponentInfo& info, Kind kind, std::byte* v) {
    if (kind == Kind::raw)
        std::memcpy(v, r.take(info.size, "a value"), info.size);
    else
        read_fields(r, *info.schema, v);
}

}  // namespace tessera::net::wire

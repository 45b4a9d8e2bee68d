// Runtime components: definitions, the string table, field access by name, id-based add /
// remove / has and queries (dynamic.hpp).
#include <tessera/commands.hpp>
#include <tessera/detail/field_value.hpp>
#include <tessera/detail/operations.hpp>
#include <tessera/dynamic.hpp>
#include <tessera/error.hpp>
#include <tessera/reflect.hpp>

#include "utf8.hpp"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <string>

namespace tessera {

// ---------------------------------------------------------------------------------- Field

std::string_view to_string(Field type) noexcept {
    switch (type) {
        case Field::f32: return "f32";
        case Field::f64: return "f64";
        case Field::i8: return "i8";
        case Field::i16: return "i16";
        case Field::i32: return "i32";
        case Field::u8: return "u8";
        case Field::u16: return "u16";
        case Field::u32: return "u32";
        case Field::boolean: return "boolean";
        case Field::str: return "str";
        case Field::i64: return "i64";
        case Field::u64: return "u64";
        case Field::string: return "string";
        case Field::record: return "record";
    }
    return "?";
}

std::size_t field_size(Field type) noexcept {
    switch (type) {
        case Field::i8:
        case Field::u8:
        case Field::boolean: return 1;
        case Field::i16:
        case Field::u16: return 2;
        case Field::f32:
        case Field::i32:
        case Field::u32:
        case Field::str: return 4;
        case Field::f64:
        case Field::i64:
        case Field::u64: return 8;
        case Field::string: return sizeof(std::string);
        case Field::record: return 0;
    }
    return 0;
}

// ---------------------------------------------------------------------------- StringTable

namespace {
constexpr std::size_t block_bytes = 4096;

std::uint64_t hash_text(std::string_view s) noexcept {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    return h ^ (h >> 29);
}
}  // namespace

StringTable::StringTable(std::pmr::memory_resource* mr)
    : mr_(mr), strings_(mr), buckets_(mr), blocks_(mr) {
    strings_.push_back(std::string_view());  // id 0 is ""
    grow_buckets();
}

// After the delegated constructor the object is complete: if interning throws, its
// destructor runs and frees the blocks.
StringTable::StringTable(const StringTable& other) : StringTable(other.mr_) {
    strings_.reserve(other.strings_.size());
    for (std::size_t i = 1; i < other.strings_.size(); ++i) intern(other.strings_[i]);
}

StringTable::~StringTable() {
    for (const auto& [data, bytes] : blocks_) mr_->deallocate(data, bytes, 1);
}

void StringTable::grow_buckets() {
    std::pmr::vector<std::uint32_t> bigger(std::max<std::size_t>(16, buckets_.size() * 2), 0u,
                                           buckets_.get_allocator());
    const std::size_t mask = bigger.size() - 1;
    for (std::size_t id = 1; id < strings_.size(); ++id) {
        std::size_t i = hash_text(strings_[id]) & mask;
        while (bigger[i] != 0) i = (i + 1) & mask;
        bigger[i] = static_cast<std::uint32_t>(id + 1);
    }
    buckets_.swap(bigger);
}

std::uint32_t StringTable::find(std::string_view s) const noexcept {
    if (s.empty()) return 0;
    const std::size_t mask = buckets_.size() - 1;
    for (std::size_t i = hash_text(s) & mask; buckets_[i] != 0; i = (i + 1) & mask) {
        if (strings_[buckets_[i] - 1] == s) return buckets_[i] - 1;
    }
    return 0xFFFFFFFFu;
}

char* StringTable::store(std::string_view s) {
    if (blocks_.empty() || used_ + s.size() > blocks_.back().second) {
        const std::size_t bytes = std::max(block_bytes, s.size());
        if (blocks_.size() == blocks_.capacity()) blocks_.reserve(blocks_.size() * 2 + 4);
        blocks_.emplace_back(static_cast<char*>(mr_->allocate(bytes, 1)), bytes);
        used_ = 0;
    }
    char* out = blocks_.back().first + used_;
    std::memcpy(out, s.data(), s.size());
    used_ += s.size();
    return out;
}

std::uint32_t StringTable::intern(std::string_view s) {
    if (const std::uint32_t known = find(s); known != 0xFFFFFFFFu) return known;
    // Every string in the table is valid UTF-8, so a world can always be written as JSON.
    if (const std::size_t at = detail::invalid_utf8_at(s); at != std::string_view::npos)
        throw Error(
            errc::invalid_argument,
            "StringTable::intern: the text is not valid UTF-8 (byte " + std::to_string(at) + ")");
    if (strings_.size() >= 0xFFFFFFF0u)
        throw Error(errc::limit_exceeded, "StringTable::intern: the table is full");
    if ((strings_.size() + 1) * 2 > buckets_.size()) grow_buckets();
    if (strings_.size() == strings_.capacity()) strings_.reserve(strings_.size() * 2);
    const std::string_view kept(store(s), s.size());  // nothing below throws
    const auto id = static_cast<std::uint32_t>(strings_.size());
    strings_.push_back(kept);
    const std::size_t mask = buckets_.size() - 1;
    std::size_t i = hash_text(kept) & mask;
    while (buckets_[i] != 0) i = (i + 1) & mask;
    buckets_[i] = id + 1;
    return id;
}

std::string_view StringTable::get(std::uint32_t id) const {
    if (id >= strings_.size()) {
        throw Error(errc::invalid_argument, "StringTable::get: no string has id " +
                                                std::to_string(id) + " (the table has " +
                                                std::to_string(strings_.size()) + ")");
    }
    return strings_[id];
}

// ------------------------------------------------------------------------- field access

namespace detail {

namespace {

[[noreturn]] void bad_field(const char* op, const ComponentInfo& info, std::string_view field,
                            const std::string& why) {
    throw Error(errc::invalid_argument,
                std::string(op) + "(" + std::string(info.name) + ", " + quote(field) + "): " + why);
}

const Schema& schema_of(const ComponentInfo& info, std::string_view field, const char* op) {
    if (info.schema == nullptr) {
        bad_field(op, info, field,
                  std::string(info.name) +
                      " has no field metadata (describe it with TESSERA_REFLECT, or define it "
                      "with World::component)");
    }
    return *info.schema;
}

// A field that holds one value (not a whole array or struct).
void check_leaf(const ComponentInfo& info, std::string_view path, const FieldInfo& f, bool element,
                const char* op) {
    if (f.count > 1 && !element) {
        bad_field(op, info, path,
                  "the field is an array of " + std::to_string(f.count) +
                      "; name an element, e.g. " + quote(std::string(f.name) + "[0]"));
    }
    if (f.type == Field::record) {
        bad_field(
            op, info, path,
            "the field is a struct; name one of its fields, e.g. " +
                quote(std::string(f.name) + "." +
                      std::string(f.schema->fields.empty() ? "x" : f.schema->fields[0].name)));
    }
}

}  // namespace

FieldRef resolve_field(ComponentId id, std::string_view path, const char* op) {
    const ComponentInfo& info = checked_info(id, op);
    const Schema* schema = &schema_of(info, path, op);
    std::uint32_t offset = 0;
    std::string_view rest = path;
    while (true) {
        const std::size_t end = rest.find_first_of(".[");
        const std::string_view name = rest.substr(0, end);
        const FieldInfo* f = schema->find(name);
        if (f == nullptr) bad_field(op, info, path, "no field " + quote(name));
        offset += f->offset;
        rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
        bool element = false;
        if (!rest.empty() && rest[0] == '[') {
            if (f->count <= 1) {
                bad_field(op, info, path, quote(f->name) + " is not an array: it takes no index");
            }
            const std::size_t close = rest.find(']');
            std::uint64_t index = 0;
            const std::string_view digits =
                close == std::string_view::npos ? std::string_view() : rest.substr(1, close - 1);
            if (digits.empty() || digits.size() > 9 ||
                digits.find_first_not_of("0123456789") != std::string_view::npos) {
                bad_field(op, info, path, "a bad array index");
            }
            for (const char c : digits) index = index * 10 + static_cast<unsigned>(c - '0');
            if (index >= f->count) {
                bad_field(op, info, path,
                          "index " + std::to_string(index) + " is past the array's " +
                              std::to_string(f->count) + " elements");
            }
            offset += static_cast<std::uint32_t>(index) * f->stride;
            rest = rest.substr(close + 1);
            element = true;
        }
        if (rest.empty()) {
            check_leaf(info, path, *f, element, op);
            return {f, offset};
        }
        if (rest[0] != '.' || f->type != Field::record || (f->count > 1 && !element))
            bad_field(op, info, path, quote(f->name) + " has no nested fields there");
        schema = f->schema;
        rest = rest.substr(1);
    }
}

FieldRef resolve_field(ComponentId id, std::size_t index, const char* op) {
    const ComponentInfo& info = checked_info(id, op);
    const Schema& schema = schema_of(info, std::string("#") + std::to_string(index), op);
    if (index >= schema.fields.size()) {
        bad_field(op, info, std::string("#") + std::to_string(index),
                  "no field of that index (it has " + std::to_string(schema.fields.size()) + ")");
    }
    const FieldInfo& f = schema.fields[index];
    check_leaf(info, f.name, f, false, op);
    return {&f, f.offset};
}

namespace {

// The value of `e`'s component `id`, or the right error.
std::byte* value_of(const Storage& s, Entity e, ComponentId id, const char* op) {
    std::byte* p = s.try_value(e, id);
    if (p == nullptr) throw_lookup(s, op, e, id);
    return p;
}

template <class T>
bool fits(const FieldValue& v) noexcept {
    if (v.kind == FieldValue::Kind::signed_int) {
        if constexpr (std::is_signed_v<T>) {
            return v.i >= std::numeric_limits<T>::min() && v.i <= std::numeric_limits<T>::max();
        } else {
            return v.i >= 0 && static_cast<std::uint64_t>(v.i) <= std::numeric_limits<T>::max();
        }
    }
    if constexpr (std::is_signed_v<T>)
        return v.u <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    else
        return v.u <= std::numeric_limits<T>::max();
}

template <class T>
void store_int(std::byte* p, const FieldValue& v) noexcept {
    const T x = v.kind == FieldValue::Kind::signed_int ? static_cast<T>(v.i) : static_cast<T>(v.u);
    std::memcpy(p, &x, sizeof(T));
}

const char* kind_name(FieldValue::Kind k) noexcept {
    switch (k) {
        case FieldValue::Kind::signed_int:
        case FieldValue::Kind::unsigned_int: return "an integer";
        case FieldValue::Kind::floating: return "a floating-point number";
        case FieldValue::Kind::boolean: return "a bool";
        case FieldValue::Kind::text: return "a string";
        case FieldValue::Kind::string_id: return "a StringId";
    }
    return "a value";
}

// Writes `v` into the field at `p` of type `f`, or throws without writing.
void write_value(Storage& s, std::byte* p, const FieldInfo& f, const FieldValue& v,
                 const std::function<void(const std::string&)>& fail) {
    using K = FieldValue::Kind;
    const bool integer = v.kind == K::signed_int || v.kind == K::unsigned_int;
    auto wrong = [&] {
        fail(std::string("a field of type ") + std::string(to_string(f.type)) + " can't take " +
             kind_name(v.kind));
    };
    auto range = [&] {
        fail("the value is out of the range of " + std::string(to_string(f.type)));
    };
    auto check_text = [&] {
        if (const std::size_t at = invalid_utf8_at(v.s); at != std::string_view::npos)
            fail("the text is not valid UTF-8 (byte " + std::to_string(at) + ")");
    };
    auto put_int = [&]<class T>(T*) {
        if (!integer) wrong();
        if (!fits<T>(v)) range();
        store_int<T>(p, v);
    };
    switch (f.type) {
        case Field::f32: {
            if (!integer && v.kind != K::floating) wrong();
            const double d = v.kind == K::floating     ? v.d
                             : v.kind == K::signed_int ? static_cast<double>(v.i)
                                                       : static_cast<double>(v.u);
            if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max()) range();
            const auto x = static_cast<float>(d);
            std::memcpy(p, &x, 4);
            return;
        }
        case Field::f64: {
            if (!integer && v.kind != K::floating) wrong();
            const double d = v.kind == K::floating     ? v.d
                             : v.kind == K::signed_int ? static_cast<double>(v.i)
                                                       : static_cast<double>(v.u);
            std::memcpy(p, &d, 8);
            return;
        }
        case Field::i8: return put_int(static_cast<std::int8_t*>(nullptr));
        case Field::i16: return put_int(static_cast<std::int16_t*>(nullptr));
        case Field::i32: return put_int(static_cast<std::int32_t*>(nullptr));
        case Field::i64: return put_int(static_cast<std::int64_t*>(nullptr));
        case Field::u8: return put_int(static_cast<std::uint8_t*>(nullptr));
        case Field::u16: return put_int(static_cast<std::uint16_t*>(nullptr));
        case Field::u32: return put_int(static_cast<std::uint32_t*>(nullptr));
        case Field::u64: return put_int(static_cast<std::uint64_t*>(nullptr));
        case Field::boolean: {
            if (v.kind != K::boolean) wrong();
            const std::uint8_t b = v.b ? 1 : 0;
            std::memcpy(p, &b, 1);
            return;
        }
        case Field::str: {
            std::uint32_t id = 0;
            if (v.kind == K::text) {
                check_text();
                id = s.strings().intern(v.s);
            } else if (v.kind == K::string_id) {
                const StringTable* table = s.strings_if();
                if (v.u >= (table == nullptr ? 1 : table->size()))
                    fail("StringId " + std::to_string(v.u) + " is not in the world's strings");
                id = static_cast<std::uint32_t>(v.u);
            } else {
                wrong();
            }
            std::memcpy(p, &id, 4);
            return;
        }
        case Field::string:
            if (v.kind != K::text) wrong();
            check_text();
            reinterpret_cast<std::string*>(p)->assign(v.s);
            return;
        case Field::record: wrong();
    }
}

}  // namespace

void set_field(World& w, Entity e, ComponentId id, FieldRef f, const FieldValue& value,
               const char* op) {
    Storage& s = w.storage();
    std::byte* data = value_of(s, e, id, op);  // table or sparse
    if (s.writes_watched()) [[unlikely]]
        check_write(s, op, e, id);
    const bool hooked = s.hooked(id);
    // Observers, and interning a text into the world's strings, are the world's thread's.
    if (hooked || (f.info->type == Field::str && value.kind == FieldValue::Kind::text))
        check_not_parallel(s, op);
    std::byte* p = data + f.offset;
    write_value(s, p, *f.info, value, [&](const std::string& why) {
        std::ostringstream os;
        os << op << '(' << e << ", " << component_info(id).name << ", " << quote(f.info->name)
           << "): " << why;
        throw Error(errc::invalid_argument, os.str());
    });
    s.stamp_changed_of(e, id);
    if (hooked) s.hooks().set(s, e, id);
}

void get_field(const World& w, Entity e, ComponentId id, FieldRef f, FieldWant want, void* out,
               const char* op) {
    const Storage& s = w.storage();
    const std::byte* p = value_of(s, e, id, op) + f.offset;
    const Field t = f.info->type;
    auto fail = [&] {
        std::ostringstream os;
        os << op << '(' << e << ", " << component_info(id).name << ", " << quote(f.info->name)
           << "): the field is " << to_string(t) << "; read it as its own type";
        throw Error(errc::invalid_argument, os.str());
    };
    // `d` = the field as a double, when it is a number.
    auto numeric = [&](double& d) {
        if (t == Field::record) return false;
        return visit_scalar(t, p, [&](const auto& v) {
            if constexpr (is_number_v<decltype(v)>) {
                d = static_cast<double>(v);
                return true;
            } else {
                return false;
            }
        });
    };
    auto exact = [&](Field expected, std::size_t bytes) {
        if (t != expected) fail();
        std::memcpy(out, p, bytes);
    };
    switch (want) {
        case FieldWant::f32: return exact(Field::f32, 4);
        case FieldWant::f64: {
            double d = 0;
            if (!numeric(d)) fail();
            std::memcpy(out, &d, 8);
            return;
        }
        case FieldWant::i8: return exact(Field::i8, 1);
        case FieldWant::i16: return exact(Field::i16, 2);
        case FieldWant::i32: return exact(Field::i32, 4);
        case FieldWant::i64: return exact(Field::i64, 8);
        case FieldWant::u8: return exact(Field::u8, 1);
        case FieldWant::u16: return exact(Field::u16, 2);
        case FieldWant::u32: return exact(Field::u32, 4);
        case FieldWant::u64: return exact(Field::u64, 8);
        case FieldWant::boolean: {
            if (t != Field::boolean) fail();
            *static_cast<bool*>(out) = *p != std::byte{0};
            return;
        }
        case FieldWant::string_id: return exact(Field::str, 4);
        case FieldWant::text: {
            auto* view = static_cast<std::string_view*>(out);
            if (t == Field::string) {
                *view = *reinterpret_cast<const std::string*>(p);
            } else if (t == Field::str) {
                std::uint32_t sid = 0;
                std::memcpy(&sid, p, 4);
                const StringTable* table = s.strings_if();
                *view = sid == 0 || table == nullptr ? std::string_view() : table->get(sid);
            } else {
                fail();
            }
            return;
        }
    }
}

}  // namespace detail

// ------------------------------------------------------------------------------- World

namespace {
[[noreturn]] void throw_relation_only(const char* op, ComponentId id) {
    const std::string name(component_info(id).name);
    throw Error(errc::invalid_argument, std::string(op) + "(" + name + "): " + name +
                                            " belongs to a relation, which only relate/unrelate "
                                            "add and remove");
}
}  // namespace

ComponentId World::component(std::string_view name, std::initializer_list<FieldDef> schema) {
    return component(name, std::span<const FieldDef>(schema.begin(), schema.size()),
                     ComponentOptions{});
}

ComponentId World::component(std::string_view name, std::initializer_list<FieldDef> schema,
                             const ComponentOptions& options) {
    return component(name, std::span<const FieldDef>(schema.begin(), schema.size()), options);
}

ComponentId World::component(std::string_view name, std::span<const FieldDef> schema,
                             const ComponentOptions& options) {
    detail::check_not_parallel(*storage_, "World::component");
    const ComponentId id = detail::register_runtime(name, schema, options);
    storage_->ensure_component(id);
    return id;
}

namespace detail {
namespace {

void destroy_strings(void* object, std::pmr::memory_resource* mr) noexcept {
    static_cast<StringTable*>(object)->~StringTable();
    mr->deallocate(object, sizeof(StringTable), alignof(StringTable));
}

/// A string table allocated from `mr`, made by `make` (a constructor call).
template <class Make>
StringTable* new_strings(std::pmr::memory_resource* mr, Make&& make) {
    void* mem = mr->allocate(sizeof(StringTable), alignof(StringTable));
    try {
        return make(mem);
    } catch (...) {
        mr->deallocate(mem, sizeof(StringTable), alignof(StringTable));
        throw;
    }
}

void* copy_strings(const void* object, Storage& dst) {
    return new_strings(dst.resource(), [object](void* mem) {
        return ::new (mem) StringTable(*static_cast<const StringTable*>(object));
    });
}

}  // namespace

void Storage::make_strings() {
    std::pmr::memory_resource* mr = resource();
    strings_ = {new_strings(mr, [mr](void* mem) { return ::new (mem) StringTable(mr); }),
                &destroy_strings, &copy_strings, nullptr};
}

}  // namespace detail

StringTable& World::strings() {
    detail::check_not_parallel(*storage_, "World::strings");  // interning changes the table
    return storage_->strings();
}

const StringTable& World::strings() const {
    static const StringTable empty;  // a world that never interned anything
    const StringTable* table = storage_->strings_if();
    return table != nullptr ? *table : empty;
}

void World::add(Entity e, ComponentId id) {
    const detail::EntryCheck entry(*storage_);
    constexpr const char* op = "World::add";
    const ComponentInfo& info = detail::checked_info(id, op);
    detail::Storage& s = *storage_;
    s.check_plain({&id, 1}, op);  // before anything: a relation's component is never plain
    if (!info.constructible()) {
        throw Error(errc::invalid_argument, std::string(op) + "(" + std::string(info.name) +
                                                "): the type is not default constructible; "
                                                "add a value with add<T>(e, value)");
    }
    if (!is_alive(e)) detail::throw_not_alive(op, e, id);
    detail::check_not_parallel(s, op);  // before ensure_component changes the world
    s.ensure_component(id);
    if (s.deferring()) {
        s.deferred().reserve(1);
        s.reserve_watch(1);
        std::byte* buffer = s.deferred().allocate_value(info);
        info.construct_value(buffer);
        s.watch(e, id, s.deferred().mark());
        s.deferred().push_add(e, info, buffer, 1);
        return;
    }
    // The value is made first (its constructor may throw), then relocated into the table.
    const std::size_t bytes = std::max<std::size_t>(info.size, 1);
    const std::size_t align = std::max<std::size_t>(info.alignment, alignof(std::max_align_t));
    void* value = s.resource()->allocate(bytes, align);
    struct Free {
        detail::Storage& s;
        void* p;
        std::size_t bytes, align;
        ~Free() { s.resource()->deallocate(p, bytes, align); }
    } free_value{s, value, bytes, align};
    info.construct_value(value);
    std::byte* const values[] = {static_cast<std::byte*>(value)};
    bool consumed = false;  // set once the value is in the table (an observer may throw later)
    const detail::Commit done{[](void* flag) noexcept { *static_cast<bool*>(flag) = true; },
                              &consumed};
    try {
        detail::apply_add(s, e, {&id, 1}, values, op, done);
    } catch (...) {
        if (!consumed && info.destroy != nullptr) info.destroy(value, 1);
        throw;
    }
}

bool World::remove(Entity e, ComponentId id) {
    const detail::EntryCheck entry(*storage_);
    detail::checked_info(id, "World::remove");
    detail::Storage& s = *storage_;
    s.check_plain({&id, 1}, "World::remove");  // refused whether or not `e` has it
    if (s.deferring()) return remove_deferred(e, {&id, 1});
    return detail::apply_remove(s, e, {&id, 1}, "World::remove");
}

bool World::has(Entity e, ComponentId id) const noexcept {
    return id.valid() && storage_->has(e, id);
}

void CommandBuffer::add(Entity e, ComponentId id) {
    const ComponentInfo& info = detail::checked_info(id, "CommandBuffer::add");
    // ChildOf and Targets<R> are refused now; another relation's data when applied (only the
    // world knows whether its type is a relation there).
    if (detail::Storage::relation_only(id)) throw_relation_only("CommandBuffer::add", id);
    if (!info.constructible()) {
        throw Error(errc::invalid_argument, "CommandBuffer::add(" + std::string(info.name) +
                                                "): the type is not default constructible");
    }
    begin_record();
    queue_.reserve(1);
    std::byte* buffer = queue_.allocate_value(info);
    info.construct_value(buffer);
    queue_.push_add(e, info, buffer, 1);
}

void CommandBuffer::remove(Entity e, ComponentId id) {
    detail::checked_info(id, "CommandBuffer::remove");
    if (detail::Storage::relation_only(id)) throw_relation_only("CommandBuffer::remove", id);
    begin_record();
    queue_.reserve(1);
    queue_.push(detail::Command::Kind::remove, e, id, 1);
}

namespace detail {
/// Throws invalid_argument (naming `op`, `e`, `id`) when a remove of `id` from `e` is queued:
/// the flag set now would go with the component (world.cpp).
void check_enable(Storage& s, const char* op, Entity e, ComponentId id);
}  // namespace detail

void World::enable(Entity e, ComponentId id, bool on) {
    detail::checked_info(id, "World::enable");
    std::uint8_t& flag = storage_->enable_flag(e, id, "World::enable");
    if (storage_->writes_watched()) [[unlikely]]
        detail::check_enable(*storage_, "World::enable", e, id);
    flag = on ? 1 : 0;
}

bool World::is_enabled(Entity e, ComponentId id) const {
    detail::checked_info(id, "World::is_enabled");
    return storage_->enable_flag(e, id, "World::is_enabled") != 0;
}

namespace {
std::uint64_t tick_by_id(detail::Storage& s, Entity e, ComponentId id, bool added, const char* op) {
    const ComponentInfo& info = detail::checked_info(id, op);
    if (!info.track_changes || info.is_tag()) {
        throw Error(errc::invalid_argument,
                    std::string(op) + "(" + std::string(info.name) + "): " +
                        (info.is_tag() ? "tags carry no change ticks"
                                       : "the component was defined with track_changes = false"));
    }
    const detail::Location loc = s.try_location(e, id);
    if (loc.archetype == nullptr) {
        if (const detail::SparseSet* set = s.sparse(id)) {  // sparse sets keep ticks already
            const std::uint32_t row = set->find(e);
            if (row == detail::SparseSet::no_row) detail::throw_lookup(s, op, e, id);
            return added ? set->added()[row] : set->changed_at(row);
        }
        detail::throw_lookup(s, op, e, id);
    }
    s.track(id);
    const detail::Column& col = loc.archetype->columns[static_cast<std::uint32_t>(loc.column)];
    return added ? col.added[loc.row] : col.changed_at(loc.row);
}
}  // namespace

std::uint64_t World::changed_tick(Entity e, ComponentId id) {
    return tick_by_id(*storage_, e, id, false, "World::changed_tick");
}

std::uint64_t World::added_tick(Entity e, ComponentId id) {
    return tick_by_id(*storage_, e, id, true, "World::added_tick");
}

DynamicQuery World::query_dynamic(QuerySpec spec) {
    detail::check_not_parallel(*storage_, "World::query_dynamic");
    detail::check_spec(spec, "World::query_dynamic");
    return DynamicQuery(*this, std::move(spec));
}

DynamicQuery::DynamicQuery(World& world, QuerySpec spec)
    : storage_(&world.storage()), state_(world.storage()) {
    detail::check_spec(spec, "DynamicQuery");
    state_.spec = std::move(spec);
}

std::size_t DynamicQuery::count() {
    std::size_t n = 0;
    for (const std::uint32_t index : state_.update()) n += storage_->archetype(index).size;
    return n;
}

}  // namespace tessera

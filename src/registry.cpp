// The process-wide component registry: the only global state in tessera.
//
// Ids are dense and never reused. Records live in fixed chunks that are published once and never
// move, so `component_info(id)` reads without a lock while another thread registers.
#include <tessera/component.hpp>
#include <tessera/error.hpp>
#include <tessera/reflect.hpp>

#include "utf8.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <typeinfo>
#include <unordered_map>
#include <vector>

namespace tessera {
namespace {

constexpr std::size_t chunk_bits = 8;
constexpr std::size_t chunk_size = std::size_t{1} << chunk_bits;
constexpr std::size_t max_chunks = 4096;  // 1,048,576 component ids

struct Registry {
    std::mutex mutex;
    std::array<std::atomic<ComponentInfo*>, max_chunks> chunks{};
    std::atomic<std::uint32_t> count{0};
    std::deque<std::string> names;  // stable storage for ComponentInfo::name
    std::unordered_map<std::string, std::uint32_t> by_name;  // by mangled name
    // Types without linkage by the address of their type_info: std::type_index equality would
    // compare mangled names on clang, which are equal for two `{anonymous}::Label`s.
    std::unordered_map<const std::type_info*, std::uint32_t> by_type;
    // Every component by readable name (ambiguous_id when several C++ types share one).
    std::unordered_map<std::string, std::uint32_t> by_readable;
    // Runtime components: their schemas, owned here (records never die).
    struct Runtime {
        std::deque<std::string> field_names;
        std::vector<FieldInfo> fields;
        Schema schema;
        ComponentOptions options;
    };
    std::deque<Runtime> runtimes;
};

constexpr std::uint32_t ambiguous_id = 0xFFFFFFFEu;

Registry& registry() {
    // Never destroyed: worlds and components may outlive static destruction order.
    static Registry* r = new Registry;
    return *r;
}

// Types without linkage can't be matched across shared libraries by name, and two of them may
// share a name (`{anonymous}::Label` in two files), so they are keyed by type_info identity.
// GCC marks internal-linkage type names with a leading '*'; the readable name catches the rest
// (local classes, lambdas, and compilers that don't mark).
bool has_linkage(const std::type_info& type, std::string_view name) {
    if (type.name()[0] == '*') return false;
    for (std::string_view marker :
         {"anonymous", "<lambda", "(lambda", "<unnamed", "{unnamed", ")::"}) {
        if (name.find(marker) != std::string_view::npos) return false;
    }
    return true;
}

std::string layout(std::uint32_t size, std::uint32_t alignment) {
    return "size " + std::to_string(size) + ", alignment " + std::to_string(alignment);
}

// Assigns the next id to `info` (named `name`), after `index(id)` recorded it in the caller's
// map; a failure changes nothing. The registry mutex is held.
template <class Index>
ComponentId publish(Registry& r, const ComponentInfo& info_in, std::string_view name,
                    Index&& index) {
    const std::uint32_t id = r.count.load(std::memory_order_relaxed);
    const std::size_t chunk = id >> chunk_bits;
    if (chunk >= max_chunks) {
        throw Error(errc::limit_exceeded,
                    "component_id<" + std::string(name) + ">: the process has used all " +
                        std::to_string(max_chunks * chunk_size) + " component ids");
    }
    if (r.chunks[chunk].load(std::memory_order_relaxed) == nullptr) {
        r.chunks[chunk].store(new ComponentInfo[chunk_size], std::memory_order_release);
    }
    const std::string& stored = r.names.emplace_back(name);
    std::unordered_map<std::string, std::uint32_t>::iterator it;
    bool fresh = false;
    try {
        std::tie(it, fresh) = r.by_readable.try_emplace(stored, id);
    } catch (...) {
        r.names.pop_back();
        throw;
    }
    const std::uint32_t previous = it->second;
    if (!fresh) it->second = ambiguous_id;
    try {
        index(id);
    } catch (...) {
        if (fresh)
            r.by_readable.erase(it);
        else
            it->second = previous;
        r.names.pop_back();
        throw;
    }
    ComponentInfo& info = r.chunks[chunk].load(std::memory_order_relaxed)[id & (chunk_size - 1)];
    info = info_in;
    info.id = ComponentId{id};
    info.name = stored;
    r.count.store(id + 1, std::memory_order_release);
    return ComponentId{id};
}

}  // namespace

namespace detail {

ComponentId register_type(const TypeDescriptor& d) {
    if (d.info.sparse && d.info.reserved) {
        throw Error(errc::invalid_argument,
                    "component_id<" + std::string(d.name) +
                        ">: a relation's component cannot have storage_kind::sparse");
    }
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    // Named types are keyed by their mangled name: exact (the readable one drops details such as
    // the type of an integer template argument) and the same in every shared library.
    const bool keyed_by_name = has_linkage(*d.type, d.name);
    const std::string key = keyed_by_name ? std::string(d.type->name()) : std::string();
    if (keyed_by_name) {
        if (auto it = r.by_name.find(key); it != r.by_name.end()) {
            const ComponentInfo& known = component_info(ComponentId{it->second});
            if (known.size != d.info.size || known.alignment != d.info.alignment) {
                throw Error(errc::type_conflict,
                            "component_id<" + std::string(d.name) +
                                ">: a component of this name is already registered with " +
                                layout(known.size, known.alignment) + "; this type has " +
                                layout(d.info.size, d.info.alignment));
            }
            if (known.sparse != d.info.sparse) {
                // Two shared libraries disagreeing on component_traits<T>::storage: worlds
                // would keep the type in tables and sparse sets at once.
                throw Error(errc::invalid_argument,
                            "component_id<" + std::string(d.name) +
                                ">: a component of this name is already registered with " +
                                (known.sparse ? "sparse" : "table") + " storage; this type has " +
                                (d.info.sparse ? "sparse" : "table") + " storage");
            }
            return ComponentId{it->second};
        }
    } else if (auto it = r.by_type.find(d.type); it != r.by_type.end()) {
        return ComponentId{it->second};
    }
    return publish(r, d.info, d.name, [&](std::uint32_t id) {
        if (keyed_by_name)
            r.by_name.emplace(key, id);
        else
            r.by_type.emplace(d.type, id);
    });
}

namespace {
bool runtime_type(Field f) noexcept {
    return f <= Field::str;
}

// Throws invalid_argument for a definition no world can hold.
void check_definition(std::string_view name, std::span<const FieldDef> fields,
                      const ComponentOptions& options) {
    auto fail = [&](const std::string& why) {
        throw Error(errc::invalid_argument, "World::component(" + quote(name) + "): " + why);
    };
    // Names are written to JSON snapshots and printed in every message about the component: they
    // must be valid UTF-8 without control characters (messages quote the name given here).
    if (const std::size_t at = unprintable_at(name); at != std::string_view::npos)
        fail("the name " + unprintable_why(name, at));
    if (name.empty()) fail("a component needs a name");
    if (fields.size() > 1024) fail("more than 1024 fields");
    for (std::size_t i = 0; i < fields.size(); ++i) {
        const FieldDef& f = fields[i];
        if (f.name.empty()) fail("field " + std::to_string(i) + " has no name");
        if (const std::size_t at = unprintable_at(f.name); at != std::string_view::npos)
            fail("the name of field " + std::to_string(i) + ", " + quote(f.name) + ", " +
                 unprintable_why(f.name, at));
        if (!runtime_type(f.type)) {
            fail("field " + quote(f.name) + " has type " + std::string(to_string(f.type)) +
                 ", which only reflected C++ structs can hold (runtime fields are f32 f64 i8 i16 "
                 "i32 u8 u16 u32 boolean str)");
        }
        if (f.name.find_first_of(".[]") != std::string_view::npos)
            fail("field name " + quote(f.name) + " contains '.', '[' or ']'");
        for (std::size_t j = 0; j < i; ++j) {
            if (fields[j].name == f.name) fail("field " + quote(f.name) + " appears twice");
        }
    }
    if (options.eager_tracking && (fields.empty() || !options.track_changes))
        fail("eager_tracking needs change ticks: fields and track_changes");
}

bool same_definition(const Registry::Runtime& known, std::span<const FieldDef> fields,
                     const ComponentOptions& options) noexcept {
    if (known.fields.size() != fields.size() || known.options.enableable != options.enableable ||
        known.options.track_changes != options.track_changes ||
        known.options.eager_tracking != options.eager_tracking) {
        return false;
    }
    for (std::size_t i = 0; i < fields.size(); ++i) {
        if (known.fields[i].name != fields[i].name || known.fields[i].type != fields[i].type)
            return false;
    }
    return true;
}

std::string describe_definition(std::span<const FieldInfo> fields, const ComponentOptions& o) {
    std::string out = "{";
    for (const FieldInfo& f : fields) {
        if (out.size() > 1) out += ", ";
        out += quote(f.name) + ": " + std::string(to_string(f.type));
    }
    out += "}";
    if (o.enableable) out += " enableable";
    if (!o.track_changes) out += " untracked";
    if (o.eager_tracking) out += " eager_tracking";
    return out;
}
}  // namespace

ComponentId register_runtime(std::string_view name, std::span<const FieldDef> fields,
                             const ComponentOptions& options) {
    check_definition(name, fields, options);
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    const std::string key(name);
    if (auto it = r.by_readable.find(key); it != r.by_readable.end()) {
        const ComponentInfo* known =
            it->second == ambiguous_id ? nullptr : &component_info(ComponentId{it->second});
        for (const Registry::Runtime& rt : r.runtimes) {
            if (known == nullptr || known->schema != &rt.schema) continue;
            if (same_definition(rt, fields, options)) return known->id;
            std::vector<FieldInfo> asked;
            for (const FieldDef& f : fields) asked.push_back(FieldInfo{f.name, f.type});
            throw Error(errc::type_conflict,
                        "World::component(" + quote(key) + "): already defined as " +
                            describe_definition(rt.fields, rt.options) + "; this definition is " +
                            describe_definition(asked, options));
        }
        throw Error(errc::type_conflict, "World::component(" + quote(key) +
                                             "): the name is already a C++ component type's");
    }
    // The layout of a C struct: each field at its natural alignment, in order. The record is
    // filled in place (the field names are viewed where they live).
    Registry::Runtime& rt = r.runtimes.emplace_back();
    try {
        rt.options = options;
        std::uint32_t offset = 0;
        std::uint32_t align = 1;
        for (const FieldDef& f : fields) {
            const auto size = static_cast<std::uint32_t>(field_size(f.type));
            offset = (offset + size - 1) / size * size;
            FieldInfo fi;
            fi.name = rt.field_names.emplace_back(f.name);
            fi.type = f.type;
            fi.offset = offset;
            fi.stride = size;
            rt.fields.push_back(fi);
            offset += size;
            align = std::max(align, size);
        }
        ComponentInfo info;
        info.size = (offset + align - 1) / align * align;
        info.alignment = align;
        info.trivially_relocatable = true;
        info.trivially_copyable = true;
        info.zero_init = true;
        info.enableable = options.enableable;
        info.track_changes = options.track_changes;
        info.eager_tracking = options.eager_tracking;
        rt.schema.fields = rt.fields;
        rt.schema.size = info.size;
        info.schema = &rt.schema;
        const ComponentId id = publish(r, info, name, [](std::uint32_t) {});
        rt.schema.name = component_info(id).name;
        return id;
    } catch (...) {
        r.runtimes.pop_back();
        throw;
    }
}

ComponentId find_component(std::string_view name) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    const auto it = r.by_readable.find(std::string(name));
    if (it == r.by_readable.end() || it->second == ambiguous_id) return {};
    return ComponentId{it->second};
}

std::uint32_t next_bundle_id() noexcept {
    static std::atomic<std::uint32_t> next{0};
    return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace detail

const ComponentInfo* find_component_info(ComponentId id) noexcept {
    // Acquiring the count makes the record's contents visible, whichever way the id was learnt
    // (component_id reads its cached id relaxed). Ids at or past the count were never assigned
    // (the default id, 0xFFFFFFFF, among them): no chunk is read for them.
    const std::uint32_t count = registry().count.load(std::memory_order_acquire);
    if (id.value >= count) return nullptr;
    const ComponentInfo* chunk =
        registry().chunks[id.value >> chunk_bits].load(std::memory_order_acquire);
    return &chunk[id.value & (chunk_size - 1)];
}

const ComponentInfo& component_info(ComponentId id) noexcept {
    static const ComponentInfo unregistered = [] {
        ComponentInfo info;
        info.name = "(unregistered component)";
        return info;
    }();
    const ComponentInfo* info = find_component_info(id);
    return info != nullptr ? *info : unregistered;
}

namespace detail {

const ComponentInfo& checked_info(ComponentId id, const char* op) {
    if (const ComponentInfo* info = find_component_info(id)) return *info;
    throw Error(errc::not_registered,
                std::string(op) + ": component id " +
                    (id.valid() ? std::to_string(id.value) : std::string("(invalid)")) +
                    " names no component (use the id World::component or component_id<T>() "
                    "returned)");
}

}  // namespace detail

std::size_t component_id_count() noexcept {
    return registry().count.load(std::memory_order_acquire);
}

}  // namespace tessera

// The process-wide component registry: the only global state in tessera.
//
// Ids are dense and never reused. Records live in fixed chunks that are published once and never
// move, so `component_info(id)` reads without a lock while another thread registers.
#include <tessera/component.hpp>
#include <tessera/detail/storage.hpp>
#include <tessera/error.hpp>

#include <array>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <typeinfo>
#include <unordered_map>

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
};

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

}  // namespace

namespace detail {

ComponentId register_type(const TypeDescriptor& d) {
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
            return ComponentId{it->second};
        }
    } else if (auto it = r.by_type.find(d.type); it != r.by_type.end()) {
        return ComponentId{it->second};
    }
    const std::uint32_t id = r.count.load(std::memory_order_relaxed);
    const std::size_t chunk = id >> chunk_bits;
    if (chunk >= max_chunks) {
        throw Error(errc::limit_exceeded,
                    "component_id<" + std::string(d.name) + ">: the process has used all " +
                        std::to_string(max_chunks * chunk_size) + " component ids");
    }
    if (r.chunks[chunk].load(std::memory_order_relaxed) == nullptr) {
        r.chunks[chunk].store(new ComponentInfo[chunk_size], std::memory_order_release);
    }
    const std::string& name = r.names.emplace_back(d.name);
    try {
        if (keyed_by_name)
            r.by_name.emplace(key, id);
        else
            r.by_type.emplace(d.type, id);
    } catch (...) {
        r.names.pop_back();
        throw;
    }
    ComponentInfo& info = r.chunks[chunk].load(std::memory_order_relaxed)[id & (chunk_size - 1)];
    info = d.info;
    info.id = ComponentId{id};
    info.name = name;
    r.count.store(id + 1, std::memory_order_release);
    return ComponentId{id};
}

std::uint32_t next_bundle_id() noexcept {
    static std::atomic<std::uint32_t> next{0};
    return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace detail

const ComponentInfo& component_info(ComponentId id) noexcept {
    // Acquiring the count makes the record's contents visible, whichever way the id was learnt
    // (component_id reads its cached id relaxed).
    (void)registry().count.load(std::memory_order_acquire);
    const ComponentInfo* chunk =
        registry().chunks[id.value >> chunk_bits].load(std::memory_order_acquire);
    return chunk[id.value & (chunk_size - 1)];
}

std::size_t component_id_count() noexcept {
    return registry().count.load(std::memory_order_acquire);
}

}  // namespace tessera

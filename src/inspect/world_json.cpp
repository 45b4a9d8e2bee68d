// JSON views of world parts for the inspector (world_json.hpp): fields as editable leaves,
// component names. World thread only.
#include "world_json.hpp"
#include "../utf8.hpp"

#include <tessera/detail/field_value.hpp>
#include <tessera/dynamic.hpp>
#include <tessera/world.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <type_traits>
#include <utility>

namespace tessera::detail::inspector {

using json = nlohmann::json;

std::optional<ComponentId> find_by_name(const Storage& s, std::string_view name,
                                        std::string* problem) {
    std::optional<ComponentId> suffix;
    std::size_t suffix_matches = 0;
    std::optional<ComponentId> exact;
    s.for_each_component([&](ComponentId id) {
        const std::string_view n = component_info(id).name;
        if (n == name) exact = id;
        if (n.size() > name.size() + 2 && n.ends_with(name) &&
            n.substr(n.size() - name.size() - 2, 2) == "::") {
            suffix = id;
            ++suffix_matches;
        }
    });
    if (exact) return exact;
    if (suffix_matches == 1) return suffix;
    if (suffix_matches > 1)
        *problem = "component name " + quote(name) + " is ambiguous: qualify it";
    else
        *problem = "unknown component " + quote(name);
    return std::nullopt;
}

json leaf_value(const Storage& s, Field type, const std::byte* p) {
    if (type == Field::record) return nullptr;
    return visit_scalar(type, p, [&](const auto& v) -> json {
        using V = std::remove_cvref_t<decltype(v)>;
        if constexpr (std::is_same_v<V, float>) {
            // The shortest text that reads back as this float (50.4, not 50.39990234375).
            if (!std::isfinite(v)) return nullptr;
            char text[32];
            const auto end = std::to_chars(text, text + sizeof text, v).ptr;
            return std::strtod(std::string(text, end).c_str(), nullptr);
        } else if constexpr (std::is_same_v<V, StringId>) {
            const StringTable* table = s.strings_if();
            if (v.value == 0) return "";
            if (table != nullptr && v.value < table->size())
                return std::string(table->get(v.value));
            return nullptr;
        } else {
            return v;
        }
    });
}

void add_leaves(const Storage& s, const FieldInfo& f, const std::byte* base,
                const std::string& prefix, json& out, bool& truncated) {
    for (std::uint32_t i = 0; i < f.count; ++i) {
        if (out.size() >= max_leaves) {
            truncated = true;
            return;
        }
        std::string path = prefix + std::string(f.name);
        if (f.count > 1) path.append("[").append(std::to_string(i)).append("]");
        const std::byte* p = base + f.offset + std::size_t{i} * f.stride;
        if (f.type == Field::record && f.schema != nullptr) {
            for (const FieldInfo& inner : f.schema->fields)
                add_leaves(s, inner, p, path + ".", out, truncated);
            continue;
        }
        json leaf = {{"path", std::move(path)},
                     {"type", std::string(to_string(f.type))},
                     {"value", leaf_value(s, f.type, p)}};
        if (f.is_enum) leaf["enum"] = true;
        out.push_back(std::move(leaf));
    }
}

void fail(int status, std::string message) {
    throw RequestError{status, std::move(message)};
}

std::string entity_text(Entity e) {
    return std::to_string(e.index) + ":" + std::to_string(e.generation);
}

std::vector<std::string> split_names(const std::string& list) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= list.size()) {
        const std::size_t comma = std::min(list.find(',', start), list.size());
        if (comma > start) out.push_back(list.substr(start, comma - start));
        start = comma + 1;
    }
    return out;
}

std::vector<ComponentId> ids_by_name(const Storage& s, const std::vector<std::string>& names) {
    std::vector<ComponentId> ids;
    for (const std::string& name : names) {
        std::string problem;
        const std::optional<ComponentId> id = find_by_name(s, name, &problem);
        if (!id) fail(400, problem);
        ids.push_back(*id);
    }
    return ids;
}

bool matches(const Archetype& a, const std::vector<ComponentId>& with,
             const std::vector<ComponentId>& without) {
    for (const ComponentId id : with)
        if (!a.contains(id)) return false;
    for (const ComponentId id : without)
        if (a.contains(id)) return false;
    return true;
}

json names_of(const Archetype& a) {
    json names = json::array();
    for (const ComponentId id : a.ids) names.push_back(std::string(component_info(id).name));
    return names;
}

}  // namespace tessera::detail::inspector

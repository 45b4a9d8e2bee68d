// The map view's data (points.hpp). The world thread resolves the fields and copies the chosen
// columns of the matching rows into plain arrays, a typed loop per column (the cost of a query
// over those columns); the server thread writes the JSON text.
#include "points.hpp"
#include "../utf8.hpp"

#include <tessera/dynamic.hpp>
#include <tessera/error.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>

namespace tessera::detail::inspector {

using json = nlohmann::json;

namespace {

bool numeric(Field t) noexcept {
    return t != Field::str && t != Field::string && t != Field::record;
}

/// "Component.path": the first '.' whose left side names a component of the world.
PointField resolve(const Storage& s, const std::string& what, const std::string& spec) {
    std::string problem;
    std::optional<ComponentId> id;
    std::size_t dot = spec.find('.');
    std::string first_problem;
    for (; dot != std::string::npos; dot = spec.find('.', dot + 1)) {
        id = find_by_name(s, spec.substr(0, dot), &problem);
        if (id) break;
        if (first_problem.empty()) first_problem = problem;
    }
    if (!id) fail(400, what + " " + quote(spec) + ": " + first_problem);
    const std::string path = spec.substr(dot + 1);
    const ComponentInfo& info = component_info(*id);
    FieldRef ref;
    try {
        ref = resolve_field(*id, path, "Inspector");
    } catch (const Error& e) {
        fail(400, what + " " + quote(spec) + ": " + e.what());
    }
    if (!numeric(ref.info->type))
        fail(400, what + " " + quote(spec) + ": field " + quote(path) + " of " +
                      std::string(info.name) + " is " + std::string(to_string(ref.info->type)) +
                      ", not a number");
    return PointField{*id, ref.offset, ref.info->type, std::string(info.name) + "." + path};
}

/// Copies field `f` of rows first, first + step, ... (n of them) of column `col` into
/// out[0], out[3], ... (the x, y or colour slot of each point).
template <class T>
void copy_column(const Column& col, std::uint32_t offset, std::size_t first, std::size_t step,
                 std::size_t n, double* out) {
    const std::byte* base = col.data + first * col.size + offset;
    const std::size_t jump = step * col.size;
    const std::byte* p = base;
    for (std::size_t i = 0; i < n; ++i, out += 3) {
        T v;
        std::memcpy(&v, p, sizeof v);
        *out = static_cast<double>(v);
        if (i + 1 < n) p += jump;
    }
}

void copy_field(const Column& col, const PointField& f, std::size_t first, std::size_t step,
                std::size_t n, double* out) {
    switch (f.type) {
        case Field::f32: return copy_column<float>(col, f.offset, first, step, n, out);
        case Field::f64: return copy_column<double>(col, f.offset, first, step, n, out);
        case Field::i8: return copy_column<std::int8_t>(col, f.offset, first, step, n, out);
        case Field::i16: return copy_column<std::int16_t>(col, f.offset, first, step, n, out);
        case Field::i32: return copy_column<std::int32_t>(col, f.offset, first, step, n, out);
        case Field::i64: return copy_column<std::int64_t>(col, f.offset, first, step, n, out);
        case Field::u8:
        case Field::boolean: return copy_column<std::uint8_t>(col, f.offset, first, step, n, out);
        case Field::u16: return copy_column<std::uint16_t>(col, f.offset, first, step, n, out);
        case Field::u32: return copy_column<std::uint32_t>(col, f.offset, first, step, n, out);
        case Field::u64: return copy_column<std::uint64_t>(col, f.offset, first, step, n, out);
        case Field::str:
        case Field::string:
        case Field::record: break;  // refused by resolve
    }
}

void append_number(std::string& out, double v, Field type) {
    if (!std::isfinite(v)) {
        out += "null";
        return;
    }
    char text[32];
    // An f32 as the shortest text that reads back as the float (50.4, not 50.399990081787).
    const auto end = type == Field::f32
                         ? std::to_chars(text, text + sizeof text, static_cast<float>(v)).ptr
                         : std::to_chars(text, text + sizeof text, v).ptr;
    out.append(text, end);
}

void append_numeric_leaves(const FieldInfo& f, const std::string& prefix, json& out) {
    for (std::uint32_t i = 0; i < f.count && out.size() < max_leaves; ++i) {
        std::string path = prefix + std::string(f.name);
        if (f.count > 1) path.append("[").append(std::to_string(i)).append("]");
        if (f.type == Field::record && f.schema != nullptr) {
            for (const FieldInfo& inner : f.schema->fields)
                append_numeric_leaves(inner, path + ".", out);
        } else if (numeric(f.type)) {
            out.push_back(std::move(path));
        }
    }
}

}  // namespace

std::string spec_problem(const std::string& what, const std::string& spec) {
    if (spec.empty()) return what + " is missing: name a numeric field, e.g. Position.x";
    if (spec.size() > max_spec)
        return what + " is longer than " + std::to_string(max_spec) + " characters";
    if (spec.find('.') == std::string::npos)
        return what + " " + quote(spec) + " is not Component.field (e.g. Position.x)";
    return {};
}

Points collect_points(const Storage& s, const PointsRequest& request, std::uint64_t frame) {
    Points out;
    out.frame = frame;
    out.limit = request.limit;
    out.x = resolve(s, "x", request.x);
    out.y = resolve(s, "y", request.y);
    out.by_archetype = request.color == "archetype";
    if (!out.by_archetype) out.color = resolve(s, "color", request.color);
    std::vector<ComponentId> with = ids_by_name(s, request.with);
    const std::vector<ComponentId> without = ids_by_name(s, request.without);
    with.push_back(out.x.component);
    with.push_back(out.y.component);

    std::vector<const Archetype*> tables;
    each_archetype(s, [&](const Archetype& a) {
        if (a.size == 0 || !matches(a, with, without)) return;
        tables.push_back(&a);
        out.total += a.size;
    });
    out.stride = std::max<std::size_t>(1, (out.total + out.limit - 1) / out.limit);
    const std::size_t n_points = (out.total + out.stride - 1) / out.stride;
    out.entities.reserve(n_points);
    out.values.resize(3 * n_points, std::numeric_limits<double>::quiet_NaN());

    // Rows first, first + stride, ... of the concatenated tables.
    std::size_t seen = 0;  // matching rows before this table
    std::size_t k = 0;     // points taken
    for (const Archetype* a : tables) {
        const std::size_t first = (out.stride - seen % out.stride) % out.stride;
        seen += a->size;
        if (first >= a->size) continue;
        const std::size_t n = (a->size - first + out.stride - 1) / out.stride;
        for (std::size_t i = 0; i < n; ++i)
            out.entities.push_back(a->entities[first + i * out.stride]);
        double* at = out.values.data() + 3 * k;
        copy_field(a->columns[static_cast<std::uint32_t>(a->column_index(out.x.component))], out.x,
                   first, out.stride, n, at);
        copy_field(a->columns[static_cast<std::uint32_t>(a->column_index(out.y.component))], out.y,
                   first, out.stride, n, at + 1);
        if (out.by_archetype) {
            for (std::size_t i = 0; i < n; ++i) at[3 * i + 2] = shown_archetype(a->index);
        } else if (const std::int32_t slot = a->column_index(out.color.component); slot >= 0) {
            copy_field(a->columns[static_cast<std::uint32_t>(slot)], out.color, first, out.stride,
                       n, at + 2);
        }
        out.archetypes.emplace_back(shown_archetype(a->index), names_of(*a));
        k += n;
    }
    return out;
}

namespace {

/// `name` as a JSON string (invalid UTF-8 replaced).
std::string text_of(const std::string& name) {
    return json(name).dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string write_points(const Points& p) {
    const std::size_t n = p.entities.size();
    std::string out;
    out.reserve(256 + n * 48);
    out += R"({"frame":)" + std::to_string(p.frame);
    out += R"(,"x":)" + text_of(p.x.name);
    out += R"(,"y":)" + text_of(p.y.name);
    out += R"(,"color":)" + text_of(p.by_archetype ? "archetype" : p.color.name);
    out += R"(,"total":)" + std::to_string(p.total);
    out += R"(,"count":)" + std::to_string(n);
    out += R"(,"stride":)" + std::to_string(p.stride);
    out += R"(,"limit":)" + std::to_string(p.limit);
    out += R"(,"entities":[)";
    char text[24];
    for (std::size_t i = 0; i < n; ++i) {
        if (i != 0) out += ',';
        out.append(text, std::to_chars(text, text + sizeof text, p.entities[i].index).ptr);
        out += ',';
        out.append(text, std::to_chars(text, text + sizeof text, p.entities[i].generation).ptr);
    }
    out += R"(],"points":[)";
    const Field color_type = p.by_archetype ? Field::u32 : p.color.type;
    for (std::size_t i = 0; i < n; ++i) {
        if (i != 0) out += ',';
        append_number(out, p.values[3 * i], p.x.type);
        out += ',';
        append_number(out, p.values[3 * i + 1], p.y.type);
        out += ',';
        append_number(out, p.values[3 * i + 2], color_type);
    }
    out += R"(],"archetypes":)";
    json names = json::object();
    for (const auto& [index, list] : p.archetypes) names[std::to_string(index)] = list;
    out += names.dump(-1, ' ', false, json::error_handler_t::replace);
    out += '}';
    return out;
}

json numeric_fields(const Storage& s) {
    json list = json::array();
    s.for_each_component([&](ComponentId id) {
        const ComponentInfo& info = component_info(id);
        if (info.schema == nullptr || info.relation != nullptr) return;
        json fields = json::array();
        for (const FieldInfo& f : info.schema->fields) append_numeric_leaves(f, "", fields);
        if (fields.empty()) return;
        list.push_back({{"name", std::string(info.name)}, {"fields", std::move(fields)}});
    });
    return {{"components", std::move(list)}};
}

}  // namespace tessera::detail::inspector

// The field metadata of LocalTransform and WorldTransform (transform.hpp): glm::mat4 described
// as 4 columns, each a record {x, y, z, w} of f32, so a matrix element has a path like
// "matrix[3].x" (the translation's x, glm being column-major).
#include <tessera/reflect.hpp>
#include <tessera/transform.hpp>

#include <glm/mat4x4.hpp>
#include <glm/vec4.hpp>

#include <type_traits>

namespace tessera {
namespace {

static_assert(sizeof(glm::vec4) == 4 * sizeof(float) && sizeof(glm::mat4) == 4 * sizeof(glm::vec4),
              "glm::mat4 is 16 packed floats");
static_assert(sizeof(LocalTransform) == sizeof(glm::mat4) &&
              sizeof(WorldTransform) == sizeof(glm::mat4));

FieldInfo f32_at(std::string_view name, std::uint32_t offset) {
    FieldInfo f;
    f.name = name;
    f.type = Field::f32;
    f.offset = offset;
    f.stride = sizeof(float);
    return f;
}

// A column of the matrix (glm::vec4).
const Schema& column_schema() {
    static const FieldInfo fields[] = {f32_at("x", 0), f32_at("y", 4), f32_at("z", 8),
                                       f32_at("w", 12)};
    static const Schema s = [] {
        Schema c;
        c.name = "glm::vec4";
        c.fields = fields;
        c.size = sizeof(glm::vec4);
        c.flat = true;
        return c;
    }();
    return s;
}

// `matrix` (at offset 0 of both transforms): 4 columns.
template <class T>
const Schema& transform_schema(std::string_view name) {
    static const FieldInfo fields[] = {[] {
        FieldInfo f;
        f.name = "matrix";
        f.type = Field::record;
        f.offset = 0;
        f.count = 4;
        f.stride = sizeof(glm::vec4);
        f.schema = &column_schema();
        return f;
    }()};
    static const Schema s = [&] {
        Schema t;
        t.name = name;
        t.fields = fields;
        t.size = sizeof(T);
        t.flat = std::is_trivially_copyable_v<T>;
        return t;
    }();
    return s;
}

}  // namespace

const Schema& reflect<LocalTransform>::schema() {
    return transform_schema<LocalTransform>("tessera::LocalTransform");
}

const Schema& reflect<WorldTransform>::schema() {
    return transform_schema<WorldTransform>("tessera::WorldTransform");
}

}  // namespace tessera

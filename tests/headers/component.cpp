// component.hpp alone.
#include <tessera/component.hpp>

namespace ts = tessera;

namespace {
struct Hp {
    int v = 0;
};
struct Tag {};
}  // namespace

int header_component() {
    const ts::ComponentId id = ts::component_id<Hp>();
    const ts::ComponentInfo& info = ts::component_info<Hp>();
    static_assert(ts::Component<Hp>);
    if (!id.valid() || info.id != id || ts::component_info(id).name != info.name) return 1;
    if (ts::find_component_info(id) == nullptr || ts::component_id_count() == 0) return 2;
    if (!ts::component_info<Tag>().is_tag() || !info.constructible() || !info.copyable()) return 3;
    return 0;
}

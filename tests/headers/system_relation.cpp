// system.hpp with relation.hpp, as its comment on Commands' relate and unrelate says.
#include <tessera/relation.hpp>
#include <tessera/system.hpp>

namespace ts = tessera;

namespace {
struct Follows {};
}  // namespace

int header_system_relation() {
    ts::World w;
    const ts::Entity a = w.spawn();
    const ts::Entity b = w.spawn();
    ts::CommandBuffer buffer;
    ts::Commands cmds(buffer);
    cmds.relate(a, Follows{}, b);
    cmds.unrelate<Follows>(a, b);
    cmds.relate(a, Follows{}, b);
    cmds.unrelate<Follows>(a);
    return buffer.apply(w) == 4 && !w.has_relation<Follows>(a) ? 0 : 1;
}

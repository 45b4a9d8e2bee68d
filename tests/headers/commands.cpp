// commands.hpp alone: CommandBuffer's members but relate and unrelate (relation.cpp here has
// those: commands.hpp says to include relation.hpp for them).
#include <tessera/commands.hpp>

#include <memory_resource>

namespace ts = tessera;

namespace {
struct Pos {
    float x = 0;
};
struct Flag {};
}  // namespace

int header_commands() {
    ts::World w;
    const ts::Entity e = w.spawn(Pos{});
    const ts::ComponentId flag = w.register_component<Flag>();
    ts::CommandBuffer cmds(std::pmr::get_default_resource());
    const ts::Entity p = cmds.spawn(Pos{1});
    const ts::Entity q = cmds.spawn();
    cmds.add(q, Pos{2}, Flag{});
    cmds.add<Flag>(p);
    cmds.emplace<Pos>(e, 3.0f);
    cmds.remove<Flag>(q);
    cmds.add(e, flag);
    cmds.remove(e, flag);
    cmds.despawn(q);
    if (cmds.size() == 0 || !ts::CommandBuffer::is_placeholder(p)) return 1;
    if (cmds.apply(w, ts::on_dead::skip) == 0 || cmds.skipped() != 0) return 2;
    if (!w.is_alive(cmds.resolved(p))) return 3;
    ts::CommandBuffer other;
    other.despawn(e);
    other.clear();
    return 0;
}

// relation.hpp alone: ChildOf, Targets, World's relation members and CommandBuffer's relate
// and unrelate (world.hpp and commands.hpp say to include relation.hpp for them).
#include <tessera/relation.hpp>

#include <span>
#include <utility>
#include <vector>

namespace ts = tessera;

namespace {
struct Likes {
    int how = 0;
};
struct Near {};
}  // namespace

int header_relation() {
    ts::World w;
    const ts::Entity a = w.spawn();
    const ts::Entity b = w.spawn();
    const ts::Entity c = w.spawn();
    int events = 0;
    ts::Observer on =
        w.on_relate<Likes>([&](ts::World&, ts::Entity, ts::Entity, Likes&) { ++events; });
    ts::Observer off = w.on_unrelate<Likes>([&](ts::World&, ts::Entity, ts::Entity) { ++events; });

    w.relate(a, Likes{1}, b);
    w.relate<Near>(a, b);
    const std::vector<ts::Entity> both{b, c};
    w.relate(a, Likes{2}, std::span<const ts::Entity>(both));
    w.relate(c, ts::ChildOf{}, b);
    if (!w.related<Likes>(a, c) || !w.related<Likes>(a, std::span<const ts::Entity>(both)))
        return 1;
    if (!w.related(a, b) || !w.has_relation<Near>(a) || !w.has_relation(a)) return 2;
    if (w.relation_count<Likes>(a) != 2 || w.relation_count(a, b) != 2) return 3;
    if (w.targets<Likes>(a).size() != 2 || w.sources<Likes>(b).size() != 1) return 4;
    if (w.relation<Likes>(a)->how != 2 || std::as_const(w).relation<Likes>(a) == nullptr) return 5;
    const ts::Targets<Likes>& targets = w.get<ts::Targets<Likes>>(a);
    if (targets.size() != 2 || targets.empty() || targets[0] != b || targets.front() != b ||
        !targets.contains(c) || std::span<const ts::Entity>(targets).size() != 2 ||
        targets.span().size() != 2 || targets.begin() == targets.end())
        return 6;
    if (w.children(b).size() != 1 || w.parents(c).size() != 1 || w.parent(c) != b ||
        w.child(b) != c)
        return 7;
    if (!w.unrelate<Likes>(a, c) || w.unrelate<Near>(a) != 1) return 8;
    if (w.unrelate<Likes>(a, std::span<const ts::Entity>(both)) != 1) return 9;

    ts::CommandBuffer cmds;
    cmds.relate(a, Likes{3}, b);
    cmds.unrelate<Likes>(a, b);
    cmds.relate(a, Likes{4}, c);
    cmds.unrelate<Likes>(a);
    cmds.apply(w);
    if (w.has_relation<Likes>(a) || events != 8) return 10;
    return 0;
}

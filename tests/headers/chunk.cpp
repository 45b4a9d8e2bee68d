// chunk.hpp, with world.hpp to have a world to take a chunk of.
#include <tessera/chunk.hpp>
#include <tessera/world.hpp>

namespace ts = tessera;

namespace {
struct Pos {
    float x = 0;
};
}  // namespace

int header_chunk() {
    ts::World w;
    const ts::Entity e = w.spawn(Pos{1});
    // The table `e` is in, as a query finds it (collect_chunks is query.hpp's).
    ts::detail::Storage& s = w.storage();
    const ts::Chunk c(s, s.archetype(s.try_record(e)->archetype));
    const ts::ComponentId pos = ts::component_id<Pos>();
    if (c.count() != 1 || c.entities().size() != 1 || !c.has<Pos>() || !c.has(pos)) return 1;
    if (c.column<const Pos>().size() != 1 || c.mut_column<Pos>().size() != 1) return 2;
    if (c.column_bytes(pos) == nullptr || c.enabled(pos) != nullptr) return 3;
    try {
        (void)c.enabled<Pos>();  // Pos is not enableable
        return 4;
    } catch (const ts::Error&) {
    }
    c.mark_changed<Pos>(0);
    c.mark_changed(pos, 0);
    if (!c.changed_since<Pos>(0, 0) || !c.added_since<Pos>(0, 0)) return 5;
    (void)c.archetype();
    const ts::Chunk empty;
    (void)empty;
    return 0;
}

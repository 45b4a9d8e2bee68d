// snapshot.hpp alone: Snapshot, save, load, state_hash, and World's clone, snapshot and
// restore (world.hpp says to include snapshot.hpp for them).
#include <tessera/snapshot.hpp>
#include <tessera/world.hpp>

#include <cstddef>
#include <utility>
#include <vector>

namespace ts = tessera;

namespace {
struct Hits {
    int n = 0;
};
}  // namespace

int header_snapshot() {
    ts::World w;
    w.spawn(Hits{1});
    const ts::World copy = w.clone();
    ts::Snapshot snap = w.snapshot();
    ts::Snapshot moved(std::move(snap));
    snap = std::move(moved);
    if (snap.empty() || snap.count() != 1 || snap.tick() == 0) return 1;
    w.spawn(Hits{2});
    w.restore(snap);
    if (w.count() != 1 || copy.count() != 1) return 2;
    // Saving needs each component's field metadata (reflect.hpp): an entity without any here.
    ts::World plain;
    plain.spawn();
    const std::vector<std::byte> bytes = ts::save(plain);
    ts::World loaded;
    ts::load(bytes, loaded);
    if (loaded.count() != 1 || ts::state_hash(loaded) != ts::state_hash(plain)) return 3;
    return 0;
}

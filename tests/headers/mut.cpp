// mut.hpp alone, over a plain array.
#include <tessera/mut.hpp>

namespace ts = tessera;

namespace {
struct Pos {
    float x = 0;
};
}  // namespace

int header_mut() {
    Pos values[2] = {{1}, {2}};
    const ts::detail::MutBase<Pos> base{values, nullptr, nullptr, 1};
    const ts::MutColumn<Pos> column(base, 2);
    const ts::MutColumn<Pos> none;
    if (column.size() != 2 || column.empty() || !none.empty() || column.get(1).x != 2) return 1;
    column.write(0).x = 3;
    const ts::Mut<Pos> m = column[1];
    m.set(Pos{4});
    m.write().x += m.get().x + (*m).x + m->x;
    const ts::Mut<Pos> unset;
    (void)unset;
    return column.values()[0].x == 3 && values[1].x == 16 ? 0 : 2;
}

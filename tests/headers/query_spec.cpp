// query_spec.hpp alone.
#include <tessera/query_spec.hpp>

namespace ts = tessera;

namespace {
struct Hp {
    int v = 0;
};
struct Tag {};
}  // namespace

int header_query_spec() {
    ts::QuerySpec spec;
    spec.with<Hp>().without<Tag>().any_of<Hp>();
    const ts::QuerySpec designated{.all = {ts::component_id<Hp>()}};
    return spec.all.size() == 1 && spec.none.size() == 1 && spec.any.size() == 1 &&
                   designated.all == spec.all
               ? 0
               : 1;
}

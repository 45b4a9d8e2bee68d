// net/rollback.hpp alone: Rollback, Inputs, RollbackOptions (it includes what a Schedule and
// the Inputs resource need).
#include <tessera/net/rollback.hpp>

#include <cstdint>

namespace ts = tessera;

namespace {
struct Push {
    int dx = 0;
};
struct Body {
    int x = 0;
};
}  // namespace

int header_net_rollback() {
    ts::World w;
    const ts::Entity e = w.spawn(Body{});
    ts::Schedule s(1);
    s.add("push", [](ts::View<Body&> bodies, ts::Res<ts::net::Inputs<Push>> in) {
        bodies.each([&](Body& b) { b.x += in->value.dx; });
    });
    ts::net::Rollback<Push> rb(w, s, ts::net::RollbackOptions{.frames = 2});
    rb.advance(0.0f, Push{1});
    rb.advance(0.0f, Push{1});
    rb.correct(0, Push{5});
    if (rb.frame() != 2 || rb.oldest() != 0 || rb.capacity() != 2) return 1;
    if (w.get<Body>(e).x != 6 || rb.inputs(0).dx != 5) return 2;
    if (rb.hash(1) != ts::state_hash(w)) return 3;
    return 0;
}

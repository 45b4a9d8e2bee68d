// events.hpp alone: EventCursor, Events and World's event members (world.hpp says to include
// events.hpp for them).
#include <tessera/events.hpp>

#include <memory_resource>
#include <utility>

namespace ts = tessera;

namespace {
struct Hit {
    int damage = 0;
};
}  // namespace

int header_events() {
    ts::World w;
    w.send_event(Hit{3});
    ts::Events<Hit>& queue = w.events<Hit>();
    ts::EventCursor cursor = queue.cursor();
    const ts::Events<Hit>::Range range = queue.read(cursor);
    if (range.size() != 1 || range.empty() || range.missed() != 0) return 1;
    for (const Hit& h : range) (void)h;
    if (range.begin()->damage != 3 || cursor.next_id() == 0) return 2;
    w.update_events();

    ts::Events<Hit> own(std::pmr::get_default_resource());
    const Hit h{1};
    own.send(h);
    own.send(Hit{2});
    own.emplace(3);
    ts::EventCursor start = own.cursor();
    const ts::EventCursor end = own.cursor_at_end();
    if (own.unread(start) != 3 || own.missed(start) != 0 || start == end) return 3;
    own.update();
    ts::Events<Hit> moved(std::move(own));
    own = std::move(moved);
    if (own.size() != 3 || own.empty() || own.next_id() != 3) return 4;
    (void)own.memory_resource();
    own.clear();
    return 0;
}

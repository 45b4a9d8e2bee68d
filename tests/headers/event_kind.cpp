// event_kind.hpp alone.
#include <tessera/event_kind.hpp>

namespace ts = tessera;

int header_event_kind() {
    const ts::detail::RelationEvent event{ts::Entity{1, 0}, nullptr};
    return ts::Event::relate != ts::Event::add && event.data == nullptr ? 0 : 1;
}

// fwd.hpp alone: it declares names only, so a file can pass them by pointer or reference.
#include <tessera/fwd.hpp>

namespace ts = tessera;

namespace {
int count(const ts::World* world, const ts::Events<int>* events, const ts::Targets<ts::ChildOf>*,
          const ts::component_traits<int>*, const ts::Entity*, const ts::ComponentId*,
          const ts::ComponentInfo*, const ts::Error*, const ts::EventCursor*) {
    return (world == nullptr ? 0 : 1) + (events == nullptr ? 0 : 1);
}
}  // namespace

int header_fwd() {
    const ts::errc* code = nullptr;
    return count(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr) +
           (code == nullptr ? 0 : 1);
}

// entity.hpp alone.
#include <tessera/entity.hpp>

#include <functional>
#include <sstream>

namespace ts = tessera;

int header_entity() {
    const ts::Entity e = ts::Entity::from_bits(ts::Entity{3, 1}.to_bits());
    std::ostringstream os;
    os << e;
    if (!e || ts::Entity::null() || !(ts::Entity::null() != e) || !(ts::Entity{1, 0} < e)) return 1;
    if (os.str().empty() || std::hash<ts::Entity>{}(e) == std::hash<ts::Entity>{}({})) return 2;
    return 0;
}

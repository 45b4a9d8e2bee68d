#include <tessera/entity.hpp>
#include <tessera/error.hpp>

#include <ostream>

namespace tessera {

std::ostream& operator<<(std::ostream& os, Entity e) {
    if (!e) return os << "null";
    return os << e.index << ':' << e.generation;
}

}  // namespace tessera

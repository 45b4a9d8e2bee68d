// assert.hpp alone.
#include <tessera/assert.hpp>

int header_assert() {
    const int one = 1;
    TESSERA_ASSERT(one == 1, "one is one");
    return one - 1;
}

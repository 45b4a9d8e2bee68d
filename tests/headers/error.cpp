// error.hpp alone.
#include <tessera/error.hpp>

namespace ts = tessera;

int header_error() {
    const ts::Error err(ts::errc::not_alive, "x");
    return err.code() == ts::errc::not_alive && !ts::to_string(err.code()).empty() ? 0 : 1;
}

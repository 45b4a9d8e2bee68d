// error_of(f): the errc of the tessera::Error that f() throws (a test failure when it throws
// none), for tests that check error codes.
#pragma once

#include <tessera/error.hpp>

#include <gtest/gtest.h>

namespace tessera::test {

template <class F>
errc error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.code();
    }
    ADD_FAILURE() << "no tessera::Error thrown";
    return errc::invalid_argument;
}

}  // namespace tessera::test

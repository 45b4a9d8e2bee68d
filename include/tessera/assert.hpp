/// @file assert.hpp
/// `TESSERA_ASSERT(cond, msg)`: checks of preconditions that the fast paths do not check
/// otherwise (a chunk column of a type the chunk lacks, a row past the table's end, a structural
/// call from a second thread). A failed check prints `msg`, the condition and its place, and
/// aborts.
///
/// Assertions are on when `TESSERA_ASSERTIONS` is 1 and off when it is 0; left undefined, they
/// follow `NDEBUG` (on in the dev and sanitizer presets, off in Release). Defining
/// `TESSERA_ASSERT` before including any tessera header replaces the check altogether (for
/// example with an engine's own assertion macro); it must accept the same two arguments and
/// must not return when the condition is false (checks sit in `noexcept` code, so a throw
/// terminates).
#pragma once

#ifndef TESSERA_ASSERTIONS
#ifdef NDEBUG
/// Assertions off (NDEBUG is defined and TESSERA_ASSERTIONS was not).
#define TESSERA_ASSERTIONS 0
#else
/// Assertions on (NDEBUG is not defined and TESSERA_ASSERTIONS was not).
#define TESSERA_ASSERTIONS 1
#endif
#endif

namespace tessera::detail {
/// Prints the failed assertion and aborts (defined in the library, whatever its own setting).
[[noreturn]] void assertion_failed(const char* condition, const char* message, const char* file,
                                   int line) noexcept;
}  // namespace tessera::detail

#ifndef TESSERA_ASSERT
#if TESSERA_ASSERTIONS
/// Aborts with `msg` when `cond` is false (assertions on).
#define TESSERA_ASSERT(cond, msg) \
    (static_cast<bool>(cond)      \
         ? static_cast<void>(0)   \
         : ::tessera::detail::assertion_failed(#cond, msg, __FILE__, __LINE__))
#else
/// Assertions off: the condition is not evaluated.
#define TESSERA_ASSERT(cond, msg) static_cast<void>(0)
#endif
#endif

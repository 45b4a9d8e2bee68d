// Replaces the global allocation functions with counting ones, to prove that a steady state
// allocates nothing outside the world's memory resource either. Include it from exactly one
// source file of a test executable (each tests/test_*.cpp is its own executable).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

namespace tessera::test {
/// Calls of global operator new / new[] on this thread, except inside an `Uncounted` scope.
inline thread_local std::size_t global_news = 0;
inline thread_local int uncounted_depth = 0;
/// When nonzero, the counted call that makes `global_news` equal to it throws bad_alloc (a
/// fault sweep of code that allocates with global new: set it to `global_news + k`).
inline thread_local std::size_t fail_global_new_at = 0;
/// Allocations a test makes on purpose (e.g. its own memory resource's) don't count.
struct Uncounted {
    Uncounted() { ++uncounted_depth; }
    ~Uncounted() { --uncounted_depth; }
    Uncounted(const Uncounted&) = delete;
    Uncounted& operator=(const Uncounted&) = delete;
};
}  // namespace tessera::test

// The replacements pair malloc with free; GCC cannot see that through inlining.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t size) {
    if (tessera::test::uncounted_depth == 0 &&
        ++tessera::test::global_news == tessera::test::fail_global_new_at)
        throw std::bad_alloc();
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t size) {
    if (tessera::test::uncounted_depth == 0 &&
        ++tessera::test::global_news == tessera::test::fail_global_new_at)
        throw std::bad_alloc();
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete[](void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
    std::free(p);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

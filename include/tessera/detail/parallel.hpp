/// @file detail/parallel.hpp
/// The bridge to oneTBB for parallel iteration. Internal, not API.
#pragma once

#include <tessera/detail/storage.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstddef>

#if defined(__SANITIZE_THREAD__)
#define TESSERA_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TESSERA_TSAN 1
#endif
#endif
#ifdef TESSERA_TSAN
#include <exception>
#include <thread>
#include <vector>
#endif

namespace tessera::detail {

/// Calls `body(begin, end)` on sub-ranges of [0, total) from oneTBB workers (and the calling
/// thread), returning when all are done; `serial`: `body(0, total)` on the calling thread.
/// Exceptions from `body` propagate to the caller.
template <class Body>
void parallel_rows(std::size_t total, const Body& body, bool serial = false) {
    if (total == 0) return;
    if (serial) {
        body(std::size_t{0}, total);
        return;
    }
#ifdef TESSERA_TSAN
    // ThreadSanitizer can't see the synchronisation inside the (uninstrumented) oneTBB library
    // and reports races in its task objects. Under TSan the same split runs on plain threads,
    // so tessera's own code is what gets checked.
    constexpr std::size_t parts = 4;
    std::vector<std::exception_ptr> errors(parts);
    std::vector<std::thread> threads;
    for (std::size_t k = 1; k < parts; ++k) {
        threads.emplace_back([&, k] {
            try {
                body(total * k / parts, total * (k + 1) / parts);
            } catch (...) {
                errors[k] = std::current_exception();
            }
        });
    }
    try {
        body(0, total / parts);
    } catch (...) {
        errors[0] = std::current_exception();
    }
    for (std::thread& t : threads) t.join();
    for (const std::exception_ptr& e : errors) {
        if (e) std::rethrow_exception(e);
    }
#else
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, total),
                      [&](const tbb::blocked_range<std::size_t>& r) { body(r.begin(), r.end()); });
#endif
}

/// Marks the world as iterating in parallel: structural calls then fail instead of racing on
/// the world's queue.
class ParallelScope {
public:
    /// An inactive scope (`active` false) does nothing (a system's query: the flag is shared).
    explicit ParallelScope(Storage& s, bool active = true) noexcept : s_(active ? &s : nullptr) {
        if (active) s.set_parallel(true);
    }
    ParallelScope(const ParallelScope&) = delete;
    ParallelScope& operator=(const ParallelScope&) = delete;
    void close() noexcept {
        if (s_ != nullptr) s_->set_parallel(false);
        s_ = nullptr;
    }
    ~ParallelScope() { close(); }

private:
    Storage* s_;
};

}  // namespace tessera::detail

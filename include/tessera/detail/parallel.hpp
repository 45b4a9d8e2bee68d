/// @file detail/parallel.hpp
/// The bridge to the parallel executor (oneTBB, behind src/parallel.cpp) for parallel
/// iteration. Internal, not API: it names no oneTBB header, so code that iterates in parallel
/// compiles without them.
#pragma once

#include <tessera/detail/storage.hpp>

#include <cstddef>

#if defined(__SANITIZE_THREAD__)
#define TESSERA_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TESSERA_TSAN 1
#endif
#endif

namespace tessera::detail {

/// A range body, type-erased: runs rows [begin, end) of the loop whose state is `context`.
using RangeFn = void (*)(const void* context, std::size_t begin, std::size_t end);

/// Calls `fn(context, begin, end)` on sub-ranges of [0, total) from the executor's workers
/// (and the calling thread), returning when all are done; `total` > 0. The first exception a
/// call throws propagates to the caller (the others are dropped). oneTBB's `parallel_for` with
/// its automatic partitioner, in the calling thread's task arena; under ThreadSanitizer, plain
/// threads (TSan can't see the synchronisation inside the uninstrumented oneTBB library).
/// One indirect call per sub-range. src/parallel.cpp.
void parallel_ranges(std::size_t total, RangeFn fn, const void* context);

/// Calls `body(begin, end)` on sub-ranges of [0, total) from the executor's workers (and the
/// calling thread), returning when all are done; `serial`: `body(0, total)` on the calling
/// thread. Exceptions from `body` propagate to the caller. The per-range body is compiled here
/// (inlined into a plain function), the split in src/.
template <class Body>
void parallel_rows(std::size_t total, const Body& body, bool serial = false) {
    if (total == 0) return;
    if (serial) {
        body(std::size_t{0}, total);
        return;
    }
    parallel_ranges(
        total,
        [](const void* context, std::size_t begin, std::size_t end) {
            (*static_cast<const Body*>(context))(begin, end);
        },
        &body);
}

/// Marks the world as iterating in parallel: structural calls then fail instead of racing on
/// the world's queue.
class ParallelScope {
public:
    /// An inactive scope (`active` false) does nothing (a system's query: the flag is shared),
    /// nor does one opened on a worker of a running `par_each` (a nested `par_each`: the outer
    /// loop clears the flag when it ends).
    explicit ParallelScope(Storage& s, bool active = true) noexcept
        : s_(active && !s.parallel() ? &s : nullptr) {
        if (s_ != nullptr) s.set_parallel(true);
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

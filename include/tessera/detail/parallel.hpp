/// @file detail/parallel.hpp
/// The bridge to oneTBB for parallel iteration. Internal, not API.
#pragma once

#include <tessera/detail/storage.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cstddef>

namespace tessera::detail {

/// Calls `body(begin, end)` on sub-ranges of [0, total) from oneTBB workers (and the calling
/// thread), returning when all are done. Exceptions from `body` propagate to the caller.
template <class Body>
void parallel_rows(std::size_t total, const Body& body) {
    if (total == 0) return;
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, total),
                      [&](const tbb::blocked_range<std::size_t>& r) { body(r.begin(), r.end()); });
}

/// Marks the world as iterating in parallel: structural calls then fail instead of racing on
/// the world's queue.
class ParallelScope {
public:
    explicit ParallelScope(Storage& s) noexcept : s_(&s) { s.set_parallel(true); }
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

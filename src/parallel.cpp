// The executor behind parallel iteration (detail/parallel.hpp): oneTBB's parallel_for, kept
// here so that no public header includes oneTBB.
#include <tessera/detail/parallel.hpp>

#include <cstddef>

#ifdef TESSERA_TSAN
#include <exception>
#include <thread>
#include <vector>
#else
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#endif

namespace tessera::detail {

void parallel_ranges(std::size_t total, RangeFn fn, const void* context) {
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
                fn(context, total * k / parts, total * (k + 1) / parts);
            } catch (...) {
                errors[k] = std::current_exception();
            }
        });
    }
    try {
        fn(context, 0, total / parts);
    } catch (...) {
        errors[0] = std::current_exception();
    }
    for (std::thread& t : threads) t.join();
    for (const std::exception_ptr& e : errors) {
        if (e) std::rethrow_exception(e);
    }
#else
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, total),
        [&](const tbb::blocked_range<std::size_t>& r) { fn(context, r.begin(), r.end()); });
#endif
}

}  // namespace tessera::detail

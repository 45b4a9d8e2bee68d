// Entry point of tessera_bench: Google Benchmark's usual main, plus the memory-child mode
// (memory.cpp), the heap and size-sweep flags, and a few context entries that say how the
// figures were taken.
#include "common.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <malloc.h>

#include <sys/personality.h>

namespace {

/// Whether address space layout randomisation is on for this process (docs/benchmarks.md: run with
/// `setarch -R`, since array placement changes simple loops several times).
const char* aslr_state() {
    const int persona = personality(0xffffffff);
    if (persona == -1) return "unknown";
    return (persona & ADDR_NO_RANDOMIZE) != 0 ? "off" : "on";
}

std::string compiler() {
#if defined(__clang__)
    return "clang " __clang_version__;
#elif defined(__GNUC__)
    return "gcc " __VERSION__;
#else
    return "unknown";
#endif
}

/// Removes argv[i] (argc shrinks by one).
void drop_arg(int& argc, char** argv, int i) {
    for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
    --argc;
}

}  // namespace

int main(int argc, char** argv) {
    // --tessera-heap=warm: glibc keeps freed memory (no trimming, no mmap for big blocks), so
    // every setup-heavy iteration after the first reuses pages already faulted in. This shows
    // the code's own cost apart from the first-touch page faults, which dominate creation on
    // fresh memory in this VM (docs/benchmarks.md). The default is glibc's default heap.
    // --tessera-n=<count>: a size sweep; every scenario that scales (entity_count in
    // common.hpp) uses <count> entities instead of its standard size, under the same names.
    const char* heap = "default glibc";
    constexpr std::string_view kCountFlag = "--tessera-n=";
    for (int i = 1; i < argc;) {
        const std::string_view arg = argv[i];
        if (arg == "--tessera-heap=warm") {
            mallopt(M_MMAP_THRESHOLD, 1 << 30);
            mallopt(M_TRIM_THRESHOLD, 1 << 30);
            heap = "warm (glibc keeps freed memory: mallopt M_MMAP_THRESHOLD/M_TRIM_THRESHOLD)";
            drop_arg(argc, argv, i);
        } else if (arg.starts_with(kCountFlag)) {
            const std::string value(arg.substr(kCountFlag.size()));
            char* end = nullptr;
            const unsigned long long n = std::strtoull(value.c_str(), &end, 10);
            if (value.empty() || *end != '\0' || n < 100 || n > 100'000'000) {
                std::fprintf(stderr, "tessera_bench: --tessera-n wants a count in 100..1e8\n");
                return 1;
            }
            tessera_bench::sweep_n = static_cast<std::size_t>(n);
            drop_arg(argc, argv, i);
        } else {
            ++i;
        }
    }
    if (argc == 2) {
        const std::string_view arg = argv[1];
        if (arg.starts_with(tessera_bench::kMemoryChildFlag)) {
            return tessera_bench::memory_child(arg.substr(tessera_bench::kMemoryChildFlag.size()));
        }
    }
    const std::size_t n = tessera_bench::entity_count();
    for (benchmark::internal::Benchmark* b : tessera_bench::setup_heavy_benchmarks())
        b->Iterations(tessera_bench::setup_iterations(n));
#ifdef NDEBUG
    benchmark::AddCustomContext("tessera_build_type", "release");
#else
    benchmark::AddCustomContext("tessera_build_type", "debug");
#endif
    benchmark::AddCustomContext("compiler", compiler());
    benchmark::AddCustomContext("heap", heap);
    benchmark::AddCustomContext("aslr", aslr_state());
    benchmark::AddCustomContext("entities", std::to_string(n));
    benchmark::AddCustomContext("size_sweep", tessera_bench::sweep_n != 0 ? "yes" : "no");
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

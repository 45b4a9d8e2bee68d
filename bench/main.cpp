// Entry point of tessera_bench: Google Benchmark's usual main, plus the memory-child mode
// (memory.cpp) and a few context entries that say how the figures were taken.
#include "common.hpp"

#include <cstring>
#include <string>

#include <malloc.h>

#include <sys/personality.h>

namespace {

/// Whether address space layout randomisation is on for this process (MEASURING.md: run with
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

}  // namespace

int main(int argc, char** argv) {
    // --tessera-heap=warm: glibc keeps freed memory (no trimming, no mmap for big blocks), so
    // every setup-heavy iteration after the first reuses pages already faulted in. This shows
    // the code's own cost apart from the first-touch page faults, which dominate creation on
    // fresh memory in this VM (MEASURING.md). The default is glibc's default heap.
    const char* heap = "default glibc";
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--tessera-heap=warm") == 0) {
            mallopt(M_MMAP_THRESHOLD, 1 << 30);
            mallopt(M_TRIM_THRESHOLD, 1 << 30);
            heap = "warm (glibc keeps freed memory: mallopt M_MMAP_THRESHOLD/M_TRIM_THRESHOLD)";
            for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
            --argc;
            break;
        }
    }
    if (argc == 2) {
        const std::string_view arg = argv[1];
        if (arg.starts_with(tessera_bench::kMemoryChildFlag)) {
            return tessera_bench::memory_child(arg.substr(tessera_bench::kMemoryChildFlag.size()));
        }
    }
#ifdef NDEBUG
    benchmark::AddCustomContext("tessera_build_type", "release");
#else
    benchmark::AddCustomContext("tessera_build_type", "debug");
#endif
    benchmark::AddCustomContext("compiler", compiler());
    benchmark::AddCustomContext("heap", heap);
    benchmark::AddCustomContext("aslr", aslr_state());
    benchmark::AddCustomContext("entities", std::to_string(tessera_bench::kN));
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

// Entry point of tessera_bench: Google Benchmark's usual main, plus the memory-child mode
// (memory.cpp) and a few context entries that say how the figures were taken.
#include "common.hpp"

#include <string>

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
    benchmark::AddCustomContext("aslr", aslr_state());
    benchmark::AddCustomContext("entities", std::to_string(tessera_bench::kN));
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

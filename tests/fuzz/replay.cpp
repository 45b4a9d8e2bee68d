// Replays a fuzz corpus through a fuzz target's LLVMFuzzerTestOneInput, with any compiler and
// without libFuzzer: `tessera_load_fuzz_replay tests/fuzz/corpus` (linked with load_fuzz.cpp),
// `tessera_json_fuzz_replay tests/fuzz/corpus-json` (json_fuzz.cpp). Every file of the directory
// is one input: seeds, and every crash/timeout input the fuzzer found, kept as regressions.
#include "fuzz_checks.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <corpus directory>\n", argv[0]);
        return 2;
    }
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(argv[1])) {
        if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) {
        std::fprintf(stderr, "no inputs in %s\n", argv[1]);
        return 1;
    }
    for (const std::filesystem::path& file : files) {
        std::ifstream in(file, std::ios::binary);
        const std::vector<char> data((std::istreambuf_iterator<char>(in)),
                                     std::istreambuf_iterator<char>());
        std::printf("%s (%zu bytes)\n", file.filename().c_str(), data.size());
        std::fflush(stdout);
        LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(data.data()), data.size());
    }
    std::printf("replayed %zu inputs, %zu accepted by the loader\n", files.size(),
                fuzzw::accepted_inputs());
    return 0;
}

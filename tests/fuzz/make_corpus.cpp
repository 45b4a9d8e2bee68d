// Writes the seed corpus of the loader fuzz target: `tessera_make_corpus <directory>` saves the
// fuzz worlds of fuzz_world.hpp (seed-world-<variant>.bin) and, from the largest one, truncated
// copies (seed-cut-<bytes>.bin), copies with one byte changed (seed-flip-<offset>.bin) and a
// bad magic number. Deterministic: rerunning it rewrites the same files. Built on demand only
// (`cmake --build <dir> --target tessera_make_corpus`).
#include "fuzz_world.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

void write(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    std::printf("%s (%zu bytes)\n", path.filename().c_str(), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <corpus directory>\n", argv[0]);
        return 2;
    }
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    fuzzw::setup();
    std::vector<std::byte> largest;
    for (int variant = 0; variant <= 4; ++variant) {
        tessera::World w;
        fuzzw::populate(w, variant);
        const std::vector<std::byte> bytes = tessera::save(w);
        write(dir / ("seed-world-" + std::to_string(variant) + ".bin"), bytes);
        if (bytes.size() > largest.size()) largest = bytes;
    }
    const std::size_t n = largest.size();
    for (const std::size_t cut : {std::size_t{3}, std::size_t{20}, n / 4, n / 2, n - 1}) {
        write(dir / ("seed-cut-" + std::to_string(cut) + ".bin"),
              std::vector<std::byte>(largest.begin(),
                                     largest.begin() + static_cast<std::ptrdiff_t>(cut)));
    }
    for (const std::size_t at : {std::size_t{8}, std::size_t{17}, n / 3, n / 2 + 5, n - 9}) {
        std::vector<std::byte> flipped = largest;
        flipped[at] ^= std::byte{0x5A};
        write(dir / ("seed-flip-" + std::to_string(at) + ".bin"), flipped);
    }
    std::vector<std::byte> magic = largest;
    magic[0] = std::byte{'X'};
    write(dir / "seed-bad-magic.bin", magic);
    return 0;
}

// Writes the seed corpora of the fuzz targets: `tessera_make_corpus <binary dir> [<json dir>
// [<net dir>]]` saves the fuzz worlds of fuzz_world.hpp (seed-world-<variant>.bin) and, from the
// largest one, truncated copies (seed-cut-<bytes>.bin), copies with one byte changed
// (seed-flip-<offset>.bin) and a bad magic number; into <json dir>, the same worlds as JSON text
// (seed-world-<variant>.json) and, from the largest, copies with one member made wrong
// (seed-<what>.json); into <net dir>, replication messages (net_fuzz_world.hpp) and truncated and
// flipped copies of the largest. Deterministic: rerunning it rewrites the same files. Built on
// demand only
// (`cmake --build <dir> --target tessera_make_corpus`).
#include "fuzz_world.hpp"
#include "net_fuzz_world.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

namespace {

void write(const std::filesystem::path& path, const void* data, std::size_t size) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    std::printf("%s (%zu bytes)\n", path.filename().c_str(), size);
}

void write(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
    write(path, bytes.data(), bytes.size());
}

void write(const std::filesystem::path& path, const std::string& text) {
    write(path, text.data(), text.size());
}

void write_binary(const std::filesystem::path& dir) {
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
}

void write_json(const std::filesystem::path& dir) {
    using nlohmann::json;
    json largest;
    for (int variant = 0; variant <= 4; ++variant) {
        tessera::World w;
        fuzzw::populate(w, variant);
        const json j = tessera::to_json(w);
        write(dir / ("seed-world-" + std::to_string(variant) + ".json"), j.dump());
        if (j.dump().size() > largest.dump().size()) largest = j;
    }
    write(dir / "seed-indented.json", largest.dump(1));
    // One member made wrong each: what the loader must refuse, one mutation away from loading.
    auto variant = [&](const char* name, auto&& change) {
        json j = largest;
        change(j);
        write(dir / (std::string("seed-") + name + ".json"), j.dump());
    };
    variant("tick-max", [](json& j) { j["tick"] = std::numeric_limits<std::uint64_t>::max(); });
    variant("no-archetypes", [](json& j) { j.erase("archetypes"); });
    variant("kind", [](json& j) { j["components"][0]["kind"] = "targets"; });
    variant("generation-0", [](json& j) { j["generations"][0] = 0; });
    variant("free-loop", [](json& j) { j["free"] = json::array({1, 1}); });
    variant("string-type", [](json& j) { j["strings"] = json::array({1, 2}); });
    variant("entity-twice", [](json& j) {
        for (json& a : j["archetypes"]) {
            if (!a["entities"].empty()) {
                a["entities"].push_back(a["entities"][0]);
                break;
            }
        }
    });
    variant("relations-empty", [](json& j) { j["relations"] = json::array(); });
}

// Replication messages (net_fuzz.cpp): a full state and deltas of each kind, truncated and
// flipped copies of the largest.
void write_net(const std::filesystem::path& dir) {
    netfuzz::setup();
    const std::vector<std::vector<std::byte>> messages = netfuzz::seed_messages();
    std::vector<std::byte> largest;
    for (std::size_t i = 0; i < messages.size(); ++i) {
        write(dir / ("seed-message-" + std::to_string(i) + ".bin"), messages[i]);
        if (messages[i].size() > largest.size()) largest = messages[i];
    }
    const std::size_t n = largest.size();
    for (const std::size_t cut : {std::size_t{3}, std::size_t{21}, n / 2, n - 1}) {
        write(dir / ("seed-cut-" + std::to_string(cut) + ".bin"),
              std::vector<std::byte>(largest.begin(),
                                     largest.begin() + static_cast<std::ptrdiff_t>(cut)));
    }
    for (const std::size_t at : {std::size_t{4}, std::size_t{12}, std::size_t{20}, n / 2, n - 2}) {
        std::vector<std::byte> flipped = largest;
        flipped[at] ^= std::byte{0x5A};
        write(dir / ("seed-flip-" + std::to_string(at) + ".bin"), flipped);
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argc > 4) {
        std::fprintf(stderr,
                     "usage: %s <binary corpus directory> [<json corpus directory> [<net corpus "
                     "directory>]]\n",
                     argv[0]);
        return 2;
    }
    fuzzw::setup();
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    write_binary(dir);
    if (argc >= 3) {
        const std::filesystem::path json_dir = argv[2];
        std::filesystem::create_directories(json_dir);
        write_json(json_dir);
    }
    if (argc == 4) {
        const std::filesystem::path net_dir = argv[3];
        std::filesystem::create_directories(net_dir);
        write_net(net_dir);
    }
    return 0;
}

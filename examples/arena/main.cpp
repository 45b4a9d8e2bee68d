// arena: a headless battle simulation that uses tessera the way a game would.
//
// Two teams of units (Position, Velocity, Health, Team, Unit, an enableable Stunned) march at
// each other across the arena. Each unit carries a weapon, a child entity (ChildOf) with a
// LocalTransform offset whose WorldTransform `propagate_transforms` computes from the unit's.
// Units hunt an enemy through a custom relation (Hunts), shots are Damage events, deaths are
// despawns recorded through Commands (the weapon goes with its unit), a kill-counter observer
// queues respawns, and respawns are spawned through Commands. Time, a seeded RNG and the arena
// bounds are resources; the systems run in pre_update / update / post_update, in parallel where
// their access allows (see sim.cpp for the list). The final state hash is the same on any
// number of workers: `--verify` checks it.
#include "sim.hpp"

#ifdef TESSERA_ARENA_INSPECT
#include <tessera/inspect.hpp>
#endif

#include <tbb/global_control.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

struct Options {
    arena::Config config;
    bool verify = false;
    std::uint32_t render_every = 0;  ///< 0 = no map
    std::string json_path;
    std::string trace_path;  ///< empty = no trace
    int inspect_port = -1;   ///< -1 = no inspector
    std::uint32_t fps = 0;   ///< frame-rate cap, 0 = none (30 with --inspect)
};

constexpr std::uint32_t default_render_every = 25;
constexpr std::uint32_t trace_frames = 10;  ///< --trace records the last this many frames

void usage(std::ostream& out) {
    out << "usage: arena [options]\n"
           "\n"
           "A headless battle of two teams on tessera: relations, events, observers, commands,\n"
           "resources, enableable components, transforms and a parallel schedule.\n"
           "\n"
           "options:\n"
           "  --units N      units in all, half per team (default 100000; each has a weapon\n"
           "                 entity, so the world holds about 2N entities)\n"
           "  --frames N     frames to simulate (default 360)\n"
           "  --workers N    worker threads for the schedule (default: hardware concurrency)\n"
           "  --seed N       random seed (default 42); the same seed gives the same battle\n"
           "  --verify       run the scenario on 1 worker and on N, compare the final\n"
           "                 ts::state_hash of both worlds; exit status 1 when they differ\n"
           "  --render [N]   draw an 80x24 ASCII map of the arena every N frames (default "
        << default_render_every
        << ");\n"
           "                 R = red, B = blue (lower case: sparse), * = both, . = empty\n"
           "  --json FILE    write per-frame statistics as JSON to FILE\n"
           "  --trace FILE   write a trace of the last "
        << trace_frames
        << " frames' system runs to FILE (Chrome\n"
           "                 trace-event JSON: open it in ui.perfetto.dev or chrome://tracing)\n"
           "  --inspect PORT serve the world inspector (web page and JSON API) on\n"
           "                 http://127.0.0.1:PORT/ while the battle runs (0: any free port);\n"
           "                 frames are capped at 30 per second then (see --fps)\n"
           "  --fps N        cap the frame rate at N frames per second (0: uncapped)\n"
           "  -h, --help     this text\n"
           "\n"
           "A progress bar is shown while running when stdout is a terminal; at the end a table\n"
           "gives frames, entities, archetypes, per-system and frame times and the state hash.\n";
}

template <class T>
std::optional<T> parse_number(std::string_view s) {
    T value{};
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
    return value;
}

/// Parses argv; exits with status 0 for --help and 2 for a bad command line.
Options parse(int argc, char** argv) {
    Options o;
    bool fps_given = false;
    auto fail = [](const std::string& msg) {
        std::cerr << "arena: " << msg << " (see --help)\n";
        std::exit(2);
    };
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        auto value = [&]() -> std::string_view {
            if (i + 1 >= argc) fail(std::string(arg) + " needs a value");
            return argv[++i];
        };
        auto number = [&]<class T>(T& out, T min) {
            const std::string_view v = value();
            const std::optional<T> n = parse_number<T>(v);
            if (!n || *n < min)
                fail(std::string(arg) + ": not a valid number: '" + std::string(v) + "'");
            out = *n;
        };
        if (arg == "-h" || arg == "--help") {
            usage(std::cout);
            std::exit(0);
        } else if (arg == "--units") {
            number(o.config.units, std::size_t{2});
        } else if (arg == "--frames") {
            number(o.config.frames, std::uint32_t{1});
        } else if (arg == "--workers") {
            number(o.config.workers, 1);
        } else if (arg == "--seed") {
            number(o.config.seed, std::uint64_t{0});
        } else if (arg == "--verify") {
            o.verify = true;
        } else if (arg == "--render") {
            o.render_every = default_render_every;
            if (i + 1 < argc) {
                if (const auto n = parse_number<std::uint32_t>(argv[i + 1]); n && *n > 0) {
                    o.render_every = *n;
                    ++i;
                }
            }
        } else if (arg == "--json") {
            o.json_path = std::string(value());
        } else if (arg == "--trace") {
            o.trace_path = std::string(value());
            // Fail now rather than after the battle: Schedule::trace_to opens it again later.
            if (!std::ofstream(o.trace_path)) fail("--trace: cannot write " + o.trace_path);
        } else if (arg == "--inspect") {
            number(o.inspect_port, 0);
            if (o.inspect_port > 65535)
                fail("--inspect: not a port: " + std::to_string(o.inspect_port));
#ifndef TESSERA_ARENA_INSPECT
            fail("--inspect: this arena was built without tessera::inspect (libcpp-httplib-dev)");
#endif
        } else if (arg == "--fps") {
            number(o.fps, std::uint32_t{0});
            fps_given = true;
        } else {
            fail("unknown option '" + std::string(arg) + "'");
        }
    }
    if (o.inspect_port >= 0 && o.fps == 0 && !fps_given) o.fps = 30;
    if (o.config.workers == 0) {
        o.config.workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    }
    return o;
}

std::string hex(std::uint64_t h) {
    std::ostringstream s;
    s << "0x" << std::hex << std::setw(16) << std::setfill('0') << h;
    return s.str();
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
    return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

/// An 80x24 map: a header line, 22 rows of the arena, a legend line.
void render(arena::Battle& battle, std::uint32_t frame, bool in_place) {
    constexpr int map_w = 80;
    constexpr int map_h = 22;
    const auto cell = [](int x, int y) {
        return static_cast<std::size_t>(y) * map_w + static_cast<std::size_t>(x);
    };
    ts::World& world = battle.world();
    const arena::Bounds b = world.resource<arena::Bounds>();
    std::vector<std::array<std::uint32_t, 2>> cells(std::size_t{map_w} * map_h, {0, 0});
    world.query<const arena::Position&, const arena::Team&>().each(
        [&](const arena::Position& p, const arena::Team& t) {
            const int x = std::clamp(static_cast<int>(p.x / b.width * map_w), 0, map_w - 1);
            const int y = std::clamp(static_cast<int>(p.y / b.height * map_h), 0, map_h - 1);
            ++cells[cell(x, y)][t.id];
        });
    // "Dense" is above the average occupancy of a cell.
    const double dense = static_cast<double>(world.resource<arena::Census>().alive[0] +
                                             world.resource<arena::Census>().alive[1]) /
                         (map_w * map_h);
    std::string out;
    if (in_place) out += "\x1b[H\x1b[2J";
    const arena::Census& c = world.resource<arena::Census>();
    const arena::Tally& t = world.resource<arena::Tally>();
    char line[128];
    std::snprintf(line, sizeof line, "frame %-6u red %-8u blue %-8u deaths R %-7llu B %-7llu",
                  frame, c.alive[0], c.alive[1], static_cast<unsigned long long>(t.deaths[0]),
                  static_cast<unsigned long long>(t.deaths[1]));
    out += line;
    out += '\n';
    for (int y = 0; y < map_h; ++y) {
        for (int x = 0; x < map_w; ++x) {
            const auto& n = cells[cell(x, y)];
            char ch = '.';
            if (n[0] > 0 && n[1] > 0) {
                ch = '*';
            } else if (n[0] > 0) {
                ch = static_cast<double>(n[0]) >= dense ? 'R' : 'r';
            } else if (n[1] > 0) {
                ch = static_cast<double>(n[1]) >= dense ? 'B' : 'b';
            }
            out += ch;
        }
        out += '\n';
    }
    out += "R/r red  B/b blue  * both  (arena " + std::to_string(static_cast<int>(b.width)) + "x" +
           std::to_string(static_cast<int>(b.height)) + ")\n";
    std::cout << out << std::flush;
}

void progress(std::uint32_t done, std::uint32_t total, double elapsed_s) {
    constexpr int bar_width = 40;
    const int filled = static_cast<int>(static_cast<double>(done) * bar_width / total);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(bar_width, '-');
    const double eta = done > 0 ? elapsed_s * (total - done) / done : 0.0;
    std::printf("\r[%s] %u/%u frames  %.1fs  eta %.1fs ", bar.c_str(), done, total, elapsed_s, eta);
    std::fflush(stdout);
}

struct RunResult {
    std::uint64_t hash = 0;
    double seconds = 0;
    std::vector<double> frame_ms;
    std::vector<std::vector<double>> system_ms;  ///< [system][frame]
    std::vector<std::string> system_names;
    std::vector<ts::Phase> system_phases;
    std::size_t alive = 0;
    std::uint64_t spawned = 0;
    std::size_t archetypes = 0;
    std::size_t stages = 0;
    arena::Tally tally;
    arena::Census census;
    std::uint64_t acquired = 0;
};

/// Runs one battle. `show` turns on the progress bar, the map and the JSON.
RunResult run(const arena::Config& config, int workers, const Options& o, bool show) {
    const bool tty = show && isatty(STDOUT_FILENO) != 0;
    const bool bar = tty && o.render_every == 0;
    arena::Battle battle(config, workers);
    RunResult r;
    r.stages = battle.stage_count();
    const std::size_t n_systems = battle.times().size();
    r.system_ms.assign(n_systems, {});
    for (std::size_t i = 0; i < n_systems; ++i) {
        r.system_names.push_back(battle.times().name(i));
        r.system_phases.push_back(battle.times().phase(i));
    }
    nlohmann::json frames = nlohmann::json::array();
    const bool json = show && !o.json_path.empty();
    // The last frames are traced (the schedule writes the file when the last one ends).
    const bool trace = show && !o.trace_path.empty();
    const std::uint32_t first_traced =
        config.frames > trace_frames ? config.frames - trace_frames + 1 : 1;

#ifdef TESSERA_ARENA_INSPECT
    // The inspector reads and edits the world between frames, on this thread.
    std::optional<ts::Inspector> inspector;
    if (show && o.inspect_port >= 0) {
        inspector.emplace(static_cast<std::uint16_t>(o.inspect_port));
        std::cout << "inspector: " << inspector->url() << std::endl;
    }
#endif
    const auto start = std::chrono::steady_clock::now();
    std::uint32_t last_bar = 0;
    for (std::uint32_t f = 1; f <= config.frames; ++f) {
        const auto t0 = std::chrono::steady_clock::now();
#ifdef TESSERA_ARENA_INSPECT
        if (inspector) inspector->update(battle.world(), &battle.schedule());
#endif
        if (trace && f == first_traced)
            battle.schedule().trace_to(o.trace_path, config.frames - first_traced + 1);
        battle.step();
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        r.frame_ms.push_back(ms);
        for (std::size_t i = 0; i < n_systems; ++i) {
            r.system_ms[i].push_back(static_cast<double>(battle.frame_times()[i]) / 1e6);
        }
        ts::World& world = battle.world();
        if (json) {
            const arena::Census& c = world.resource<arena::Census>();
            const arena::Tally& t = world.resource<arena::Tally>();
            nlohmann::json systems = nlohmann::json::object();
            for (std::size_t i = 0; i < n_systems; ++i)
                systems[r.system_names[i]] = r.system_ms[i].back();
            const std::uint64_t spawned = battle.spawned();
            frames.push_back({{"frame", f},
                              {"frame_ms", ms},
                              {"entities", world.count()},
                              {"spawned", spawned},
                              {"despawned", spawned - world.count()},
                              {"archetypes", world.archetype_count()},
                              {"alive", {{"red", c.alive[0]}, {"blue", c.alive[1]}}},
                              {"hp", {{"red", c.hp[0]}, {"blue", c.hp[1]}}},
                              {"deaths", {{"red", t.deaths[0]}, {"blue", t.deaths[1]}}},
                              {"respawned", t.respawned},
                              {"shots", t.shots},
                              {"damage_events", t.damage_events},
                              {"stuns", t.stuns},
                              {"targets_acquired", world.resource<arena::Targeting>().acquired},
                              {"targets_lost", t.lost},
                              {"skipped_commands", battle.skipped_commands()},
                              {"systems_ms", systems}});
        }
        if (show && o.render_every > 0 && (f % o.render_every == 0 || f == config.frames)) {
            render(battle, f, isatty(STDOUT_FILENO) != 0);
        }
        if (show && o.fps > 0) {
            std::this_thread::sleep_until(t0 + std::chrono::nanoseconds(1'000'000'000 / o.fps));
        }
        if (bar && (f == config.frames ||
                    f - last_bar >= std::max<std::uint32_t>(1, config.frames / 100))) {
            last_bar = f;
            progress(
                f, config.frames,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (bar) std::printf("\n");
    if (trace) {
        std::cout << "trace: frames " << first_traced << "-" << config.frames << " in "
                  << o.trace_path << "\n";
    }

    ts::World& world = battle.world();
    r.hash = battle.hash();
    r.alive = world.count();
    r.spawned = battle.spawned();
    r.archetypes = world.archetype_count();
    r.tally = world.resource<arena::Tally>();
    r.census = world.resource<arena::Census>();
    r.acquired = world.resource<arena::Targeting>().acquired;

    if (json) {
        nlohmann::json doc = {
            {"program", "arena"},
            {"config",
             {{"units", config.units},
              {"frames", config.frames},
              {"workers", workers},
              {"seed", config.seed}}},
            {"seconds", r.seconds},
            {"state_hash", hex(r.hash)},
            {"systems", r.system_names},
            {"frames", std::move(frames)},
        };
        std::ofstream file(o.json_path);
        file << doc.dump(1) << '\n';
        if (!file) {
            std::cerr << "arena: cannot write " << o.json_path << "\n";
            std::exit(2);
        }
    }
    return r;
}

void table(const arena::Config& config, int workers, const RunResult& r) {
    auto row = [](const std::string& name, const std::string& value) {
        std::cout << "  " << std::left << std::setw(26) << name << std::right << value << "\n";
    };
    std::cout << "\narena: " << config.units << " units, " << config.frames << " frames, "
              << workers << (workers == 1 ? " worker" : " workers") << ", seed " << config.seed
              << "\n";
    row("frames", std::to_string(r.frame_ms.size()));
    row("entities alive", std::to_string(r.alive) + "  (units: red " +
                              std::to_string(r.census.alive[0]) + ", blue " +
                              std::to_string(r.census.alive[1]) + ")");
    row("entities spawned", std::to_string(r.spawned));
    row("entities despawned", std::to_string(r.spawned - r.alive));
    row("archetypes", std::to_string(r.archetypes));
    row("schedule stages", std::to_string(r.stages));
    row("deaths (red / blue)",
        std::to_string(r.tally.deaths[0]) + " / " + std::to_string(r.tally.deaths[1]));
    row("respawned", std::to_string(r.tally.respawned));
    row("shots / stuns", std::to_string(r.tally.shots) + " / " + std::to_string(r.tally.stuns));
    row("targets acquired / lost",
        std::to_string(r.acquired) + " / " + std::to_string(r.tally.lost));
    std::cout << "\n  " << std::left << std::setw(14) << "system" << std::setw(13) << "phase"
              << std::right << std::setw(12) << "median ms" << std::setw(10) << "p99 ms"
              << std::setw(10) << "mean ms"
              << "\n";
    std::cout << std::fixed << std::setprecision(3);
    double sum_mean = 0;
    for (std::size_t i = 0; i < r.system_ms.size(); ++i) {
        const std::vector<double>& v = r.system_ms[i];
        double mean = 0;
        for (double x : v) mean += x;
        mean /= static_cast<double>(std::max<std::size_t>(1, v.size()));
        sum_mean += mean;
        std::cout << "  " << std::left << std::setw(14) << r.system_names[i] << std::setw(13)
                  << ts::phase_name(r.system_phases[i]) << std::right << std::setw(12)
                  << percentile(v, 0.5) << std::setw(10) << percentile(v, 0.99) << std::setw(10)
                  << mean << "\n";
    }
    double frame_mean = 0;
    for (double x : r.frame_ms) frame_mean += x;
    frame_mean /= static_cast<double>(std::max<std::size_t>(1, r.frame_ms.size()));
    std::cout << "  " << std::left << std::setw(27) << "frame" << std::right << std::setw(12)
              << percentile(r.frame_ms, 0.5) << std::setw(10) << percentile(r.frame_ms, 0.99)
              << std::setw(10) << frame_mean << "\n";
    std::cout << "  (systems add up to " << sum_mean << " ms per frame on average; the frame is "
              << "shorter when systems overlap)\n";
    std::cout.unsetf(std::ios::fixed);
    std::cout << std::setprecision(6);
    std::cout << "\n";
    row("run time", [&] {
        std::ostringstream s;
        s << std::fixed << std::setprecision(2) << r.seconds << " s";
        return s.str();
    }());
    row("state hash", hex(r.hash));
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    const arena::Config& config = o.config;
    // oneTBB caps its threads at the core count; --workers beyond that asks for more threads.
    std::optional<tbb::global_control> allow;
    if (config.workers > static_cast<int>(std::thread::hardware_concurrency())) {
        allow.emplace(tbb::global_control::max_allowed_parallelism,
                      static_cast<std::size_t>(config.workers));
    }
    try {
        if (!o.verify) {
            const RunResult r = run(config, config.workers, o, true);
            table(config, config.workers, r);
            return 0;
        }
        // The same battle on one worker (every system inline on this thread) and on N.
        std::cout << "verify: " << config.units << " units, " << config.frames << " frames, seed "
                  << config.seed << ": 1 worker, then " << config.workers << "\n";
        const RunResult one = run(config, 1, o, false);
        std::cout << "  1 worker:  " << std::fixed << std::setprecision(2) << one.seconds << " s\n";
        const RunResult many = run(config, config.workers, o, true);
        std::cout << "  " << config.workers << (config.workers == 1 ? " worker:  " : " workers: ")
                  << many.seconds << " s\n";
        std::cout.unsetf(std::ios::fixed);
        table(config, config.workers, many);
        const bool same = one.hash == many.hash;
        std::cout << "\nstate hash: 1 worker " << hex(one.hash) << ", " << config.workers
                  << (config.workers == 1 ? " worker " : " workers ") << hex(many.hash) << ": "
                  << (same ? "match" : "MISMATCH") << "\n";
        return same ? 0 : 1;
    } catch (const std::exception& e) {
        std::cerr << "arena: " << e.what() << "\n";
        return 1;
    }
}

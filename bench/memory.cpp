// memory: RSS growth (from /proc/self/statm) after creating N entities with Position+Velocity,
// per entity; raw baseline: two vectors. Both create one entity at a time, as in `create`.
//
// RSS growth depends on the process's history (freed pages glibc keeps, its adaptive mmap
// threshold), so each figure is taken in a child process that re-executes this binary with
// kMemoryChildFlag: the heap is always at "default glibc, process start", and the benchmark
// order or the scenarios run before do not matter.
#include "common.hpp"

#include <tessera/tessera.hpp>

#include <cerrno>
#include <cstdlib>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

namespace tessera_bench {

namespace {

struct ChildResult {
    long long rss_growth = 0;
    unsigned long long count = 0;
    double seconds = 0;
};

/// Runs this binary as a memory child for `variant`; false (with `error` set) on failure.
bool run_child(std::string_view variant, ChildResult& out, std::string& error) {
    int fds[2];
    if (pipe(fds) != 0) {
        error = "pipe failed";
        return false;
    }
    const std::string flag = std::string(kMemoryChildFlag) + std::string(variant);
    const std::string count = std::string("--tessera-n=") + std::to_string(entity_count());
    const pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        error = "fork failed";
        return false;
    }
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        char name[] = "tessera_bench";
        char* args[] = {name, const_cast<char*>(count.c_str()), const_cast<char*>(flag.c_str()),
                        nullptr};
        execv("/proc/self/exe", args);
        _exit(127);
    }
    close(fds[1]);
    std::string text;
    char buffer[256];
    for (;;) {
        const ssize_t n = read(fds[0], buffer, sizeof buffer);
        if (n > 0) {
            text.append(buffer, static_cast<std::size_t>(n));
        } else if (n == 0 || errno != EINTR) {
            break;
        }
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        error = "memory child failed (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
        return false;
    }
    if (std::sscanf(text.c_str(), "%lld %llu %lf", &out.rss_growth, &out.count, &out.seconds) !=
        3) {
        error = "memory child printed no result";
        return false;
    }
    return true;
}

void memory_bench(benchmark::State& state, std::string_view variant) {
    const std::size_t n = entity_count();
    ChildResult result;
    for (auto _ : state) {
        std::string error;
        if (!run_child(variant, result, error)) {
            state.SkipWithError(error.c_str());
            break;
        }
        state.SetIterationTime(result.seconds);
    }
    if (state.error_occurred()) return;
    if (result.count != n || result.rss_growth <= 0) {
        state.SkipWithError("memory: wrong entity count or no RSS growth");
        return;
    }
    state.counters["bytes_per_entity"] =
        benchmark::Counter(static_cast<double>(result.rss_growth) / static_cast<double>(n));
    set_items(state, n);
}

void memory_raw(benchmark::State& state) {
    memory_bench(state, "raw");
}
void memory_tessera(benchmark::State& state) {
    memory_bench(state, "tessera");
}

void memory_registration(benchmark::internal::Benchmark* b) {
    b->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
}

BENCHMARK(memory_raw)->Name("memory/raw")->Apply(memory_registration);
BENCHMARK(memory_tessera)->Name("memory/tessera")->Apply(memory_registration);

}  // namespace

int memory_child(std::string_view variant) {
    const std::size_t n = entity_count();
    const long long before = resident_bytes();
    unsigned long long count = 0;
    long long after = -1;
    double seconds = 0;
    if (variant == "raw") {
        AlignedVector<Position> pos;
        AlignedVector<Velocity> vel;
        Stopwatch watch;
        for (std::size_t i = 0; i < n; ++i) {
            pos.push_back(Position{static_cast<float>(i), 0.0f});
            vel.push_back(Velocity{1.0f, 1.0f});
        }
        seconds = watch.seconds();
        benchmark::DoNotOptimize(pos.data());
        benchmark::DoNotOptimize(vel.data());
        after = resident_bytes();
        count = pos.size() == vel.size() ? pos.size() : 0;
    } else if (variant == "tessera") {
        tessera::World world;
        Stopwatch watch;
        for (std::size_t i = 0; i < n; ++i) {
            world.spawn(Position{static_cast<float>(i), 0.0f}, Velocity{1.0f, 1.0f});
        }
        seconds = watch.seconds();
        after = resident_bytes();
        count = world.count();
    } else {
        std::fprintf(stderr, "tessera_bench: unknown memory variant '%.*s'\n",
                     static_cast<int>(variant.size()), variant.data());
        return 2;
    }
    if (before < 0 || after < 0) {
        std::fprintf(stderr, "tessera_bench: cannot read /proc/self/statm\n");
        return 3;
    }
    std::printf("%lld %llu %.9f\n", after - before, count, seconds);
    return 0;
}

}  // namespace tessera_bench

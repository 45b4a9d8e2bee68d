// Process-wide GPU settings (thresholds, the warning handler), the device probe and the
// device runtime: CUDA's runtime API with TESSERA_GPU_CUDA, else only the host emulation.
#include "runtime.hpp"

#include <tessera/error.hpp>
#include <tessera/gpu.hpp>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

#ifdef TESSERA_GPU_CUDA
#include <cuda_runtime.h>
#endif

namespace tessera::gpu {

namespace {

struct Settings {
    std::mutex mutex;
    Thresholds thresholds;
    WarningHandler handler;
};

Settings& settings() {
    static Settings s;
    return s;
}

// The emulation switch (a test hook) and the device probe.
std::atomic<bool> emulating{false};
std::atomic<bool> emulating_slow{false};

struct Probe {
    detail::device_kind kind = detail::device_kind::none;
    std::string reason;
};

const Probe& probe() {
    static const Probe p = [] {
        Probe r;
#ifdef TESSERA_GPU_CUDA
        int count = 0;
        const cudaError_t e = cudaGetDeviceCount(&count);
        if (e != cudaSuccess) {
            r.reason = std::string("no usable CUDA device (") + cudaGetErrorString(e) + ")";
        } else if (count == 0) {
            r.reason = "no CUDA device";
        } else {
            r.kind = detail::device_kind::cuda;
        }
#else
        r.reason = "tessera_gpu was built without the CUDA toolkit";
#endif
        return r;
    }();
    return p;
}

}  // namespace

const char* to_string(backend b) noexcept {
    switch (b) {
        case backend::none: return "none";
        case backend::cpu: return "cpu";
        case backend::cuda: return "cuda";
        case backend::emulated: return "emulated";
    }
    return "none";
}

Thresholds thresholds() noexcept {
    Settings& s = settings();
    const std::lock_guard lock(s.mutex);
    return s.thresholds;
}

void set_thresholds(const Thresholds& t) {
    if (!(t.baseline_ns > 0.0) || !std::isfinite(t.baseline_ns)) {
        throw Error(errc::invalid_argument,
                    "gpu::set_thresholds: baseline_ns must be a positive finite number of "
                    "nanoseconds (got " +
                        std::to_string(t.baseline_ns) + ")");
    }
    Settings& s = settings();
    const std::lock_guard lock(s.mutex);
    s.thresholds = t;
}

void set_warning_handler(WarningHandler handler) {
    Settings& s = settings();
    const std::lock_guard lock(s.mutex);
    s.handler = std::move(handler);
}

bool cuda_compiled() noexcept {
#ifdef TESSERA_GPU_CUDA
    return true;
#else
    return false;
#endif
}

bool device_available() noexcept {
    return probe().kind == detail::device_kind::cuda;
}

namespace detail {

device_kind device() noexcept {
    if (emulating.load(std::memory_order_relaxed)) return device_kind::emulated;
    return probe().kind;
}

std::string_view no_device_reason() noexcept {
    return device() == device_kind::none ? std::string_view(probe().reason) : std::string_view();
}

void set_emulation(bool on, bool slow) noexcept {
    emulating.store(on, std::memory_order_relaxed);
    emulating_slow.store(on && slow, std::memory_order_relaxed);
}

void warn(std::string_view system, std::string_view message) {
    Settings& s = settings();
    // Held while the handler runs: systems on several workers warn one at a time.
    const std::lock_guard lock(s.mutex);
    if (s.handler) {
        s.handler(system, message);
    } else {
        std::fprintf(stderr, "tessera::gpu: system '%.*s' %.*s\n", static_cast<int>(system.size()),
                     system.data(), static_cast<int>(message.size()), message.data());
    }
}

namespace rt {

namespace {

bool emulated() noexcept {
    return emulating.load(std::memory_order_relaxed);
}

// An emulated event: done once waited for, or at once unless the emulation is slow.
struct EmulatedEvent {
    bool done = true;
};

#ifdef TESSERA_GPU_CUDA
void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess)
        throw DeviceFailure(std::string(what) + " failed: " + cudaGetErrorString(e));
}
#endif

void* aligned(std::size_t bytes) {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    if (p == nullptr) throw std::bad_alloc();
    return p;
}

}  // namespace

void* device_alloc(std::size_t bytes) {
    if (emulated()) return aligned(bytes);
#ifdef TESSERA_GPU_CUDA
    void* p = nullptr;
    check(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc");
    return p;
#else
    throw DeviceFailure("no device");
#endif
}

void device_free(void* p) noexcept {
    if (p == nullptr) return;
    if (emulated()) {
        std::free(p);
        return;
    }
#ifdef TESSERA_GPU_CUDA
    cudaFree(p);
#endif
}

void* host_alloc(std::size_t bytes) {
    if (emulated()) return aligned(bytes);
#ifdef TESSERA_GPU_CUDA
    void* p = nullptr;
    check(cudaMallocHost(&p, bytes == 0 ? 1 : bytes), "cudaMallocHost");
    return p;
#else
    throw DeviceFailure("no device");
#endif
}

void host_free(void* p) noexcept {
    if (p == nullptr) return;
    if (emulated()) {
        std::free(p);
        return;
    }
#ifdef TESSERA_GPU_CUDA
    cudaFreeHost(p);
#endif
}

void to_device(void* dst, const void* src, std::size_t bytes, [[maybe_unused]] Stream s) {
    if (bytes == 0) return;
    if (emulated()) {
        std::memcpy(dst, src, bytes);
        return;
    }
#ifdef TESSERA_GPU_CUDA
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(s)),
          "cudaMemcpyAsync (upload)");
#endif
}

void to_host(void* dst, const void* src, std::size_t bytes, [[maybe_unused]] Stream s) {
    if (bytes == 0) return;
    if (emulated()) {
        std::memcpy(dst, src, bytes);
        return;
    }
#ifdef TESSERA_GPU_CUDA
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(s)),
          "cudaMemcpyAsync (readback)");
#endif
}

void device_copy(void* dst, const void* src, std::size_t bytes, [[maybe_unused]] Stream s) {
    if (bytes == 0) return;
    if (emulated()) {
        std::memcpy(dst, src, bytes);
        return;
    }
#ifdef TESSERA_GPU_CUDA
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(s)),
          "cudaMemcpyAsync (device to device)");
#endif
}

Stream stream_create() {
    if (emulated()) return nullptr;
#ifdef TESSERA_GPU_CUDA
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    return s;
#else
    return nullptr;
#endif
}

void stream_destroy([[maybe_unused]] Stream s) noexcept {
#ifdef TESSERA_GPU_CUDA
    if (s != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(s));
#endif
}

void stream_wait([[maybe_unused]] Stream s) {
    if (emulated()) return;
#ifdef TESSERA_GPU_CUDA
    check(cudaStreamSynchronize(static_cast<cudaStream_t>(s)), "cudaStreamSynchronize");
#endif
}

void check_launch([[maybe_unused]] const char* what) {
    if (emulated()) return;
#ifdef TESSERA_GPU_CUDA
    check(cudaGetLastError(), what);
#endif
}

Event event_create() {
    if (emulated()) return new EmulatedEvent;
#ifdef TESSERA_GPU_CUDA
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    return e;
#else
    return nullptr;
#endif
}

// An event is destroyed by the mode that made it: residencies are made and dropped while the
// emulation switch stays put (tests flip it between worlds).
void event_destroy(Event e) noexcept {
    if (e == nullptr) return;
    if (emulated()) {
        delete static_cast<EmulatedEvent*>(e);
        return;
    }
#ifdef TESSERA_GPU_CUDA
    cudaEventDestroy(static_cast<cudaEvent_t>(e));
#endif
}

void event_record(Event e, [[maybe_unused]] Stream s) {
    if (emulated()) {
        static_cast<EmulatedEvent*>(e)->done = !emulating_slow.load(std::memory_order_relaxed);
        return;
    }
#ifdef TESSERA_GPU_CUDA
    check(cudaEventRecord(static_cast<cudaEvent_t>(e), static_cast<cudaStream_t>(s)),
          "cudaEventRecord");
#endif
}

bool event_done(Event e) {
    if (emulated()) return static_cast<EmulatedEvent*>(e)->done;
#ifdef TESSERA_GPU_CUDA
    const cudaError_t r = cudaEventQuery(static_cast<cudaEvent_t>(e));
    if (r == cudaErrorNotReady) return false;
    check(r, "cudaEventQuery");
#endif
    return true;
}

void event_wait(Event e) {
    if (emulated()) {
        static_cast<EmulatedEvent*>(e)->done = true;
        return;
    }
#ifdef TESSERA_GPU_CUDA
    check(cudaEventSynchronize(static_cast<cudaEvent_t>(e)), "cudaEventSynchronize");
#endif
}

}  // namespace rt
}  // namespace detail
}  // namespace tessera::gpu

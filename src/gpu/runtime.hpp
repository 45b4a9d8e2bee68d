// The device runtime behind detail/gpu_device.hpp: CUDA's runtime API when tessera_gpu is
// built with the toolkit (TESSERA_GPU_CUDA), the host emulation otherwise or when tests turn
// it on. Every call throws DeviceFailure when the device reports an error.
#pragma once

#include <tessera/detail/gpu_device.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace tessera::gpu::detail::rt {

/// A device call failed (out of device memory, a failed launch, a lost device).
struct DeviceFailure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

using Event = void*;

void* device_alloc(std::size_t bytes);
void device_free(void* p) noexcept;
/// Host memory a readback can target asynchronously (pinned with CUDA).
void* host_alloc(std::size_t bytes);
void host_free(void* p) noexcept;
void to_device(void* dst, const void* src, std::size_t bytes, Stream s);
void to_host(void* dst, const void* src, std::size_t bytes, Stream s);
void device_copy(void* dst, const void* src, std::size_t bytes, Stream s);
Stream stream_create();
void stream_destroy(Stream s) noexcept;
/// Waits for everything queued on `s`.
void stream_wait(Stream s);
/// Checks the last launch on `s` was accepted.
void check_launch(const char* what);
Event event_create();
void event_destroy(Event e) noexcept;
void event_record(Event e, Stream s);
/// Whether everything before the event's record has finished.
bool event_done(Event e);
void event_wait(Event e);

}  // namespace tessera::gpu::detail::rt

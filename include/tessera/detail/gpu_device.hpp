/// @file detail/gpu_device.hpp
/// The untyped half of GPU kernel systems (gpu.hpp): the device runtime (CUDA through the
/// tessera_gpu library, or its host emulation for tests) and the residency of a kernel's
/// tables on the device (buffers per table and component, uploads driven by change ticks and
/// table stamps, readback and merging back into the world). Internal, not API; compiled in
/// src/gpu/.
#pragma once

#include <tessera/component.hpp>
#include <tessera/entity.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::detail {
class Storage;
}  // namespace tessera::detail

namespace tessera::gpu::detail {

/// What the device runtime found.
enum class device_kind : std::uint8_t {
    none,      ///< no device (no toolkit at build time, or none at run time)
    cuda,      ///< a CUDA device
    emulated,  ///< the host emulation of the device path (tests: `set_emulation`)
};

/// The device the runtime uses now (probed once; emulation overrides it).
[[nodiscard]] device_kind device() noexcept;
/// Why there is no device, for the fallback warning ("" when there is one).
[[nodiscard]] std::string_view no_device_reason() noexcept;
/// Turns the host emulation on or off. `slow`: an emulated readback stays "in flight" until
/// waited for, so the coalescing path of `readback::async` runs. Test hook; main thread only.
void set_emulation(bool on, bool slow = false) noexcept;

/// A CUDA stream (or null for the default stream / the emulation).
using Stream = void*;

/// Runs `kernel` (the kernel object) over rows [0, rows) of a kernel's columns on the device:
/// `in[k]` is component k's buffer, `out[k]` where results go (the same buffer except for a
/// pairwise kernel's written components). Compiled in the user's translation unit (CUDA or
/// the emulation).
using LaunchFn = void (*)(Stream stream, std::uint32_t rows, float dt, const void* kernel,
                          const void* uniforms, void* const* in, void* const* out);

/// Sends a warning through the user's handler (stderr by default).
void warn(std::string_view system, std::string_view message);

/// How a kernel's components sit in a table.
struct Layout {
    std::vector<ComponentId> ids;       ///< the kernel's components, in parameter order
    std::vector<std::uint32_t> sizes;   ///< their sizes
    std::vector<std::uint8_t> written;  ///< 1 for a non-const component
    bool pairwise = false;
};

/// The device buffers of one table (readback::none exposes them).
struct TableView {
    std::uint32_t archetype = 0;       ///< the table's index in the world
    std::uint32_t rows = 0;            ///< rows on the device
    std::vector<const void*> data;     ///< device pointer per component (Layout order)
    std::span<const Entity> entities;  ///< the entity of each device row (host memory)
};

/// The device side of one kernel system: its tables' buffers and what is in flight.
/// Main thread or the system's own run only (never two at once).
class Residency {
public:
    Residency(Layout layout, std::string name);
    ~Residency();
    Residency(const Residency&) = delete;
    Residency& operator=(const Residency&) = delete;

    /// One dispatch over `tables` (archetype indices) of `storage`: bring results back where
    /// the world changed, upload changed columns, launch, read back as `mode` says
    /// (0 async, 1 sync, 2 none). Results reaching the world are stamped with `tick`. Returns
    /// false when the device failed (out of device memory, a failed launch, a lost device):
    /// the device state is then dropped (results not yet in the world are lost) and
    /// `failure()` says why.
    [[nodiscard]] bool dispatch(tessera::detail::Storage& storage,
                                std::span<const std::uint32_t> tables, std::uint64_t tick, float dt,
                                const void* kernel, const void* uniforms, LaunchFn launch,
                                int mode);
    /// Waits for everything in flight and brings every result the world lacks into it
    /// (stamped with `tick`).
    void finish(tessera::detail::Storage& storage, std::uint64_t tick);
    /// Why the last `dispatch` returned false.
    [[nodiscard]] const std::string& failure() const noexcept { return failure_; }
    /// Waits for everything in flight, reading nothing back.
    void wait();
    /// Forgets what the device holds (the CPU backend ran: the world is the truth).
    void invalidate() noexcept;
    /// The device buffers, one entry per table that has rows on the device.
    [[nodiscard]] std::vector<TableView> views() const;
    /// Bytes copied host to device and device to host so far (tests, benchmarks).
    [[nodiscard]] std::uint64_t uploaded_bytes() const noexcept { return uploaded_; }
    /// Bytes copied device to host so far.
    [[nodiscard]] std::uint64_t downloaded_bytes() const noexcept { return downloaded_; }

    struct Table;

private:
    Table& table(std::uint32_t archetype);
    void run(tessera::detail::Storage& storage, std::span<const std::uint32_t> tables,
             std::uint64_t tick, float dt, const void* kernel, const void* uniforms,
             LaunchFn launch, int mode);
    void bring_back(tessera::detail::Storage& s, Table& t, std::uint64_t tick, bool staged);
    void upload(tessera::detail::Storage& s, Table& t, bool structural,
                std::span<const std::uint8_t> dirty);
    Layout layout_;
    std::string name_;
    std::string failure_;
    Stream stream_ = nullptr;
    std::vector<std::unique_ptr<Table>> tables_;
    std::uint64_t uploaded_ = 0;
    std::uint64_t downloaded_ = 0;
};

}  // namespace tessera::gpu::detail

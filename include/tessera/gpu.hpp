/// @file gpu.hpp
/// GPU kernel systems (experimental): one C++ kernel, run as a parallel loop on the CPU or on a
/// CUDA device, chosen per dispatch. Not included by tessera.hpp; link `tessera::gpu`.
/// docs/gpu.md is the guide.
///
/// **Kernels.** A kernel is a stateless callable (a lambda without captures) marked
/// `TESSERA_KERNEL`, taking the system's components by reference, then `float dt`, then the
/// uniforms (a trivially copyable struct, the only way in for outside values):
/// `[] TESSERA_KERNEL (Position& p, const Velocity& v, float dt, const Gravity& u) { ... }`.
/// A pairwise kernel (`pairwise_system`) takes each component twice, `self` then `other`:
/// `(Body& self, const Body& other, float dt, const U& u)`, and runs for every ordered pair of
/// distinct rows of one table, reading `other` as it was when the dispatch started.
///
/// **Backends.** The CPU backend is the kernel run over the matching rows by `par_each`
/// (disabled rows skipped exactly, writes stamped like any system's). The CUDA backend exists
/// only where the kernel's translation unit is compiled by nvcc (a `.cu` file, with
/// `--extended-lambda`): it keeps device buffers per matching table and component, uploads a
/// column only when the world changed it (change ticks, table stamps), launches the kernel
/// over every row and reads results back as `Options::readback` says.
///
/// **Capabilities never throw.** No toolkit at build time, no device at run time, a
/// component that is not trivially copyable or that is enableable, or a translation unit not
/// compiled by nvcc: the system runs on the CPU backend and warns once through the handler of
/// `set_warning_handler` (stderr by default); `KernelSystem::backend()` tells.
#pragma once

#include <tessera/detail/gpu_device.hpp>
#include <tessera/detail/gpu_launch.hpp>
#include <tessera/error.hpp>
#include <tessera/schedule.hpp>
#include <tessera/system.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

/// Marks a kernel: `__host__ __device__` when nvcc compiles the translation unit, nothing
/// otherwise, so one kernel runs on both backends.
#if defined(__CUDACC__)
#define TESSERA_KERNEL __host__ __device__
#else
#define TESSERA_KERNEL
#endif

namespace tessera::gpu {

/// Where a kernel system runs.
enum class target : std::uint8_t {
    cpu,        ///< always the CPU backend
    gpu,        ///< the CUDA backend when it can run, else the CPU backend (one warning)
    automatic,  ///< per dispatch, by entity count and measured cost (see `Thresholds`)
};

/// When a CUDA dispatch's results reach the world. The CPU backend writes in place in every
/// mode: its results are visible as soon as the system returns.
enum class readback : std::uint8_t {
    async,  ///< applied at the next dispatch (or `sync()`): CPU code reads last frame's values
    sync,   ///< applied before the system returns: systems after it see this frame's values
    none,   ///< never read back in steady state: render from `KernelSystem::device_tables()`
};

/// Which backend ran a kernel system's last dispatch.
enum class backend : std::uint8_t {
    none,      ///< nothing ran yet
    cpu,       ///< the CPU backend
    cuda,      ///< the CUDA backend
    emulated,  ///< the device path on the host emulation (tests only)
};

/// The backend's name: "none", "cpu", "cuda" or "emulated".
[[nodiscard]] const char* to_string(backend b) noexcept;

/// What `kernel_system` and `pairwise_system` take besides the kernel.
struct Options {
    gpu::target target = gpu::target::automatic;    ///< where it runs
    gpu::readback readback = gpu::readback::async;  ///< when CUDA results reach the world
    Phase phase = Phase::update;                    ///< `SystemConfig::phase`
    int order = 0;                                  ///< `SystemConfig::order`
    std::vector<std::string> after{};   ///< systems it runs after (`SystemConfig::after`)
    std::vector<std::string> before{};  ///< systems it runs before (`SystemConfig::before`)
};

/// Break-even points of `target::automatic`: a kernel dispatches to the GPU when its entity
/// count times its measured CPU cost per entity, over `baseline_ns`, reaches the threshold of
/// its readback mode. Process-wide (`thresholds`, `set_thresholds`, `calibrate`).
struct Thresholds {
    std::size_t none = 50'000;   ///< entities, for `readback::none`
    std::size_t async = 65'000;  ///< entities, for `readback::async`
    std::size_t sync = 700'000;  ///< entities, for `readback::sync`
    double baseline_ns = 1.0;    ///< CPU-backend ns per entity of the baseline kernel
};

/// The current thresholds (the defaults above until set or calibrated; not measured on any
/// machine, see docs/gpu.md).
[[nodiscard]] Thresholds thresholds() noexcept;
/// Sets the thresholds for every kernel system's next dispatch.
/// @throws Error(invalid_argument) when `baseline_ns` is not a positive finite number.
void set_thresholds(const Thresholds& t);
/// Measures the break-even points on this machine (the baseline kernel on the CPU backend and,
/// when a CUDA device is present, on the device in each readback mode), sets them and returns
/// them. Without a device only `baseline_ns` is measured. Takes up to a second.
Thresholds calibrate();

/// Receives a warning: the system's name and what happened.
using WarningHandler = std::function<void(std::string_view system, std::string_view message)>;
/// Sets where warnings go (an empty handler restores the default: one line on stderr).
/// Main thread, between schedule runs.
void set_warning_handler(WarningHandler handler);

/// Whether tessera_gpu was built with the CUDA toolkit.
[[nodiscard]] bool cuda_compiled() noexcept;
/// Whether a CUDA device is usable now (probed once).
[[nodiscard]] bool device_available() noexcept;

/// One table's device buffers (`KernelSystem::device_tables`, readback::none). Device memory:
/// pass the pointers to CUDA or graphics interop, never dereference them on the host. Valid
/// until the system's next dispatch or `sync()`.
struct DeviceTable {
    std::uint32_t archetype = 0;          ///< the table's index in the world
    std::size_t rows = 0;                 ///< rows on the device
    std::vector<ComponentId> components;  ///< the kernel's components, in parameter order
    std::vector<const void*> data;        ///< device pointer per component (same order)
    std::span<const Entity> entities;     ///< the entity of each device row (host memory)

    /// The device pointer of `C`'s column, or null when the kernel has no `C`.
    template <class C>
    [[nodiscard]] const C* column() const noexcept {
        for (std::size_t k = 0; k < components.size(); ++k) {
            // By value: nvcc 13 does not emit ComponentId's defaulted operator==.
            if (components[k].value == component_id<std::remove_const_t<C>>().value)
                return static_cast<const C*>(data[k]);
        }
        return nullptr;
    }
};

namespace detail {

/// Whether this translation unit is compiled by nvcc (it selects the CUDA launcher).
#if defined(__CUDACC__)
inline constexpr bool nvcc_v = true;
#else
inline constexpr bool nvcc_v = false;
#endif

/// The schedule parameter of a kernel system: the run's world and ticks; its `prepare` turns
/// change tracking on for the components when a device path can run (main thread).
template <class... Cs>
struct RunInfo {
    World* world;
    std::uint64_t tick;
};

/// Why `C` cannot live on the device, or null.
template <class C>
constexpr const char* device_refusal() noexcept {
    using T = std::remove_const_t<C>;
    if constexpr (!std::is_trivially_copyable_v<T>) {
        return "is not trivially copyable";
    } else if constexpr (tessera::detail::enableable_v<T>) {
        return "is enableable (the CPU backend skips disabled rows exactly)";
    } else {
        return nullptr;
    }
}

/// The untyped interface a handle talks to.
template <class U>
class StateBase {
public:
    virtual ~StateBase() = default;
    virtual void sync() = 0;
    virtual std::vector<DeviceTable> tables() const = 0;
    virtual const Residency* residency() const noexcept = 0;
    std::string name;
    U uniforms{};
    gpu::backend last = gpu::backend::none;
};

/// A kernel system's state, shared by its handle and its schedule system. `Nvcc` keeps the
/// instantiations of nvcc and host translation units apart (only the former can launch CUDA).
template <bool Nvcc, class K, class U, bool Pair, class... Cs>
class KernelState final : public StateBase<U> {
public:
    using ViewType = View<Cs&...>;

    KernelState(std::string name, U uniforms, K kernel, Options options)
        : options_(std::move(options)), kernel_(kernel) {
        this->name = std::move(name);
        this->uniforms = uniforms;
    }

    /// One run of the system.
    void dispatch(ViewType& view, const RunInfo<Cs...>& run, float dt) {
        World& w = *run.world;
        world_ = &w;
        auto& query = view.query();
        const std::size_t n = query.count();
        gpu::backend b = choose(n);
        if (b != gpu::backend::cpu) {
            if (!residency_) residency_ = std::make_unique<Residency>(layout(), this->name);
            if (!residency_->dispatch(w.storage(), query.state().update(), run.tick, dt, &kernel_,
                                      &this->uniforms, launch_,
                                      static_cast<int>(options_.readback))) {
                broken_ = true;
                warn(this->name, "runs on the CPU backend from now on: the device failed (" +
                                     residency_->failure() + ")");
                residency_.reset();
                b = gpu::backend::cpu;
            }
        }
        if (b == gpu::backend::cpu) {
            if (residency_) residency_->finish(w.storage(), run.tick);
            const auto start = std::chrono::steady_clock::now();
            run_cpu(view, dt);
            if (n >= measure_min) {
                const double ns = std::chrono::duration<double, std::nano>(
                                      std::chrono::steady_clock::now() - start)
                                      .count() /
                                  static_cast<double>(n);
                cpu_ns_ = cpu_ns_ == 0.0 ? ns : 0.75 * cpu_ns_ + 0.25 * ns;
            }
            if (residency_) residency_->invalidate();
        }
        this->last = b;
    }

    void sync() override {
        if (!residency_ || world_ == nullptr) return;
        if (options_.readback == gpu::readback::none)
            residency_->wait();
        else
            residency_->finish(world_->storage(), world_->tick());
    }

    std::vector<DeviceTable> tables() const override {
        std::vector<DeviceTable> out;
        if (!residency_) return out;
        for (const TableView& v : residency_->views()) {
            DeviceTable t;
            t.archetype = v.archetype;
            t.rows = v.rows;
            t.components = {component_id<std::remove_const_t<Cs>>()...};
            t.data.assign(v.data.begin(), v.data.end());
            t.entities = v.entities;
            out.push_back(std::move(t));
        }
        return out;
    }

    const Residency* residency() const noexcept override { return residency_.get(); }

private:
    static constexpr std::size_t measure_min = 1024;

    static Layout layout() {
        Layout l;
        l.ids = {component_id<std::remove_const_t<Cs>>()...};
        l.sizes = {static_cast<std::uint32_t>(sizeof(Cs))...};
        l.written = {static_cast<std::uint8_t>(!std::is_const_v<Cs>)...};
        l.pairwise = Pair;
        return l;
    }

    // The backend of this dispatch; warns once when a requested device path cannot run.
    gpu::backend choose(std::size_t n) {
        if (options_.target == gpu::target::cpu || broken_) return gpu::backend::cpu;
        const device_kind kind = device();
        if (!checked_ || kind != kind_) {  // the reason is worked out once per device kind
            checked_ = true;
            kind_ = kind;
            refusal_ = refusal(kind);
        }
        if (!refusal_.empty()) {
            if (!warned_) {
                warned_ = true;
                warn(this->name, "runs on the CPU backend: " + refusal_);
            }
            return gpu::backend::cpu;
        }
        launch_ = kind == device_kind::emulated ? emulated_fn() : cuda_fn();
        const gpu::backend device_backend =
            kind == device_kind::emulated ? gpu::backend::emulated : gpu::backend::cuda;
        if (options_.target == gpu::target::gpu) return device_backend;
        return above_break_even(n) ? device_backend : gpu::backend::cpu;
    }

    // Why the device path cannot run on `kind` ("" when it can).
    static std::string refusal(device_kind kind) {
        const char* const refusals[] = {device_refusal<Cs>()...};
        const ComponentId ids[] = {component_id<std::remove_const_t<Cs>>()...};
        for (std::size_t k = 0; k < sizeof...(Cs); ++k) {
            if (refusals[k] != nullptr)
                return "component " + std::string(component_info(ids[k]).name) + " " + refusals[k];
        }
        if (kind == device_kind::none) return std::string(no_device_reason());
        if (kind == device_kind::cuda && !Nvcc) {
            return "its kernel's translation unit was not compiled by nvcc (compile it as CUDA, "
                   "see docs/gpu.md)";
        }
        return {};
    }

    // Every component can live on the device (else `choose` never gets to the launchers, and
    // they are not instantiated: a std::string member has no device code).
    static constexpr bool capable = ((device_refusal<Cs>() == nullptr) && ...);

    static LaunchFn emulated_fn() noexcept {
        if constexpr (capable) return &emulated_launch<K, U, Pair, Cs...>;
        return nullptr;
    }

    static LaunchFn cuda_fn() noexcept {
#if defined(__CUDACC__)
        if constexpr (Nvcc && capable) return &cuda_launch<K, U, Pair, Cs...>;
#endif
        return nullptr;
    }

    bool above_break_even(std::size_t n) const {
        const Thresholds t = thresholds();
        const std::size_t limit = options_.readback == gpu::readback::none    ? t.none
                                  : options_.readback == gpu::readback::async ? t.async
                                                                              : t.sync;
        const double cost = cpu_ns_ > 0.0 ? cpu_ns_ : t.baseline_ns;
        return static_cast<double>(n) * cost >= static_cast<double>(limit) * t.baseline_ns;
    }

    void run_cpu(ViewType& view, float dt) {
        if constexpr (!Pair) {
            run_rows(view, dt);
        } else {
            run_pairwise(view, dt, this->uniforms);
        }
    }

    // The kernel over every enabled matching row, split across the workers like `par_each`
    // (rows by prefix sum over the non-empty tables) and stamped like its `T&` terms: ungated
    // tables whole, gated ones per enabled row. The kernel, dt and the uniforms are copied
    // into locals of each range, so the compiler knows writes to the columns cannot change
    // them (a capture by reference would be reloaded per row and block vectorisation).
    void run_rows(ViewType& view, float dt) {
        tessera::detail::QueryState& st = view.query().state();
        tessera::detail::Storage& s = st.storage();
        tables_.clear();
        starts_.clear();
        std::size_t total = 0;
        for (const std::uint32_t index : st.update()) {
            tessera::detail::Archetype& a = s.archetype(index);
            if (a.size == 0) continue;
            tables_.push_back(&a);
            starts_.push_back(total);
            total += a.size;
        }
        const std::uint64_t tick = st.write_tick();
        for (tessera::detail::Archetype* a : tables_) {
            if (!gated(*a)) tessera::detail::stamp_written<Cs&...>(*a, tick);
        }
        const K kernel = kernel_;
        const U uniforms = this->uniforms;
        tessera::detail::parallel_rows(
            total,
            [&](std::size_t begin, std::size_t end) {
                const K k = kernel;
                const U u = uniforms;
                const float t = dt;
                std::size_t i = static_cast<std::size_t>(
                    std::upper_bound(starts_.begin(), starts_.end(), begin) - starts_.begin() - 1);
                while (begin < end) {
                    tessera::detail::Archetype& a = *tables_[i];
                    const auto first = static_cast<std::uint32_t>(begin - starts_[i]);
                    const auto last =
                        static_cast<std::uint32_t>(std::min<std::size_t>(end - starts_[i], a.size));
                    table_rows(s, a, first, last, k, t, u, tick, std::index_sequence_for<Cs...>{});
                    begin = starts_[i] + last;
                    ++i;
                }
            },
            s.serial() || total * cost_ns() < parallel_ns);
    }

    // Below this much estimated work a dispatch runs on the calling thread: splitting it
    // across workers would cost more than it saves.
    static constexpr double parallel_ns = 50'000.0;
    double cost_ns() const noexcept {
        return cpu_ns_ > 0.0 ? cpu_ns_ : thresholds().baseline_ns;
    }

    template <std::size_t... I>
    static void table_rows(tessera::detail::Storage& s, tessera::detail::Archetype& a,
                           std::uint32_t first, std::uint32_t last, const K& k, float t, const U& u,
                           std::uint64_t tick, std::index_sequence<I...>) {
        const std::tuple<Cs*...> bases{reinterpret_cast<Cs*>(
            s.column_data(component_id<std::remove_const_t<Cs>>(), a.index))...};
        if (!gated(a)) {
            for (std::uint32_t r = first; r < last; ++r) k(std::get<I>(bases)[r]..., t, u);
            return;
        }
        const std::uint8_t* const flags[] = {tessera::detail::term_flags<Cs&>(a)...};
        for (std::uint32_t r = first; r < last; ++r) {
            bool on = true;
            for (const std::uint8_t* f : flags) on = on && (f == nullptr || f[r] != 0);
            if (!on) continue;
            if (a.tracked) stamp_row(a, r, tick);
            k(std::get<I>(bases)[r]..., t, u);
        }
    }

    // Whether some component of the kernel has enable flags in `a`.
    static bool gated(const tessera::detail::Archetype& a) noexcept {
        if (!a.enableable) return false;
        const std::uint8_t* const flags[] = {tessera::detail::term_flags<Cs&>(a)...};
        for (const std::uint8_t* f : flags) {
            if (f != nullptr) return true;
        }
        return false;
    }

    static void stamp_row(tessera::detail::Archetype& a, std::uint32_t row, std::uint64_t tick) {
        (
            [&] {
                if constexpr (!std::is_const_v<Cs>) {
                    const std::int32_t c = a.column_index(component_id<Cs>());
                    if (c >= 0) tessera::detail::Storage::stamp_changed(a, row, c, tick);
                }
            }(),
            ...);
    }

    // O(n^2) per table: `self` in place, `other` from a copy of the written columns taken
    // before the table's first pair (read-only columns are read in place).
    void run_pairwise(ViewType& view, float dt, const U& u) {
        tessera::detail::Storage& s = world_->storage();
        const std::uint64_t tick = view.query().state().write_tick();
        for (const std::uint32_t index : view.query().state().update()) {
            tessera::detail::Archetype& a = s.archetype(index);
            if (a.size == 0) continue;
            const std::uint32_t rows = a.size;
            void* cols[] = {static_cast<void*>(
                s.column_data(component_id<std::remove_const_t<Cs>>(), index))...};
            const std::uint8_t* flags[] = {tessera::detail::term_flags<Cs&>(a)...};
            bool gated = false;
            for (const std::uint8_t* f : flags) gated = gated || f != nullptr;
            void* others[sizeof...(Cs)];
            std::size_t k = 0;
            (
                [&] {
                    if constexpr (std::is_const_v<Cs>) {
                        others[k] = cols[k];
                    } else {
                        auto& copy = snapshot_[k];
                        copy.resize(std::size_t{rows} * sizeof(Cs));
                        std::memcpy(copy.data(), cols[k], copy.size());
                        others[k] = copy.data();
                    }
                    ++k;
                }(),
                ...);
            auto enabled = [&](std::uint32_t row) {
                for (const std::uint8_t* f : flags) {
                    if (f != nullptr && f[row] == 0) return false;
                }
                return true;
            };
            tessera::detail::parallel_rows(
                rows,
                [&](std::size_t begin, std::size_t end) {
                    for (auto i = static_cast<std::uint32_t>(begin); i < end; ++i) {
                        if (gated && !enabled(i)) continue;
                        pair_row(i, rows, dt, u, cols, others, gated, enabled,
                                 std::index_sequence_for<Cs...>{});
                    }
                },
                s.serial());
            stamp(a, rows, tick, gated, enabled);
        }
    }

    template <class Enabled, std::size_t... I>
    void pair_row(std::uint32_t i, std::uint32_t rows, float dt, const U& u, void* const* cols,
                  void* const* others, bool gated, const Enabled& enabled,
                  std::index_sequence<I...>) const {
        for (std::uint32_t j = 0; j < rows; ++j) {
            if (j == i || (gated && !enabled(j))) continue;
            kernel_(static_cast<Cs*>(cols[I])[i]..., static_cast<const Cs*>(others[I])[j]..., dt,
                    u);
        }
    }

    template <class Enabled>
    static void stamp(tessera::detail::Archetype& a, std::uint32_t rows, std::uint64_t tick,
                      bool gated, const Enabled& enabled) {
        if (!a.tracked) return;
        (
            [&] {
                if constexpr (!std::is_const_v<Cs>) {
                    const ComponentId id = component_id<Cs>();
                    if (!gated) {
                        tessera::detail::Storage::stamp_column(a, id, tick);
                        return;
                    }
                    const std::int32_t c = a.column_index(id);
                    for (std::uint32_t r = 0; r < rows; ++r) {
                        if (enabled(r)) tessera::detail::Storage::stamp_changed(a, r, c, tick);
                    }
                }
            }(),
            ...);
    }

    Options options_;
    K kernel_;
    World* world_ = nullptr;
    std::unique_ptr<Residency> residency_;
    LaunchFn launch_ = nullptr;
    double cpu_ns_ = 0.0;
    bool warned_ = false;
    bool broken_ = false;   ///< the device failed once: CPU from then on
    bool checked_ = false;  ///< `refusal_` is worked out for `kind_`
    device_kind kind_ = device_kind::none;
    std::string refusal_;
    std::vector<std::byte> snapshot_[sizeof...(Cs)];
    // run_rows' scratch, kept between dispatches so a steady state allocates nothing.
    std::vector<tessera::detail::Archetype*> tables_;
    std::vector<std::size_t> starts_;
};

template <class K, class U, bool Pair, class... Cs>
constexpr void check_kernel() {
    static_assert(sizeof...(Cs) > 0, "tessera::gpu: a kernel system needs at least one component");
    static_assert((!std::is_empty_v<Cs> && ...),
                  "tessera::gpu: a kernel's components carry data; tags have none (filter with "
                  "a regular system instead)");
    static_assert((!std::is_reference_v<Cs> && ...),
                  "tessera::gpu: name components as Position or const Position, not references");
    static_assert(std::is_trivially_copyable_v<U>,
                  "tessera::gpu: the uniforms must be trivially copyable (a plain struct of "
                  "numbers); pass outside values through them");
    static_assert(std::is_empty_v<K> && std::is_trivially_copyable_v<K>,
                  "tessera::gpu: the kernel must be stateless (a lambda without captures); pass "
                  "outside values through the uniforms");
    if constexpr (Pair) {
        static_assert(std::is_invocable_v<const K&, Cs&..., const Cs&..., float, const U&>,
                      "tessera::gpu: a pairwise kernel takes (Cs&... self, const Cs&... other, "
                      "float dt, const U& uniforms)");
    } else {
        static_assert(std::is_invocable_v<const K&, Cs&..., float, const U&>,
                      "tessera::gpu: a kernel takes (Cs&... components, float dt, const U& "
                      "uniforms), with const Cs for the components it only reads");
    }
}

}  // namespace detail

/// The handle of a kernel system: waits for it, says which backend ran, exposes its device
/// buffers. Copies share one system. Valid as long as the program wants: it keeps the
/// system's state alive after the schedule is destroyed (then it does nothing).
template <class U>
class KernelSystem {
public:
    /// A handle on `state` (made by `kernel_system` / `pairwise_system`).
    explicit KernelSystem(std::shared_ptr<detail::StateBase<U>> state) noexcept
        : state_(std::move(state)) {}

    /// Waits for every dispatched frame and applies the results the world lacks (stamped with
    /// the world's tick): frames are coalesced, never lost. With `readback::none` it only
    /// waits (the device buffers are then complete). No-op on the CPU backend. Main thread,
    /// outside schedule runs; the world the system last ran on must still be alive.
    void sync() { state_->sync(); }
    /// The backend of the last dispatch (`none` before the first).
    [[nodiscard]] gpu::backend backend() const noexcept { return state_->last; }
    /// The system's name in its schedule.
    [[nodiscard]] const std::string& name() const noexcept { return state_->name; }
    /// The uniforms the next dispatch passes to the kernel.
    [[nodiscard]] const U& uniforms() const noexcept { return state_->uniforms; }
    /// Replaces the uniforms for the next dispatch. Main thread, outside schedule runs.
    void set_uniforms(const U& u) noexcept { state_->uniforms = u; }
    /// The device buffers of every table on the device (empty on the CPU backend).
    [[nodiscard]] std::vector<DeviceTable> device_tables() const { return state_->tables(); }
    /// Bytes uploaded to the device so far (0 when it never ran there).
    [[nodiscard]] std::uint64_t uploaded_bytes() const noexcept {
        const detail::Residency* r = state_->residency();
        return r != nullptr ? r->uploaded_bytes() : 0;
    }
    /// Bytes read back from the device so far.
    [[nodiscard]] std::uint64_t downloaded_bytes() const noexcept {
        const detail::Residency* r = state_->residency();
        return r != nullptr ? r->downloaded_bytes() : 0;
    }

private:
    std::shared_ptr<detail::StateBase<U>> state_;
};

namespace detail {
template <bool Pair, class... Cs, class U, class K, bool Nvcc>
KernelSystem<U> add_kernel(Schedule& schedule, std::string name, U uniforms, K kernel,
                           Options options, std::bool_constant<Nvcc>) {
    check_kernel<K, U, Pair, Cs...>();
    if (name.empty())
        throw Error(errc::invalid_argument, "gpu::kernel_system: the system name is empty");
    if (static_cast<unsigned>(options.target) > 2 || static_cast<unsigned>(options.readback) > 2) {
        throw Error(errc::invalid_argument, "gpu::kernel_system '" + name +
                                                "': Options holds an unknown target or readback");
    }
    using State = KernelState<Nvcc, K, U, Pair, Cs...>;
    auto state = std::make_shared<State>(name, uniforms, kernel, options);
    SystemConfig config =
        schedule.add(std::move(name), [state](View<Cs&...> view, RunInfo<Cs...> run, float dt) {
            state->dispatch(view, run, dt);
        });
    config.phase(options.phase).order(options.order);
    for (const std::string& n : options.after) config.after(n);
    for (const std::string& n : options.before) config.before(n);
    return KernelSystem<U>(std::move(state));
}
}  // namespace detail

/// Adds a kernel system named `name` to `schedule`: `kernel(Cs&..., dt, uniforms)` for every
/// matching row, on the backend `options` selects. Its access is its component list (`const
/// C` read, `C` written), so it orders and conflicts like any system. Compile-time errors
/// for a capturing kernel, non-trivially-copyable uniforms or a kernel of the wrong shape.
/// @throws Error(invalid_argument) when the name is taken or empty, or `options` is invalid.
template <class... Cs, class U, class K, bool Nvcc = detail::nvcc_v>
KernelSystem<U> kernel_system(Schedule& schedule, std::string name, U uniforms, K kernel,
                              Options options = {}) {
    return detail::add_kernel<false, Cs...>(schedule, std::move(name), uniforms, kernel, options,
                                            std::bool_constant<Nvcc>{});
}

/// Adds a pairwise kernel system: `kernel(self..., other..., dt, uniforms)` for every ordered
/// pair of distinct enabled rows of each matching table (O(n²) per table, never across
/// tables), `other` as it was when the dispatch started. Otherwise like `kernel_system`.
template <class... Cs, class U, class K, bool Nvcc = detail::nvcc_v>
KernelSystem<U> pairwise_system(Schedule& schedule, std::string name, U uniforms, K kernel,
                                Options options = {}) {
    return detail::add_kernel<true, Cs...>(schedule, std::move(name), uniforms, kernel, options,
                                           std::bool_constant<Nvcc>{});
}

}  // namespace tessera::gpu

namespace tessera::detail {
/// The kernel system parameter: nothing beyond its view's access; tracks the components'
/// changes (main thread) when a device path can run, so uploads follow change ticks.
template <class... Cs>
struct param<gpu::detail::RunInfo<Cs...>> : stateless_param {
    static void access(Access&) {}
    static void prepare(State&, World& w) {
        if (gpu::detail::device() == gpu::detail::device_kind::none) return;
        (
            [&] {
                if constexpr (track_changes_v<std::remove_const_t<Cs>>)
                    w.storage().track(component_id<std::remove_const_t<Cs>>());
            }(),
            ...);
    }
    static gpu::detail::RunInfo<Cs...> get(State&, const SystemRun& run) noexcept {
        return {run.world, run.tick};
    }
};
}  // namespace tessera::detail

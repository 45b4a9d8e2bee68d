// The device side of a kernel system (detail/gpu_device.hpp): per matching table and
// component a device buffer, uploaded only when the world changed that column since the
// device and the world last agreed (change ticks; table stamps for structural changes), and
// readback into host staging merged back row by row, the world's own writes winning.
#include "runtime.hpp"

#include <tessera/detail/gpu_device.hpp>
#include <tessera/detail/storage.hpp>

#include <algorithm>
#include <cstring>
#include <utility>

namespace tessera::gpu::detail {

using tessera::detail::Archetype;
using tessera::detail::Column;
using tessera::detail::Storage;

struct Residency::Table {
    std::uint32_t archetype = 0;
    std::uint32_t rows = 0;                 ///< rows on the device
    std::uint32_t capacity = 0;             ///< rows allocated per buffer
    std::uint64_t freed = 0;                ///< the table's `freed` at the upload
    std::uint64_t epoch = 0;                ///< the storage's layout epoch at the upload
    const Entity* host_entities = nullptr;  ///< the table's entity column at the upload
    std::uint64_t synced = 0;  ///< the tick at which the world and the device last agreed
    bool valid = false;        ///< the device holds the table
    bool ahead = false;        ///< the device holds results the world lacks
    bool pending = false;      ///< a readback into `staging` is queued
    rt::Event event = nullptr;
    std::vector<void*> dev, next, staging;  ///< per component (next, staging: written only)
    std::vector<Entity> entities;           ///< the entity of each device row

    void release() noexcept {
        for (void* p : dev) rt::device_free(p);
        for (void* p : next) rt::device_free(p);
        for (void* p : staging) rt::host_free(p);
        std::fill(dev.begin(), dev.end(), nullptr);
        std::fill(next.begin(), next.end(), nullptr);
        std::fill(staging.begin(), staging.end(), nullptr);
        capacity = 0;
    }
    ~Table() {
        release();
        rt::event_destroy(event);
    }
};

namespace {

/// Whether the world wrote `id`'s column of `a` after `since` (always, when untracked; maybe
/// when rows that changed later have left the table).
bool column_changed(const Archetype& a, ComponentId id, std::uint64_t since) noexcept {
    const std::int32_t c = a.column_index(id);
    if (c < 0) return false;
    const Column& col = a.columns[static_cast<std::uint32_t>(c)];
    if (col.changed == nullptr) return true;
    return col.changed_bound() > since;  // O(1): the column's bound (Column::changed_last)
}

}  // namespace

Residency::Residency(Layout layout, std::string name)
    : layout_(std::move(layout)), name_(std::move(name)) {}

Residency::~Residency() {
    try {
        if (stream_ != nullptr) rt::stream_wait(stream_);
    } catch (...) {  // a lost device: nothing left to wait for
    }
    tables_.clear();
    rt::stream_destroy(stream_);
}

Residency::Table& Residency::table(std::uint32_t archetype) {
    if (archetype >= tables_.size()) tables_.resize(archetype + 1);
    std::unique_ptr<Table>& t = tables_[archetype];
    if (!t) {
        t = std::make_unique<Table>();
        t->archetype = archetype;
        const std::size_t n = layout_.ids.size();
        t->dev.assign(n, nullptr);
        t->next.assign(n, nullptr);
        t->staging.assign(n, nullptr);
        t->event = rt::event_create();
    }
    return *t;
}

void Residency::upload(Storage& s, Table& t, bool structural, std::span<const std::uint8_t> dirty) {
    Archetype& a = s.archetype(t.archetype);
    const std::size_t n = layout_.ids.size();
    if (structural && a.size > t.capacity) {
        t.release();
        const std::uint32_t cap = std::max<std::uint32_t>(a.size + a.size / 4, 64);
        for (std::size_t k = 0; k < n; ++k) {
            const std::size_t bytes = std::size_t{cap} * layout_.sizes[k];
            t.dev[k] = rt::device_alloc(bytes);
            if (layout_.written[k]) {
                if (layout_.pairwise) t.next[k] = rt::device_alloc(bytes);
                t.staging[k] = rt::host_alloc(bytes);
            }
        }
        t.capacity = cap;
    }
    for (std::size_t k = 0; k < n; ++k) {
        if (!structural && dirty[k] == 0) continue;
        const std::size_t bytes = std::size_t{a.size} * layout_.sizes[k];
        rt::to_device(t.dev[k], s.column_data(layout_.ids[k], t.archetype), bytes, stream_);
        uploaded_ += bytes;
    }
    if (structural) {
        t.entities.assign(a.entities, a.entities + a.size);
        t.rows = a.size;
        t.freed = a.freed;
        t.epoch = s.layout_epoch();
        t.host_entities = a.entities;
        t.valid = true;
    }
}

// Brings the device's results for `t` into the world: from `staging` when a readback is
// queued there, else read back now. Rows the world wrote since the last agreement keep the
// world's values; rows that moved are found by entity; a restored world (new layout epoch)
// keeps its own state.
void Residency::bring_back(Storage& s, Table& t, std::uint64_t tick, bool staged) {
    const std::size_t n = layout_.ids.size();
    if (staged) {
        rt::event_wait(t.event);
    } else {
        for (std::size_t k = 0; k < n; ++k) {
            if (!layout_.written[k]) continue;
            rt::to_host(t.staging[k], t.dev[k], std::size_t{t.rows} * layout_.sizes[k], stream_);
        }
        rt::stream_wait(stream_);
    }
    t.ahead = false;
    t.pending = false;
    if (t.epoch != s.layout_epoch()) return;
    Archetype& a = s.archetype(t.archetype);
    const bool same = a.size == t.rows && a.freed == t.freed && a.entities == t.host_entities;
    for (std::size_t k = 0; k < n; ++k) {
        if (!layout_.written[k]) continue;
        const ComponentId id = layout_.ids[k];
        const std::uint32_t size = layout_.sizes[k];
        const auto* src = static_cast<const std::byte*>(t.staging[k]);
        downloaded_ += std::size_t{t.rows} * size;
        if (same) {
            const std::int32_t c = a.column_index(id);
            const Column& col = a.columns[static_cast<std::uint32_t>(c)];
            if (!column_changed(a, id, t.synced) || col.changed == nullptr) {
                std::memcpy(col.data, src, std::size_t{t.rows} * size);
                Storage::stamp_column(a, id, tick);
                continue;
            }
            for (std::uint32_t r = 0; r < t.rows; ++r) {
                if (col.changed_at(r) > t.synced) continue;  // the world's write wins
                std::memcpy(col.data + std::size_t{r} * size, src + std::size_t{r} * size, size);
                Storage::stamp_changed(a, r, c, tick);
            }
            continue;
        }
        for (std::uint32_t r = 0; r < t.rows; ++r) {
            const tessera::detail::EntityRecord* rec = s.try_record(t.entities[r]);
            if (rec == nullptr) continue;  // despawned since
            Archetype& b = s.archetype(rec->archetype);
            const std::int32_t c = b.column_index(id);
            if (c < 0) continue;  // it lost the component
            const Column& col = b.columns[static_cast<std::uint32_t>(c)];
            if (col.changed != nullptr && col.changed_at(rec->row) > t.synced) continue;
            std::memcpy(col.data + std::size_t{rec->row} * size, src + std::size_t{r} * size, size);
            Storage::stamp_changed(b, rec->row, c, tick);
        }
    }
}

bool Residency::dispatch(Storage& s, std::span<const std::uint32_t> tables, std::uint64_t tick,
                         float dt, const void* kernel, const void* uniforms, LaunchFn launch,
                         int mode) {
    try {
        run(s, tables, tick, dt, kernel, uniforms, launch, mode);
        return true;
    } catch (const rt::DeviceFailure& e) {
        failure_ = e.what();
        tables_.clear();
        return false;
    }
}

void Residency::run(Storage& s, std::span<const std::uint32_t> tables, std::uint64_t tick, float dt,
                    const void* kernel, const void* uniforms, LaunchFn launch, int mode) {
    if (stream_ == nullptr) stream_ = rt::stream_create();
    const std::size_t n = layout_.ids.size();
    std::vector<std::uint8_t> dirty(n);
    std::vector<void*> in(n), out(n);
    for (const std::uint32_t index : tables) {
        Archetype& a = s.archetype(index);
        Table& t = table(index);
        if (a.size == 0 && !t.valid) continue;
        const bool structural = !t.valid || a.size != t.rows || a.freed != t.freed ||
                                a.entities != t.host_entities || t.epoch != s.layout_epoch();
        bool any = structural;
        for (std::size_t k = 0; k < n; ++k) {
            dirty[k] = structural || column_changed(a, layout_.ids[k], t.synced) ? 1 : 0;
            any = any || dirty[k] != 0;
        }
        if (t.ahead && any) {
            // The world changed the table: its rows get the device's results first (the
            // world's own writes win), then the changed columns go up whole.
            bring_back(s, t, tick, t.pending);
        } else if (t.ahead && t.pending && rt::event_done(t.event)) {
            bring_back(s, t, tick, true);  // last frame's results: the next frame's base
        }
        if (any) upload(s, t, structural, dirty);
        if (!t.ahead) t.synced = tick;
        if (a.size == 0) continue;
        for (std::size_t k = 0; k < n; ++k) {
            in[k] = t.dev[k];
            out[k] = t.dev[k];
            if (layout_.pairwise && layout_.written[k]) {
                rt::device_copy(t.next[k], t.dev[k], std::size_t{a.size} * layout_.sizes[k],
                                stream_);
                out[k] = t.next[k];
            }
        }
        launch(stream_, a.size, dt, kernel, uniforms, in.data(), out.data());
        rt::check_launch("the kernel launch");
        for (std::size_t k = 0; k < n; ++k) {
            if (layout_.pairwise && layout_.written[k]) std::swap(t.dev[k], t.next[k]);
        }
        t.ahead = true;
        if (mode == 2) continue;  // none: the device keeps the results
        for (std::size_t k = 0; k < n; ++k) {
            if (!layout_.written[k]) continue;
            rt::to_host(t.staging[k], t.dev[k], std::size_t{t.rows} * layout_.sizes[k], stream_);
        }
        rt::event_record(t.event, stream_);
        t.pending = true;
        if (mode == 1) {  // sync: the results reach the world before the system returns
            bring_back(s, t, tick, true);
            t.synced = tick;
        }
    }
}

void Residency::finish(Storage& s, std::uint64_t tick) {
    try {
        for (const std::unique_ptr<Table>& t : tables_) {
            if (!t || !t->ahead) continue;
            bring_back(s, *t, tick, t->pending);
            t->synced = tick;
        }
    } catch (const rt::DeviceFailure& e) {
        // A device that failed has nothing more to give: the world keeps what it has.
        failure_ = e.what();
        tables_.clear();
        warn(name_, "lost the device's results: " + failure_);
    }
}

void Residency::wait() {
    try {
        if (stream_ != nullptr) rt::stream_wait(stream_);
    } catch (const rt::DeviceFailure& e) {
        failure_ = e.what();
        warn(name_, "the device failed: " + failure_);
    }
}

void Residency::invalidate() noexcept {
    for (const std::unique_ptr<Table>& t : tables_) {
        if (!t) continue;
        t->valid = false;
        t->ahead = false;
        t->pending = false;
    }
}

std::vector<TableView> Residency::views() const {
    std::vector<TableView> out;
    for (const std::unique_ptr<Table>& t : tables_) {
        if (!t || !t->valid || t->rows == 0) continue;
        TableView v;
        v.archetype = t->archetype;
        v.rows = t->rows;
        v.data.assign(t->dev.begin(), t->dev.end());
        v.entities = t->entities;
        out.push_back(std::move(v));
    }
    return out;
}

}  // namespace tessera::gpu::detail

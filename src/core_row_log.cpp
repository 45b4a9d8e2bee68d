// Row logs (detail/archetype.hpp `RowLog`): turning them on and off for a component, moving
// their epoch, and carrying them through a table's growth. The paths that write ticks keep
// them (Column::set_changed, the row moves of core_move.cpp, spawn_many).
#include <tessera/detail/core.hpp>
#include <tessera/error.hpp>

#include <cstring>
#include <new>

namespace tessera::detail {

bool Core::log_rows(ComponentId id, const void* owner, std::uint64_t epoch) {
    ensure_component(id);
    const void* const had = row_log_owner(id);
    if (had != nullptr && had != owner) return false;
    track(id);  // (when not yet)
    if (row_logs_.size() <= id.value) row_logs_.resize(id.value + 1);
    // The columns that lack a log, and a log for each, first: a failure leaves nothing done.
    const auto lacks = [id](const Archetype& a) {
        const std::int32_t c = a.column_index(id);
        return c >= 0 && a.capacity > 0 && a.columns[static_cast<std::uint32_t>(c)].log == nullptr;
    };
    std::size_t needed = 0;
    for (const Archetype* a : archetypes_) needed += lacks(*a) ? 1 : 0;
    std::pmr::vector<RowLog*> fresh(needed, nullptr, mr_);
    try {
        std::size_t k = 0;
        for (const Archetype* a : archetypes_) {
            if (lacks(*a))
                fresh[k++] = static_cast<RowLog*>(
                    mr_->allocate(RowLog::bytes(a->capacity), alignof(RowLog)));
        }
    } catch (...) {
        std::size_t k = 0;
        for (const Archetype* a : archetypes_) {
            if (lacks(*a)) deallocate(fresh[k++], RowLog::bytes(a->capacity), alignof(RowLog));
        }
        throw;
    }
    std::size_t k = 0;
    for (Archetype* a : archetypes_) {
        const bool missing = lacks(*a);
        const std::int32_t c = a->column_index(id);
        if (c < 0 || a->capacity == 0) continue;
        Column& col = a->columns[static_cast<std::uint32_t>(c)];
        if (missing) {
            col.log = ::new (fresh[k++]) RowLog{};
            col.log->capacity = a->capacity;
            col.log->ticks = col.changed;
        }
        col.log->epoch = epoch;
        col.log->rebuild(a->size);
        a->logged = true;
    }
    row_logs_[id.value] = {owner, epoch};
    return true;
}

void Core::unlog_rows(ComponentId id, const void* owner) noexcept {
    if (row_log_owner(id) != owner || owner == nullptr) return;
    for (Archetype* a : archetypes_) {
        const std::int32_t c = a->column_index(id);
        if (c < 0) continue;
        Column& col = a->columns[static_cast<std::uint32_t>(c)];
        deallocate(col.log, RowLog::bytes(a->capacity), alignof(RowLog));
        col.log = nullptr;
        a->logged = false;
        for (const Column& other : a->columns) a->logged = a->logged || other.log != nullptr;
    }
    row_logs_[id.value] = {};
}

void Core::trim_row_logs(ComponentId id, std::uint64_t epoch) noexcept {
    if (row_log_owner(id) == nullptr) return;
    row_logs_[id.value].epoch = epoch;
    for (Archetype* a : archetypes_) {
        const std::int32_t c = a->column_index(id);
        if (c < 0) continue;
        const Column& col = a->columns[static_cast<std::uint32_t>(c)];
        if (col.log != nullptr) col.log->trim(epoch, load_bound(col.changed_last));
    }
}

void Core::grow_log(const Column& c, RowLog* log, std::uint32_t size, std::size_t cap,
                    const std::uint64_t* ticks) const noexcept {
    ::new (log) RowLog{};
    log->capacity = static_cast<std::uint32_t>(cap);
    log->ticks = ticks;
    if (c.log == nullptr) {  // the column's first arrays: no rows yet
        log->epoch = row_logs_[c.id.value].epoch;
        log->valid = size == 0;
        return;
    }
    log->epoch = c.log->epoch;
    log->valid = c.log->valid;
    log->count = c.log->count;
    std::memcpy(log->rows(), c.log->rows(), std::size_t{log->count} * sizeof(std::uint32_t));
    std::memcpy(log->positions(), c.log->rows() + c.log->capacity,
                std::size_t{size} * sizeof(std::uint32_t));
}

}  // namespace tessera::detail

// Whole-world copies of the core (clone, snapshot, restore, load).
#include <tessera/detail/core.hpp>
#include <tessera/error.hpp>

#include <cstring>
#include <string>

namespace tessera::detail {

void Core::copy_from(const Core& src, const char* op) {
    for (const Archetype* a : src.archetypes_) {
        if (a->size == 0) continue;
        for (const Column& c : a->columns) {
            if (!c.info->copyable()) {
                throw Error(errc::invalid_argument,
                            std::string(op) + ": component " + std::string(c.info->name) +
                                " can't be copied (it has no copy constructor)");
            }
        }
    }
    for (const SparseSet* set : src.sparse_sets_) {
        if (set->size() != 0 && set->info().size != 0 && !set->info().copyable()) {
            throw Error(errc::invalid_argument,
                        std::string(op) + ": component " + std::string(set->info().name) +
                            " can't be copied (it has no copy constructor)");
        }
    }
    for (std::size_t i = 0; i < src.components_.size(); ++i) {
        const WorldComponent& from = src.components_[i];
        if (from.info == nullptr) continue;
        ensure_component(ComponentId{static_cast<std::uint32_t>(i)});
        components_[i].tracked = from.tracked;  // before the tables: grow() makes tick arrays
        components_[i].reserved = from.reserved;
        components_[i].hooked = from.reserved || hook_all_;  // reserved: always hooked
    }
    // The sparse sets: same rows in the same order (ensure_component made each one).
    for (const SparseSet* set : src.sparse_sets_) sparse(set->info().id)->copy_from(*set);
    // The same archetypes at the same indices (the three sentinels exist already).
    for (std::size_t i = first_user_archetype; i < src.archetypes_.size(); ++i)
        create_archetype(src.archetypes_[i]->ids);
    for (std::size_t i = empty_archetype; i < src.archetypes_.size(); ++i) {
        const Archetype& from = *src.archetypes_[i];
        Archetype& to = *archetypes_[i];
        if (from.size == 0) continue;
        grow(to, from.size);
        std::memcpy(to.entities, from.entities, std::size_t{from.size} * sizeof(Entity));
        std::size_t done = 0;  // columns whose values exist
        try {
            for (; done < from.columns.size(); ++done) {
                const Column& c = from.columns[done];
                c.info->copy_values(to.columns[done].data, c.data, from.size);
            }
        } catch (...) {
            for (std::size_t k = 0; k < done; ++k) {
                const Column& c = to.columns[k];
                if (c.destroy != nullptr) c.destroy(c.data, from.size);
            }
            throw;
        }
        for (std::size_t k = 0; k < from.columns.size(); ++k) {
            const Column& c = from.columns[k];
            Column& d = to.columns[k];
            if (c.changed != nullptr && d.changed != nullptr) {
                std::memcpy(d.added, c.added, std::size_t{from.size} * sizeof(std::uint64_t));
                std::memcpy(d.changed, c.changed, std::size_t{from.size} * sizeof(std::uint64_t));
                std::memcpy(d.changed_max, c.changed_max,
                            tick_blocks(from.size) * sizeof(std::uint64_t));
                d.stamped = c.stamped;
                d.changed_last = c.changed_last;
            }
            if (c.enabled != nullptr) std::memcpy(d.enabled, c.enabled, from.size);
        }
        to.size = from.size;
    }
    reserve_records(src.record_count_);
    if (src.record_count_ != 0)
        std::memcpy(record_data_, src.record_data_, src.record_count_ * sizeof(EntityRecord));
    record_count_ = src.record_count_;
    permanent_.assign(src.permanent_.begin(), src.permanent_.end());
    free_head_ = src.free_head_;
    free_count_ = src.free_count_;
    alive_ = src.alive_;
    tick_ = src.tick_;
}

void Core::swap_state(Core& other) noexcept {
    using std::swap;
    swap(record_data_, other.record_data_);
    swap(record_count_, other.record_count_);
    swap(record_capacity_, other.record_capacity_);
    archetypes_.swap(other.archetypes_);
    components_.swap(other.components_);
    table_lists_.swap(other.table_lists_);
    set_index_.swap(other.set_index_);
    swap(set_count_, other.set_count_);
    bundles_.swap(other.bundles_);
    bundle_columns_.swap(other.bundle_columns_);
    permanent_.swap(other.permanent_);
    sparse_sets_.swap(other.sparse_sets_);
    sparse_by_id_.swap(other.sparse_by_id_);
    row_logs_.swap(other.row_logs_);  // the logs' owners go with the tables that have them
    swap(free_head_, other.free_head_);
    swap(free_count_, other.free_count_);
    swap(alive_, other.alive_);
    ++epoch_;
    ++other.epoch_;
}

}  // namespace tessera::detail

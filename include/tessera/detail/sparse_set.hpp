/// @file detail/sparse_set.hpp
/// Sparse storage: the values of a component with `component_traits<T>::storage =
/// ts::storage_kind::sparse`, kept outside the archetype tables. Internal, not API.
///
/// ## Design
///
/// - **Where.** One `SparseSet` per world and sparse component, owned by the core
///   (`WorldComponent::sparse`, made by `Core::ensure_component` on the world's first use of the
///   type) and listed in `Core::sparse_sets()`. It is part of the core's state, not an
///   attachment: despawn (every path of core_move.cpp), clone and snapshots (`Core::copy_from`,
///   `Core::swap_state`) and `has` see it without a hook, and a world that never uses a sparse
///   type pays one empty-vector test per despawn.
/// - **Layout.** Pages indexed by `Entity::index` (`page_size` entries of `std::uint32_t`, each
///   the dense row of that index or `no_row`; a page exists once an entity of its range has had
///   the component) map an entity to its dense row; the dense arrays hold, row by row, the
///   entity, its value (`size` bytes, the type's alignment, at least 64-byte aligned), its
///   added and changed ticks (when the type tracks changes: always kept, sparse sets are
///   eagerly tracked) and its enable flag (when enableable). As a table column's, the changed
///   ticks have a set-wide floor (`stamped`): a query's `T&` walk over the whole set stamps
///   every row in O(1) there instead of writing each row's tick (`changed_at` reads the larger;
///   an insert of an older tick folds the floor into the rows first). A lookup is a page load, an
///   entry load and an entity compare (the generation check); erase is a swap-remove (the last row
///   fills the hole), so rows stay packed and iteration over `entities()` is a plain loop.
/// - **Strong guarantee.** `reserve` does all the allocation an insert needs (the entity's
///   page, room for `n` more rows); `insert` and `erase` never throw. A structural call that
///   mixes table and sparse components reserves the sets first, then moves the table row, then
///   inserts, so a `bad_alloc` anywhere changes nothing visible.
/// - **Despawn** erases the entity from every set of the world: O(sparse components of the
///   world) probes (a page load and a compare each), which is a handful in practice. The bound
///   is documented in docs/sparse.md.
/// - **Order.** Rows are in insertion order, changed by erases (swap-remove): a function of the
///   world's history only, so clones and restored snapshots iterate alike.
#pragma once

#include <tessera/component.hpp>
#include <tessera/entity.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory_resource>
#include <span>

namespace tessera::detail {

/// One world's values of one sparse component. Untyped: values are bytes with the hooks of
/// their `ComponentInfo`. Pointers into it (values, ticks) stay valid until the next insert,
/// erase or reserve.
class SparseSet {
public:
    static constexpr std::uint32_t no_row = 0xFFFFFFFFu;
    static constexpr std::uint32_t page_bits = 12;
    static constexpr std::uint32_t page_size = 1u << page_bits;  ///< entries per page

    /// An empty set of `info`'s values, allocating from `mr`.
    SparseSet(std::pmr::memory_resource* mr, const ComponentInfo& info);
    ~SparseSet();
    SparseSet(const SparseSet&) = delete;
    SparseSet& operator=(const SparseSet&) = delete;

    [[nodiscard]] const ComponentInfo& info() const noexcept { return *info_; }
    /// Rows (entities that have the component).
    [[nodiscard]] std::uint32_t size() const noexcept { return size_; }
    /// Whether the set keeps change ticks (the type tracks changes).
    [[nodiscard]] bool tracked() const noexcept { return tracked_; }

    /// The dense row of `e`, or `no_row` when `e` (this generation) has no value here.
    [[nodiscard]] std::uint32_t find(Entity e) const noexcept {
        const std::uint32_t p = e.index >> page_bits;
        if (p >= page_count_ || pages_[p] == nullptr) return no_row;
        const std::uint32_t row = pages_[p][e.index & (page_size - 1)];
        return row != no_row && entities_[row] == e ? row : no_row;
    }
    [[nodiscard]] bool contains(Entity e) const noexcept { return find(e) != no_row; }

    /// The value at dense row `row` (any address for a tag).
    [[nodiscard]] std::byte* value(std::uint32_t row) const noexcept {
        return data_ + std::size_t{row} * size_bytes_;
    }
    /// `e`'s value, or null when absent (or a tag).
    [[nodiscard]] std::byte* try_value(Entity e) const noexcept {
        const std::uint32_t row = find(e);
        return row == no_row || size_bytes_ == 0 ? nullptr : value(row);
    }
    /// The dense arrays, `size()` entries each (ticks null when untracked, flags null when not
    /// enableable).
    [[nodiscard]] const Entity* entities() const noexcept { return entities_; }
    [[nodiscard]] std::byte* data() const noexcept { return data_; }
    [[nodiscard]] std::uint64_t* added() const noexcept { return added_; }
    /// The rows' own changed ticks: a row's tick is the larger of its entry and `stamped()`
    /// (`changed_at`); writing an entry stamps that row.
    [[nodiscard]] std::uint64_t* changed() const noexcept { return changed_; }
    /// Row `row`'s changed tick (tracked sets).
    [[nodiscard]] std::uint64_t changed_at(std::uint32_t row) const noexcept {
        return changed_[row] > stamped_ ? changed_[row] : stamped_;
    }
    /// The floor of every row's changed tick (0 when none).
    [[nodiscard]] std::uint64_t stamped() const noexcept { return stamped_; }
    /// Stamps every row changed at `tick` (at least), in O(1) (tracked sets).
    void stamp_all(std::uint64_t tick) const noexcept {
        if (tracked_ && tick > stamped_) stamped_ = tick;
    }
    [[nodiscard]] std::uint8_t* enabled() const noexcept { return enabled_; }

    /// A word `Mut<T>` terms may raise as their block and column bound (a set keeps no
    /// bounds: its change filters read each row's tick).
    [[nodiscard]] std::uint64_t* bound_sink() const noexcept { return &bound_sink_; }
    /// Stamps row `row`'s changed tick (when tracked).
    void stamp_changed(std::uint32_t row, std::uint64_t tick) const noexcept {
        if (changed_ != nullptr) changed_[row] = tick;
    }

    /// Room for `n` more rows and the page of entity index `index`: afterwards an insert of an
    /// entity of that index (and `n - 1` others whose pages exist) cannot fail.
    /// @throws std::bad_alloc, changing nothing visible.
    void reserve(std::uint32_t index, std::size_t n = 1);
    /// Room for `n` more rows.
    void reserve_rows(std::size_t n);
    /// Whether an insert of `index` needs no `reserve` (the hot path checks it inline).
    [[nodiscard]] bool ready(std::uint32_t index) const noexcept {
        const std::uint32_t p = index >> page_bits;
        return size_ < capacity_ && p < page_count_ && pages_[p] != nullptr;
    }
    /// Appends a row for `e` (absent; reserved) with added and changed ticks `tick` and enabled,
    /// and returns its uninitialised value slot: the caller constructs it before anything else
    /// reads the set.
    std::byte* insert(Entity e, std::uint64_t tick) noexcept;
    /// Destroys the value of row `row` and fills the hole with the last row.
    void erase_row(std::uint32_t row) noexcept;
    /// Erases `e`'s row; false when it had none.
    bool erase(Entity e) noexcept {
        const std::uint32_t row = find(e);
        if (row == no_row) return false;
        erase_row(row);
        return true;
    }
    /// Destroys every value; pages and capacity stay.
    void clear() noexcept;

    /// Makes this set (empty) a copy of `src` (same component): rows in the same order, values
    /// copied with the copy constructor, ticks and flags. @throws like the copies and bad_alloc;
    /// on a throw this set is left empty.
    void copy_from(const SparseSet& src);
    /// Exchanges contents with `other` (same component, same memory resource).
    void swap(SparseSet& other) noexcept;

private:
    void grow(std::size_t min_capacity);
    void release_dense() noexcept;
    [[nodiscard]] std::size_t value_alignment() const noexcept;

    std::pmr::memory_resource* mr_;
    const ComponentInfo* info_;
    std::uint32_t** pages_ = nullptr;
    std::uint32_t page_count_ = 0;
    Entity* entities_ = nullptr;
    std::byte* data_ = nullptr;
    std::uint64_t* added_ = nullptr;
    std::uint64_t* changed_ = nullptr;
    std::uint8_t* enabled_ = nullptr;
    std::uint32_t size_ = 0;
    std::uint32_t capacity_ = 0;
    std::uint32_t size_bytes_ = 0;  ///< info->size
    bool tracked_ = false;
    mutable std::uint64_t bound_sink_ = 0;
    mutable std::uint64_t stamped_ = 0;  ///< see `changed_at`
};

}  // namespace tessera::detail

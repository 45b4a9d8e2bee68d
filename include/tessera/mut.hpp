/// @file mut.hpp
/// `Mut<T>`: a query term that marks a row of `T` changed only when it is written through it,
/// and `MutColumn<T>`, the same for a whole chunk's column.
///
/// **`T&` or `Mut<T>`.** A `T&` term stamps the changed tick of every row it visits, in O(1) per
/// table: the right term when a loop writes (nearly) every row. `Mut<T>` stamps a row only when
/// its `write()` (or `set`) is called, one store per written row: the right term when a loop
/// writes a few of the rows it reads, and `Changed<T>` (a query's `changed<T>()`, a system's
/// `Changed<T>` filter, `changed_since`) must see exactly those rows. Reading through `get()`,
/// `*` or `->` marks nothing. Both declare a write of `T` to a schedule.
///
/// A `Mut<T>` is taken by value in the callback (`[](ts::Mut<Health> h) { ... }`; a reference
/// or pointer to one does not compile, and there is no optional `Mut<T>`); like a reference
/// into the table, it stays valid until the next structural change.
#pragma once

#include <tessera/detail/archetype.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>

namespace tessera {

template <class T>
class MutColumn;

namespace detail {
/// Where a `Mut<T>` term's rows are in one table: the values, their changed ticks, block
/// bounds and column bound (null while `T` is not tracked) and the tick writes are stamped with.
template <class T>
struct MutBase {
    T* data = nullptr;
    std::uint64_t* changed = nullptr;
    std::uint64_t* bounds = nullptr;
    std::uint64_t tick = 0;
    std::uint64_t* last = nullptr;  ///< `Column::changed_last`
    RowLog* log = nullptr;          ///< `Column::log` (null: none)
};
}  // namespace detail

/// Write access to one row's `T` that marks the row changed only when written (see the file
/// comment). Queries make them; a default-constructed one refers to nothing.
template <class T>
class Mut {
    static_assert(!std::is_const_v<T> && !std::is_reference_v<T>,
                  "tessera: Mut<T> takes a plain component type (use const T& to read)");
    static_assert(!std::is_empty_v<T>, "tessera: a tag has no value to write through Mut<T>");

public:
    /// Refers to nothing; only assignable.
    Mut() noexcept = default;
    /// Row `row` of the table `base` describes (made by queries).
    Mut(const detail::MutBase<T>& base, std::size_t row) noexcept
        : value_(base.data + row),
          changed_(base.changed == nullptr ? nullptr : base.changed + row),
          bound_(base.changed == nullptr ? nullptr : base.bounds + row / detail::tick_block),
          last_(base.last),
          log_(base.log),
          tick_(base.tick) {}

    /// The value, for reading: marks nothing.
    [[nodiscard]] const T& get() const noexcept { return *value_; }
    /// The value, for reading: marks nothing.
    const T& operator*() const noexcept { return *value_; }
    /// The value's members, for reading: marks nothing.
    const T* operator->() const noexcept { return value_; }
    /// Marks the row changed with the run's tick (when `T` is tracked) and returns the value to
    /// write. O(1): one store and a raise of the block's and the column's bounds (and, for a
    /// replicated component, an entry of its row log on the row's first write since the
    /// replicator's epoch). Safe in `par_each` (each row is one worker's).
    [[nodiscard]] T& write() const noexcept {
        if (changed_ != nullptr) {
            if (log_ != nullptr) [[unlikely]]
                log_->wrote(static_cast<std::uint32_t>(changed_ - log_->ticks), *changed_, tick_);
            *changed_ = tick_;
            detail::raise_bound(*bound_, tick_);
            detail::raise_bound(*last_, tick_);
        }
        return *value_;
    }
    /// `write() = std::move(value)`.
    void set(T value) const noexcept(std::is_nothrow_move_assignable_v<T>) {
        write() = std::move(value);
    }

private:
    T* value_ = nullptr;
    std::uint64_t* changed_ = nullptr;
    std::uint64_t* bound_ = nullptr;
    std::uint64_t* last_ = nullptr;
    detail::RowLog* log_ = nullptr;
    std::uint64_t tick_ = 0;
};

/// A chunk's column of `T` seen through `Mut<T>`: reads mark nothing, `write(i)` (or
/// `(*this)[i].write()`) marks row `i` changed. What `each_chunk` passes for a `Mut<T>` term and
/// `Chunk::mut_column<T>()` returns. Valid until the next structural change.
template <class T>
class MutColumn {
public:
    /// An empty column.
    MutColumn() noexcept = default;
    /// `size` rows of the table `base` describes (made by queries and chunks).
    MutColumn(const detail::MutBase<T>& base, std::size_t size) noexcept
        : base_(base), size_(size) {}

    /// Number of rows.
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    /// Whether there are no rows (the chunk lacks `T`).
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    /// Row `i`'s value, for reading. Precondition: `i < size()`.
    [[nodiscard]] const T& get(std::size_t i) const noexcept { return base_.data[i]; }
    /// Row `i`'s value, marked changed. Precondition: `i < size()`.
    [[nodiscard]] T& write(std::size_t i) const noexcept { return (*this)[i].write(); }
    /// Row `i` as a `Mut<T>`. Precondition: `i < size()`.
    Mut<T> operator[](std::size_t i) const noexcept { return Mut<T>(base_, i); }
    /// Every row, for reading.
    [[nodiscard]] std::span<const T> values() const noexcept { return {base_.data, size_}; }

private:
    detail::MutBase<T> base_;
    std::size_t size_ = 0;
};

}  // namespace tessera

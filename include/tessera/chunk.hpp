/// @file chunk.hpp
/// `Chunk`: the rows of one archetype table that a query matched, with typed and untyped column
/// access, enable flags and change ticks by row. Chunks come from `Query::each_chunk`,
/// `Query::chunks()` and `World::collect_chunks` (query.hpp).
///
/// **Invalidation.** A `Chunk`, and every span, pointer or reference obtained from one, points
/// into an archetype table: it stays valid until the next structural change (spawn, despawn,
/// add, remove) in the world.
///
/// **Layout.** A chunk is one table: `count()` rows, the entity of each row (`entities()`), and
/// one contiguous column per non-tag component, row `i` of every column belonging to
/// `entities()[i]`. Tags have no column (`column<Tag>()` is empty; `has<Tag>()` tells).
#pragma once

#include <tessera/component.hpp>
#include <tessera/detail/storage.hpp>
#include <tessera/entity.hpp>
#include <tessera/error.hpp>
#include <tessera/mut.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

namespace tessera {

/// The rows of one archetype that a query matched: typed column access by row.
///
/// Valid until the next structural change. Columns of components the chunk lacks are empty
/// spans (`has<T>()` tells).
class Chunk {
public:
    /// An empty chunk; only assignable (queries and `collect_chunks` make real ones).
    Chunk() = default;
    /// The rows of `archetype`; writes are stamped with `tick` (0: the world's tick). Made by
    /// queries and `World::collect_chunks`, not by programs.
    Chunk(detail::Storage& storage, detail::Archetype& archetype, std::uint64_t tick = 0) noexcept
        : storage_(&storage), archetype_(&archetype), tick_(tick) {}

    /// Number of rows (disabled components included).
    [[nodiscard]] std::size_t count() const noexcept { return archetype_->size; }
    /// The entity of each row.
    [[nodiscard]] std::span<const Entity> entities() const noexcept {
        return {archetype_->entities, archetype_->size};
    }
    /// Whether the chunk's entities have `T` (tags included).
    template <class T>
    [[nodiscard]] bool has() const noexcept {
        return archetype_->contains(component_id<T>());
    }
    /// The column of `T` (`column<const T>()` for read-only access); empty when absent or a tag.
    /// Writing through it stamps nothing: call `mark_changed`.
    template <class T>
    [[nodiscard]] std::span<T> column() const noexcept {
        std::byte* data =
            storage_->column_data(component_id<std::remove_const_t<T>>(), archetype_->index);
        if (data == nullptr) return {};
        return {reinterpret_cast<T*>(data), archetype_->size};
    }
    /// The column of `T` seen through `Mut<T>` (mut.hpp): `write(i)` marks row `i` changed, reads
    /// mark nothing. Empty when the chunk lacks `T`. O(1).
    template <class T>
    [[nodiscard]] MutColumn<T> mut_column() const noexcept {
        const std::int32_t c = archetype_->column_index(component_id<T>());
        if (c < 0) return {};
        const detail::Column& col = archetype_->columns[static_cast<std::uint32_t>(c)];
        detail::MutBase<T> base{reinterpret_cast<T*>(col.data), col.changed, col.changed_max,
                                tick_ != 0 ? tick_ : storage_->tick(), &col.changed_last};
        base.log = col.log;
        return {base, archetype_->size};
    }
    /// One byte per row, 1 = enabled, for an enableable `T`; empty when the chunk lacks `T`.
    /// Chunk loops don't skip disabled rows: they test these flags. @throws
    /// Error(not_enableable) unless `component_traits<T>::enableable` (tags included).
    template <class T>
    [[nodiscard]] std::span<const std::uint8_t> enabled() const {
        const ComponentId id = component_id<T>();
        if (!detail::enableable_v<T>) {
            throw Error(errc::not_enableable, "Chunk::enabled<" +
                                                  std::string(component_info(id).name) +
                                                  ">: the component is not enableable");
        }
        const std::int32_t c = archetype_->column_index(id);
        if (c < 0) return {};
        return {archetype_->columns[static_cast<std::uint32_t>(c)].enabled, archetype_->size};
    }
    /// Stamps the changed tick of `T` at `row` with the current tick (when `T` is tracked).
    template <class T>
    void mark_changed(std::size_t row) const noexcept {
        TESSERA_ASSERT(row < archetype_->size, "Chunk::mark_changed: row past the chunk's end");
        const std::int32_t c = archetype_->column_index(component_id<T>());
        if (c >= 0) {
            detail::Storage::stamp_changed(*archetype_, static_cast<std::uint32_t>(row), c,
                                           tick_ != 0 ? tick_ : storage_->tick());
        }
    }
    /// Whether `T` at `row` was written after `tick` (strictly). Turns on tracking for `T`.
    /// Precondition: `has<T>()`.
    template <class T>
    [[nodiscard]] bool changed_since(std::size_t row, std::uint64_t tick) const {
        return tick_of<T>(row, false) > tick;
    }
    /// Whether `T` at `row` was added after `tick` (strictly). Turns on tracking for `T`.
    /// Precondition: `has<T>()`.
    template <class T>
    [[nodiscard]] bool added_since(std::size_t row, std::uint64_t tick) const {
        return tick_of<T>(row, true) > tick;
    }

    // The id-taking members below never throw: an id no component has (the default
    // `ComponentId{}`, a forged number) is absent from every chunk.

    /// Whether the chunk's entities have component `id` (tags included); false for an id no
    /// component has.
    [[nodiscard]] bool has(ComponentId id) const noexcept { return archetype_->contains(id); }
    /// The raw column of component `id` (`count()` values of `component_info(id).size` bytes
    /// each; a field lives at its `FieldInfo::offset` in each value), or null when absent or a
    /// tag (or an id no component has). Writing through it stamps nothing: call
    /// `mark_changed(id, row)`.
    [[nodiscard]] std::byte* column_bytes(ComponentId id) const noexcept {
        return storage_->column_data(id, archetype_->index);
    }
    /// Bytes from one `T` of a column to the next: `sizeof(T)` (columns are plain arrays, and a
    /// C++ size is a multiple of the alignment), 0 for a tag. For code that steps a column by
    /// bytes (`column_bytes`, GPU uploads).
    template <class T>
    [[nodiscard]] static constexpr std::size_t stride() noexcept {
        return std::is_empty_v<T> ? 0 : sizeof(T);
    }
    /// Bytes from one value of component `id`'s column to the next (`column_bytes(id)` +
    /// `row * stride(id)` is row `row`'s value): the component's size, 0 for a tag or an id no
    /// component has.
    [[nodiscard]] static std::size_t stride(ComponentId id) noexcept {
        const ComponentInfo* info = find_component_info(id);
        return info == nullptr ? 0 : info->size;
    }
    /// The enable flags of component `id` (one byte per row), or null when absent, not
    /// enableable, or an id no component has.
    [[nodiscard]] const std::uint8_t* enabled(ComponentId id) const noexcept {
        const std::int32_t c = archetype_->column_index(id);
        return c < 0 ? nullptr : archetype_->columns[static_cast<std::uint32_t>(c)].enabled;
    }
    /// Stamps the changed tick of component `id` at `row` (when tracked); nothing for an absent
    /// component or an id no component has.
    void mark_changed(ComponentId id, std::size_t row) const noexcept {
        TESSERA_ASSERT(row < archetype_->size, "Chunk::mark_changed: row past the chunk's end");
        const std::int32_t c = archetype_->column_index(id);
        if (c >= 0) {
            detail::Storage::stamp_changed(*archetype_, static_cast<std::uint32_t>(row), c,
                                           tick_ != 0 ? tick_ : storage_->tick());
        }
    }

    /// The table behind the chunk, for the library's own modules.
    [[nodiscard]] detail::Archetype& archetype() const noexcept { return *archetype_; }

private:
    template <class T>
    std::uint64_t tick_of(std::size_t row, bool added) const {
        static_assert(detail::track_changes_v<T>,
                      "tessera: T has component_traits<T>::track_changes = false");
        const ComponentId id = component_id<T>();
        const std::int32_t slot = archetype_->column_index(id);
        TESSERA_ASSERT(slot >= 0, "Chunk::changed_since / added_since: the chunk lacks T");
        TESSERA_ASSERT(row < archetype_->size, "Chunk: row past the chunk's end");
        storage_->track(id);
        const detail::Column& c = archetype_->columns[static_cast<std::uint32_t>(slot)];
        return added ? c.added[row] : c.changed_at(static_cast<std::uint32_t>(row));
    }

    detail::Storage* storage_ = nullptr;
    detail::Archetype* archetype_ = nullptr;
    std::uint64_t tick_ = 0;  ///< the tick writes are stamped with; 0 = the world's
};

}  // namespace tessera

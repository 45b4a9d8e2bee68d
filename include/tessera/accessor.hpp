/// @file accessor.hpp
/// `Accessor<T>`: the fastest read or write of one component type of entities known by handle
/// (`world.accessor<T>()`), for loops over handles rather than over a query.
#pragma once

#include <tessera/assert.hpp>
#include <tessera/detail/storage.hpp>
#include <tessera/world.hpp>

#include <cstdint>
#include <type_traits>

namespace tessera {

/// Reads and writes `T` of entities by handle, like `World::get` / `try_get` / `get_mut` /
/// `try_get_mut`, with the world's entity index and `T`'s column table kept at hand: one
/// generation compare and two loads per lookup, no error path in `try_get`.
///
/// **Validity.** Like a span of a chunk, an accessor is valid until the next structural change
/// of its world (spawn, despawn, add, remove, and whatever creates an archetype): get a new one
/// after. Builds with assertions on (`TESSERA_ASSERTIONS`) abort when one is used after a
/// change that moved the entity index or `T`'s column table. Writes (`get_mut`,
/// `try_get_mut`) from several threads are safe for distinct entities, as in `par_each`.
/// Copyable; a default-constructed accessor finds nothing.
template <class T>
class Accessor {
    static_assert(!std::is_const_v<T> && !std::is_reference_v<T>,
                  "tessera: Accessor<T> takes the component type itself");
    static_assert(!std::is_empty_v<T>, "tessera: tags have no value to access (use World::has)");
    static_assert(!detail::sparse_v<T>,
                  "tessera: Accessor<T> reads table columns: a sparse component "
                  "(storage_kind::sparse) is read with World::get / try_get");

public:
    /// An accessor of no world: `try_get` finds nothing, `get` throws not_alive.
    Accessor() noexcept = default;
    /// An accessor of `s`'s world (`World::accessor` makes them); registers `T` there.
    explicit Accessor(detail::Storage& s) : storage_(&s) {
        s.ensure_component(id());
        refresh();
    }

    /// `e`'s `T`, or null when `e` is dead or lacks `T`. Stamps no tick. O(1).
    [[nodiscard]] const T* try_get(Entity e) const noexcept { return try_value(e); }
    /// `e`'s `T` for writing, or null (also while an add or remove of `T` on `e` is queued, as
    /// `World::try_get_mut`); when not null, marks it changed like `World::get_mut`.
    [[nodiscard]] T* try_get_mut(Entity e) const noexcept {
        const detail::EntityRecord* r = try_record(e);
        if (r == nullptr) return nullptr;
        const detail::Column& c = *columns_[r->archetype];
        if (c.data == nullptr) return nullptr;
        if (storage_->writes_watched()) [[unlikely]]
            return try_get_mut_watched(e);  // a tail call: nothing kept alive across it
        if (c.changed != nullptr) [[unlikely]]
            c.set_changed(r->row, storage_->tick());
        return reinterpret_cast<T*>(c.data) + r->row;
    }
    /// `e`'s `T`. @throws Error(not_alive), Error(missing_component) like `World::get`.
    [[nodiscard]] const T& get(Entity e) const {
        const T* p = try_value(e);
        if (p == nullptr) [[unlikely]]
            fail("Accessor::get", e);
        return *p;
    }
    /// `e`'s `T` for writing, marked changed. @throws like `get`; Error(invalid_argument) while
    /// an add or remove of `T` on `e` is queued (as `World::get_mut`).
    [[nodiscard]] T& get_mut(Entity e) const {
        T* p = try_get_mut(e);
        if (p == nullptr) [[unlikely]] {
            if (try_value(e) != nullptr)
                detail::check_write(*storage_, "Accessor::get_mut", e, id());
            fail("Accessor::get_mut", e);
        }
        return *p;
    }
    /// Whether `e` is alive and has `T`.
    [[nodiscard]] bool has(Entity e) const noexcept { return try_value(e) != nullptr; }

private:
    static ComponentId id() noexcept { return component_id<T>(); }

    /// `try_get_mut` while the world has queued adds or removes: null when one of `T` on `e` is
    /// queued (a write would be lost). Precondition: `e` has `T`.
    [[gnu::noinline]] T* try_get_mut_watched(Entity e) const noexcept {
        if (storage_->queued_change(e, id()) != nullptr) return nullptr;
        const detail::EntityRecord* r = try_record(e);
        const detail::Column& c = *columns_[r->archetype];
        if (c.changed != nullptr) c.set_changed(r->row, storage_->tick());
        return reinterpret_cast<T*>(c.data) + r->row;
    }

    void refresh() noexcept {
        const detail::WorldComponent& wc = storage_->world_component(id());
        records_ = storage_->records();
        record_count_ = storage_->record_count();
        columns_ = wc.columns;
        column_count_ = wc.column_count;
    }

    // The record of `e` when its generation matches (a free slot points at the sentinel table,
    // whose column entry is `no_column`: data null).
    const detail::EntityRecord* try_record(Entity e) const noexcept {
        TESSERA_ASSERT(
            storage_ == nullptr ||
                (records_ == storage_->records() && record_count_ == storage_->record_count() &&
                 columns_ == storage_->world_component(id()).columns &&
                 column_count_ == storage_->world_component(id()).column_count),
            "Accessor used after a structural change of its world: get a new one");
        if (e.index >= record_count_) return nullptr;
        const detail::EntityRecord* r = records_ + e.index;
        if (r->generation != e.generation || r->archetype >= column_count_) return nullptr;
        return r;
    }

    T* try_value(Entity e) const noexcept {
        const detail::EntityRecord* r = try_record(e);
        if (r == nullptr) return nullptr;
        std::byte* data = columns_[r->archetype]->data;
        return data == nullptr ? nullptr : reinterpret_cast<T*>(data) + r->row;
    }

    [[noreturn]] void fail(const char* op, Entity e) const {
        if (storage_ == nullptr) detail::throw_not_alive(op, e, id());
        detail::throw_lookup(*storage_, op, e, id());
    }

    const detail::EntityRecord* records_ = nullptr;
    const detail::Column* const* columns_ = nullptr;
    detail::Storage* storage_ = nullptr;
    std::uint32_t record_count_ = 0;
    std::uint32_t column_count_ = 0;
};

template <class T>
Accessor<T> World::accessor() {
    detail::check_not_parallel(*storage_, "World::accessor");  // it registers T
    return Accessor<T>(*storage_);
}

}  // namespace tessera

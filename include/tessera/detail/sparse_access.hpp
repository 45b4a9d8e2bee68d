/// @file detail/sparse_access.hpp
/// The typed read and write paths of sparse components (`component_traits<T>::storage =
/// ts::storage_kind::sparse`, detail/sparse_set.hpp): what `World`'s member templates call in
/// place of the table lookups when `detail::sparse_v<T>`. Internal, not API.
#pragma once

#include <tessera/detail/operations.hpp>

#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

namespace tessera::detail {

[[noreturn]] void throw_lookup(const Storage& s, const char* op, Entity e, ComponentId id);

/// Where `e`'s sparse `T` is: `value` null when `e` is dead or lacks it (a set holds live
/// entities only, so a match is alive).
template <class T>
struct SparseRef {
    SparseSet* set = nullptr;
    std::uint32_t row = SparseSet::no_row;
    T* value = nullptr;
};

/// `e`'s sparse `T`, or an empty ref. No tick changes. O(1).
template <class T>
[[nodiscard]] inline SparseRef<T> sparse_find(const Storage& s, Entity e) noexcept {
    SparseSet* set = s.sparse(lookup_id<T>());
    if (set == nullptr) return {};
    const std::uint32_t row = set->find(e);
    if (row == SparseSet::no_row) return {};
    return {set, row, reinterpret_cast<T*>(set->value(row))};
}

/// `sparse_find`, throwing the lookup error (not_alive, missing_component) naming `op`.
template <class T>
[[nodiscard]] inline SparseRef<T> sparse_checked(const Storage& s, Entity e, const char* op) {
    SparseRef<T> r = sparse_find<T>(s, e);
    if (r.set == nullptr) [[unlikely]]
        throw_lookup(s, op, e, component_id<T>());
    return r;
}

/// The fast path of adding a new sparse `U` to `e`: when nothing defers or is hooked, `e` is
/// alive and lacks it and its set needs no allocation, constructs it there and returns true.
/// Otherwise changes nothing and returns false (the caller takes the general path).
template <class U, class Arg>
[[gnu::always_inline]] inline bool sparse_add_fast(Storage& s, Entity e, Arg&& arg) noexcept {
    const ComponentId id = component_id<U>();
    SparseSet* set = s.sparse(id);
    if (set == nullptr || s.deferring() || s.hooked(id) || !set->ready(e.index) ||
        s.try_record(e) == nullptr || set->contains(e)) {
        return false;
    }
    std::byte* slot = set->insert(e, s.tick());
    if constexpr (!std::is_empty_v<U>) ::new (static_cast<void*>(slot)) U(std::forward<Arg>(arg));
    return true;
}

/// The fast path of removing a sparse `T` from `e`: when nothing defers or is hooked and `e` is
/// alive, erases it and returns 1 (had it) or 0; -1 when it did nothing (the general path).
template <class T>
[[gnu::always_inline]] inline int sparse_remove_fast(Storage& s, Entity e) noexcept {
    const ComponentId id = component_id<T>();
    SparseSet* set = s.sparse(id);
    if (set == nullptr || s.deferring() || s.hooked(id) || s.try_record(e) == nullptr) return -1;
    return set->erase(e) ? 1 : 0;
}

/// Values of a call's components, constructed from its arguments into raw storage, for the
/// untyped paths that consume (relocate) them: what is not consumed is destroyed.
template <class... Us>
class ValueBlock {
public:
    template <class... Args>
    explicit ValueBlock(Args&&... args) noexcept {
        std::size_t i = 0;
        ((ptrs_[i] = slot<Us>(i), ::new (static_cast<void*>(ptrs_[i])) Us(std::forward<Args>(args)),
          ++i),
         ...);
    }
    ValueBlock(const ValueBlock&) = delete;
    ValueBlock& operator=(const ValueBlock&) = delete;
    ~ValueBlock() {
        if (consumed_) return;
        std::size_t i = 0;
        ((std::launder(reinterpret_cast<Us*>(ptrs_[i]))->~Us(), ++i), ...);
    }
    [[nodiscard]] std::byte* const* values() const noexcept { return ptrs_; }
    /// A commit that marks the values consumed (they were relocated into the world).
    [[nodiscard]] Commit commit() noexcept {
        return {[](void* self) noexcept { static_cast<ValueBlock*>(self)->consumed_ = true; },
                this};
    }

private:
    template <class U>
    std::byte* slot(std::size_t i) noexcept {
        return reinterpret_cast<std::byte*>(&storage_[i]);
    }
    static constexpr std::size_t largest = [] {  // no <algorithm> in public headers
        std::size_t m = 0;
        ((m = sizeof(Us) > m ? sizeof(Us) : m), ...);
        return m;
    }();
    struct alignas(Us...) Slot {
        std::byte bytes[largest];
    };
    Slot storage_[sizeof...(Us)];
    std::byte* ptrs_[sizeof...(Us)];
    bool consumed_ = false;
};

/// `World::spawn` of components some of which are sparse, not deferring: the entity is made
/// pending, then placed by the untyped `apply_place`, which puts the table components in one
/// table and the sparse ones in their sets. A failure takes the entity back (ids as before).
template <class... Us, class... Args>
Entity spawn_split(Storage& s, Args&&... args) {
    ValueBlock<Us...> block(std::forward<Args>(args)...);
    const ComponentId ids[] = {component_id<Us>()...};
    bool consumed = false;
    struct Mark {
        ValueBlock<Us...>* block;
        bool* consumed;
        static void run(void* self) noexcept {
            auto* m = static_cast<Mark*>(self);
            m->block->commit()();
            *m->consumed = true;
        }
    } mark{&block, &consumed};
    const Storage::IndexMark index = s.index_mark();
    const Entity e = s.spawn_pending();
    try {
        apply_place(s, e, ids, block.values(), Commit{&Mark::run, &mark});
    } catch (...) {
        if (!consumed) s.release_pending(index, {&e, 1});
        throw;
    }
    return e;
}

}  // namespace tessera::detail

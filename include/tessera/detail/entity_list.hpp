/// @file detail/entity_list.hpp
/// A small vector of entities (one held inline, more on the heap) with a memory resource: the
/// storage of a relation's targets and of the relation index's reverse lists. Internal.
#pragma once

#include <tessera/entity.hpp>

#include <cstdint>
#include <memory_resource>
#include <span>
#include <utility>

namespace tessera::detail {

class EntityList {
public:
    explicit EntityList(std::pmr::memory_resource* mr) noexcept : mr_(mr) {}
    EntityList(EntityList&& other) noexcept
        : size_(std::exchange(other.size_, 0)),
          capacity_(std::exchange(other.capacity_, 1)),
          mr_(other.mr_) {
        if (capacity_ > 1)
            heap_ = other.heap_;
        else
            one_ = other.one_;
    }
    EntityList(const EntityList& other) : EntityList(other, other.mr_) {}
    /// A copy of `other` allocating from `mr`.
    EntityList(const EntityList& other, std::pmr::memory_resource* mr) : mr_(mr) {
        reserve(other.size_);
        for (std::uint32_t i = 0; i < other.size_; ++i) data()[i] = other.data()[i];
        size_ = other.size_;
    }
    EntityList& operator=(const EntityList&) = delete;
    EntityList& operator=(EntityList&&) = delete;
    ~EntityList() {
        if (capacity_ > 1) mr_->deallocate(heap_, capacity_ * sizeof(Entity), alignof(Entity));
    }

    [[nodiscard]] const Entity* begin() const noexcept { return data(); }
    [[nodiscard]] const Entity* end() const noexcept { return data() + size_; }
    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    [[nodiscard]] std::span<const Entity> span() const noexcept { return {data(), size_}; }
    [[nodiscard]] Entity front() const noexcept { return data()[0]; }
    [[nodiscard]] bool contains(Entity e) const noexcept {
        for (const Entity x : span())
            if (x == e) return true;
        return false;
    }

    /// Room for `n` entities in all (strong guarantee: bad_alloc leaves the list as it was).
    void reserve(std::size_t n) {
        if (n <= capacity_) return;
        const std::uint32_t cap = static_cast<std::uint32_t>(
            n > capacity_ * std::size_t{2} ? n : capacity_ * std::size_t{2});
        auto* fresh = static_cast<Entity*>(mr_->allocate(cap * sizeof(Entity), alignof(Entity)));
        for (std::uint32_t i = 0; i < size_; ++i) fresh[i] = data()[i];
        if (capacity_ > 1) mr_->deallocate(heap_, capacity_ * sizeof(Entity), alignof(Entity));
        heap_ = fresh;
        capacity_ = cap;
    }
    /// Appends `e` (room reserved by the caller, or bad_alloc with nothing changed).
    void push_back(Entity e) {
        reserve(size_ + 1u);
        data()[size_++] = e;
    }
    /// Appends `es` (room reserved by the caller, or bad_alloc with nothing changed).
    void append(std::span<const Entity> es) {
        reserve(size_ + es.size());
        Entity* d = data() + size_;
        for (const Entity e : es) *d++ = e;
        size_ += static_cast<std::uint32_t>(es.size());
    }
    /// Removes the first `e`, keeping the order of the rest. False when absent.
    bool erase(Entity e) noexcept {
        Entity* d = data();
        for (std::uint32_t i = 0; i < size_; ++i) {
            if (d[i] != e) continue;
            for (--size_; i < size_; ++i) d[i] = d[i + 1];
            return true;
        }
        return false;
    }
    void clear() noexcept { size_ = 0; }
    /// Takes over `other`'s entities and storage (both use the same memory resource), dropping
    /// this list's; `other` ends empty.
    void take(EntityList& other) noexcept {
        if (capacity_ > 1) mr_->deallocate(heap_, capacity_ * sizeof(Entity), alignof(Entity));
        size_ = std::exchange(other.size_, 0);
        capacity_ = std::exchange(other.capacity_, 1);
        if (capacity_ > 1)
            heap_ = other.heap_;
        else
            one_ = other.one_;
    }

private:
    [[nodiscard]] Entity* data() noexcept { return capacity_ > 1 ? heap_ : &one_; }
    [[nodiscard]] const Entity* data() const noexcept { return capacity_ > 1 ? heap_ : &one_; }

    union {
        Entity one_{};
        Entity* heap_;
    };
    std::uint32_t size_ = 0;
    std::uint32_t capacity_ = 1;  ///< 1: the inline slot
    std::pmr::memory_resource* mr_;
};

}  // namespace tessera::detail

/// @file detail/queued_changes.hpp
/// Which (entity, component) pairs have an add or a remove in the world's queue, so that a value
/// write made meanwhile (`set`, `get_mut`, ...) can be refused instead of being lost when the
/// command applies. Internal, not API.
#pragma once

#include <tessera/component.hpp>
#include <tessera/entity.hpp>

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <vector>

namespace tessera::detail {

/// An open-addressing table from (entity, component) to the queue position of the last add or
/// remove of that pair that was pushed. Entries are never erased one by one: the user checks a
/// position against the queue (the command there must still be pending and be that add or
/// remove) and clears the whole table once the queue is empty. Empty until the first note: a
/// world that never queues an add or a remove pays one `empty()` per value write.
class QueuedChanges {
public:
    /// No position (`find`: never noted).
    static constexpr std::size_t npos = ~std::size_t{0};
    /// A position known to be applied or taken back (`forget`).
    static constexpr std::size_t gone = npos - 1;

    explicit QueuedChanges(std::pmr::memory_resource* mr) : buckets_(mr) {}

    [[nodiscard]] bool empty() const noexcept { return used_ == 0; }
    /// Room for `n` more pairs, so that `note` allocates nothing. @throws std::bad_alloc
    /// (nothing changes then).
    void reserve(std::size_t n);
    /// Records `position` for (`e`, `id`), replacing an older one. Precondition: room reserved.
    void note(Entity e, ComponentId id, std::size_t position) noexcept;
    /// The position last noted for (`e`, `id`): `npos` when none, `gone` after `forget`.
    [[nodiscard]] std::size_t find(Entity e, ComponentId id) const noexcept;
    /// Marks (`e`, `id`)'s note as no longer queued (kept as `gone`: the table has no erase).
    void forget(Entity e, ComponentId id) noexcept;
    /// Forgets every pair, keeping the capacity.
    void clear() noexcept;

private:
    struct Bucket {
        std::uint64_t entity = 0;
        std::uint32_t id = 0;
        std::size_t position = npos;
    };
    /// The bucket of the pair, or the empty bucket where it would go (the table is at most half
    /// full). Precondition: a table.
    static std::size_t probe(const std::pmr::vector<Bucket>& buckets, std::uint64_t entity,
                             std::uint32_t id) noexcept;

    std::pmr::vector<Bucket> buckets_;
    std::size_t used_ = 0;
};

}  // namespace tessera::detail

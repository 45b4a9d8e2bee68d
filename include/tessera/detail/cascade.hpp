/// @file detail/cascade.hpp
/// The visiting order of a cascade query (`Query::cascade`, query.hpp): the matched rows as
/// runs of consecutive rows of one table at one depth, sorted by depth, kept between runs and
/// rebuilt only when the world changed under it. The code is in src/query_cascade.cpp. Internal.
#pragma once

#include <tessera/detail/storage.hpp>
#include <tessera/entity.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <span>
#include <vector>

namespace tessera::detail {

/// Rows [first, last) of the `table`-th matched archetype, all at one depth; with groups
/// (`CascadeOrder::enable`), its rows' groups start at `group` of `CascadeOrder::groups`.
struct CascadeRun {
    std::uint32_t table;
    std::uint32_t first;
    std::uint32_t last;
    std::uint32_t group = 0;
};

/// Consecutive rows of a run that have the same first parent (the `front()` of their
/// `Targets<ChildOf>` list, or none): an Up term reads the same answer for each. The group
/// ends at row `end` and begins where the one before it ends, or at its run's `first`. When
/// the parent is in a matched table, `table` is that archetype's index and `row` its row there
/// (both hold while the order is current: a matched table's rows move only with a change of
/// its size or freed count); otherwise `table` is `dead_archetype`, no live entity's table.
struct CascadeGroup {
    std::uint32_t end;
    std::uint32_t table;
    std::uint32_t row;
};

/// The cascade loop of a query with Up terms (traverse.hpp defines it): a run's rows group by
/// group, each group's Up terms resolved once.
template <class Q>
struct CascadeUp;

/// The depth order of a query's matched rows. Depth: the number of first-parent (`ChildOf`)
/// steps to a root; an entity outside any hierarchy is a root (depth 0).
///
/// Valid while no matched table changed its rows (same size, same count of rows freed) and no
/// first parent changed (the relations' ring of recent changes, `hierarchy_recent`), in the
/// same layout epoch. Otherwise the next `update` rebuilds it: one pass over the matched rows
/// (depths from a per-entity memo) and a counting sort of the runs by depth, O(R + L) for R
/// rows and L levels. The memo is kept across rebuilds; a first-parent change forgets the
/// depths of that entity's subtree only (more than the ring holds since the last build: every
/// depth), so only those entities walk their parents again. The groups of a grouped order
/// (rows of a run with the same first parent) are made by the same build, O(R + archetypes)
/// more.
class CascadeOrder {
public:
    CascadeOrder() noexcept = default;
    explicit CascadeOrder(std::pmr::memory_resource* mr)
        : runs_(mr),
          level_start_(mr),
          run_rows_(mr),
          groups_(mr),
          in_matched_(mr),
          tables_(mr),
          memo_(mr),
          visit_(mr),
          raw_(mr),
          raw_depth_(mr),
          counts_(mr),
          walk_(mr),
          queue_(mr) {}

    /// Whether the query is a cascade query.
    [[nodiscard]] bool enabled() const noexcept { return enabled_; }
    /// Turns the order on, allocating from `mr` (nothing before the first run); `grouped`:
    /// each build also splits the runs into groups of rows with the same first parent.
    void enable(std::pmr::memory_resource* mr, bool grouped) {
        if (enabled_) return;
        // Rebuilt in place: a pmr vector's assignment would keep the default resource.
        std::destroy_at(this);
        std::construct_at(this, mr);
        enabled_ = true;
        grouped_ = grouped;
    }
    /// The runs of `matched` (archetype indices of `s`) in depth order, rebuilt first when
    /// stale. Allocates only when it rebuilds; may throw bad_alloc then (the order stays stale).
    std::span<const CascadeRun> update(const Storage& s, std::span<const std::uint32_t> matched) {
        if (!current(s, matched)) rebuild(s, matched);
        return runs_;
    }
    /// Number of depth levels of the last build (the deepest depth + 1; 0 when no rows).
    [[nodiscard]] std::size_t levels() const noexcept {
        return level_start_.empty() ? 0 : level_start_.size() - 1;
    }
    /// The runs of depth level `l` are [level_begin(l), level_begin(l + 1)) of `update`'s.
    [[nodiscard]] std::size_t level_begin(std::size_t l) const noexcept { return level_start_[l]; }
    /// Rows before run `r` in the order (`r` up to the number of runs).
    [[nodiscard]] std::size_t rows_before(std::size_t r) const noexcept { return run_rows_[r]; }
    /// The run prefix sums, for a search by row.
    [[nodiscard]] std::span<const std::size_t> run_rows() const noexcept { return run_rows_; }
    /// The run of [r0, r1) holding row `row` of the order (`rows_before(r0) <= row <
    /// rows_before(r1)`). O(log runs).
    [[nodiscard]] std::size_t run_of(std::size_t r0, std::size_t r1,
                                     std::size_t row) const noexcept;
    /// The groups of the runs (`grouped`), run by run in `update`'s order.
    [[nodiscard]] const CascadeGroup* groups() const noexcept { return groups_.data(); }
    /// The group of run `r` holding its row `row` (`first <= row < last`). O(log groups).
    [[nodiscard]] std::size_t group_of(std::size_t r, std::uint32_t row) const noexcept;
    /// How many times the order was built.
    [[nodiscard]] std::uint64_t builds() const noexcept { return builds_; }

private:
    struct Seen {
        std::uint32_t index;  ///< archetype index
        std::uint32_t size;
        std::uint64_t freed;
    };
    struct Depth {
        std::uint32_t generation = 0;
        std::uint32_t depth = 0;
        std::uint32_t stamp = 0;  ///< valid when it is `stamp_`
    };

    [[nodiscard]] bool current(const Storage& s, std::span<const std::uint32_t> matched) const;
    void rebuild(const Storage& s, std::span<const std::uint32_t> matched);
    void forget(const Storage& s);
    void forget_subtree(const Storage& s, Entity root);
    void group(const Storage& s, std::span<const std::uint32_t> matched);
    std::uint32_t depth_of(const Storage& s, Entity e);
    [[nodiscard]] bool known(Entity e) const noexcept {
        const Depth& d = memo_[e.index];
        return d.stamp == stamp_ && d.generation == e.generation;
    }

    std::pmr::vector<CascadeRun> runs_;          ///< by depth, then table and row
    std::pmr::vector<std::size_t> level_start_;  ///< first run of each level, and the end
    std::pmr::vector<std::size_t> run_rows_;     ///< rows before each run, and the total
    std::pmr::vector<CascadeGroup> groups_;      ///< by run (`grouped_`)
    std::pmr::vector<std::uint8_t> in_matched_;  ///< by archetype: matched (scratch)
    std::pmr::vector<Seen> tables_;              ///< the matched tables as built from
    std::pmr::vector<Depth> memo_;               ///< by entity index
    std::pmr::vector<std::uint32_t> visit_;      ///< forget_subtree's marks, by entity index
    std::pmr::vector<CascadeRun> raw_;           ///< the runs in table order (scratch)
    std::pmr::vector<std::uint32_t> raw_depth_;  ///< their depths (scratch)
    std::pmr::vector<std::size_t> counts_;       ///< runs per depth (scratch)
    std::pmr::vector<Entity> walk_;              ///< depth_of's stack (scratch)
    std::pmr::vector<Entity> queue_;             ///< forget_subtree's worklist (scratch)
    const void* index_ = nullptr;                ///< the relation index built from
    std::uint64_t changes_ = 0;                  ///< its change count then
    std::uint64_t epoch_ = 0;                    ///< the layout epoch then
    std::uint64_t builds_ = 0;
    std::uint32_t stamp_ = 1;
    std::uint32_t visit_mark_ = 0;
    bool built_ = false;
    bool enabled_ = false;
    bool grouped_ = false;
};

}  // namespace tessera::detail

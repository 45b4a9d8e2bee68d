// The depth order of cascade queries (detail/cascade.hpp): when it is stale, and how it is
// rebuilt from a per-entity depth memo and a counting sort of row runs by depth.
#include <tessera/detail/cascade.hpp>

#include <tessera/detail/entity_list.hpp>
#include <tessera/relation.hpp>

#include <algorithm>

namespace tessera::detail {

namespace {

/// `e`'s first ChildOf target, or null (`e` alive).
Entity first_parent(const Storage& s, Entity e, ComponentId targets) noexcept {
    const EntityRecord* r = s.try_record(e);
    if (r == nullptr) return Entity::null();
    const Archetype& a = s.archetype(r->archetype);
    const std::int32_t c = a.column_index(targets);
    if (c < 0) return Entity::null();
    const Column& col = a.columns[static_cast<std::uint32_t>(c)];
    // Targets<ChildOf> adds no member to EntityList: the two are pointer-interconvertible.
    const auto* list =
        reinterpret_cast<const EntityList*>(col.data + std::size_t{r->row} * col.size);
    return list->empty() ? Entity::null() : list->front();
}

}  // namespace

bool CascadeOrder::current(const Storage& s, std::span<const std::uint32_t> matched) const {
    if (!built_ || epoch_ != s.layout_epoch() || matched.size() != tables_.size()) return false;
    const HierarchyRecent h = hierarchy_recent(s);
    if (h.index != index_ || h.count != changes_) return false;
    for (std::size_t k = 0; k < matched.size(); ++k) {
        const Archetype& a = s.archetype(matched[k]);
        const Seen& t = tables_[k];
        if (t.index != matched[k] || t.size != a.size || t.freed != a.freed) return false;
    }
    return true;
}

void CascadeOrder::forget(const Storage& s) {
    const HierarchyRecent h = hierarchy_recent(s);
    const bool whole = !built_ || epoch_ != s.layout_epoch() || h.index != index_ ||
                       h.count < changes_ || h.count - changes_ > h.recent.size();
    if (whole) {
        if (++stamp_ == 0) {
            for (Depth& d : memo_) d.stamp = 0;
            stamp_ = 1;
        }
        return;
    }
    for (std::uint64_t n = changes_; n < h.count; ++n)
        forget_subtree(s, h.recent[static_cast<std::size_t>(n % h.recent.size())]);
}

void CascadeOrder::forget_subtree(const Storage& s, Entity root) {
    if (++visit_mark_ == 0) {
        std::fill(visit_.begin(), visit_.end(), 0u);
        visit_mark_ = 1;
    }
    const ComponentId childof = component_id<ChildOf>();
    queue_.clear();
    queue_.push_back(root);
    // Breadth first over the children (every source, not only first children: a superset).
    for (std::size_t i = 0; i < queue_.size(); ++i) {
        const Entity x = queue_[i];
        if (x.index >= memo_.size() || visit_[x.index] == visit_mark_) continue;
        visit_[x.index] = visit_mark_;
        memo_[x.index].stamp = 0;
        for (const Entity c : sources(s, childof, x)) queue_.push_back(c);
    }
}

std::uint32_t CascadeOrder::depth_of(const Storage& s, Entity e) {
    if (known(e)) return memo_[e.index].depth;
    const ComponentId targets = component_id<Targets<ChildOf>>();
    // Up to the first ancestor whose depth is known (or a root), with an explicit stack: any
    // depth, no recursion.
    walk_.clear();
    std::uint32_t depth = 0;
    for (Entity x = e;;) {
        walk_.push_back(x);
        const Entity p = first_parent(s, x, targets);
        if (!p) break;
        if (known(p)) {
            depth = memo_[p.index].depth + 1;
            break;
        }
        x = p;
    }
    for (std::size_t i = walk_.size(); i-- > 0; ++depth) {
        const Entity x = walk_[i];
        memo_[x.index] = Depth{x.generation, depth, stamp_};
    }
    return memo_[e.index].depth;
}

void CascadeOrder::rebuild(const Storage& s, std::span<const std::uint32_t> matched) {
    if (memo_.size() < s.record_count()) {
        memo_.resize(s.record_count());
        visit_.resize(s.record_count(), 0u);
    }
    forget(s);  // the depths that may have changed since the last build
    // The memo now describes the world as it is. Until the end, the order doesn't: a bad_alloc
    // leaves it stale (and the next build forgets every depth).
    const HierarchyRecent h = hierarchy_recent(s);
    index_ = h.index;
    changes_ = h.count;
    epoch_ = s.layout_epoch();
    built_ = false;
    // The runs in table order: consecutive rows of one table at one depth.
    raw_.clear();
    raw_depth_.clear();
    counts_.clear();
    for (std::size_t k = 0; k < matched.size(); ++k) {
        const Archetype& a = s.archetype(matched[k]);
        const auto table = static_cast<std::uint32_t>(k);
        for (std::uint32_t row = 0; row < a.size; ++row) {
            const std::uint32_t d = depth_of(s, a.entities[row]);
            if (!raw_.empty() && raw_.back().table == table && raw_.back().last == row &&
                raw_depth_.back() == d) {
                ++raw_.back().last;
                continue;
            }
            raw_.push_back({table, row, row + 1});
            raw_depth_.push_back(d);
            if (d >= counts_.size()) counts_.resize(std::size_t{d} + 1, 0);
            ++counts_[d];
        }
    }
    // A stable counting sort of the runs by depth.
    level_start_.resize(counts_.size() + 1);
    std::size_t at = 0;
    for (std::size_t l = 0; l < counts_.size(); ++l) {
        level_start_[l] = at;
        at += counts_[l];
        counts_[l] = level_start_[l];  // now the next slot of level l
    }
    level_start_[counts_.size()] = at;
    runs_.resize(raw_.size());
    for (std::size_t r = 0; r < raw_.size(); ++r) runs_[counts_[raw_depth_[r]]++] = raw_[r];
    run_rows_.resize(runs_.size() + 1);
    std::size_t rows = 0;
    for (std::size_t r = 0; r < runs_.size(); ++r) {
        run_rows_[r] = rows;
        rows += runs_[r].last - runs_[r].first;
    }
    run_rows_[runs_.size()] = rows;
    if (grouped_) group(s, matched);
    tables_.resize(matched.size());
    for (std::size_t k = 0; k < matched.size(); ++k) {
        const Archetype& a = s.archetype(matched[k]);
        tables_[k] = Seen{matched[k], a.size, a.freed};
    }
    ++builds_;
    built_ = true;
}

void CascadeOrder::group(const Storage& s, std::span<const std::uint32_t> matched) {
    const ComponentId targets = component_id<Targets<ChildOf>>();
    // Which archetypes are matched (their rows stay put while the order is current).
    in_matched_.assign(s.archetype_end(), 0);
    for (const std::uint32_t index : matched) in_matched_[index] = 1;
    groups_.clear();
    for (CascadeRun& run : runs_) {
        run.group = static_cast<std::uint32_t>(groups_.size());
        const Archetype& a = s.archetype(matched[run.table]);
        const std::int32_t c = a.column_index(targets);
        if (c < 0) {  // no row of the table has a parent
            groups_.push_back({run.last, dead_archetype, 0});
            continue;
        }
        const Column& col = a.columns[static_cast<std::uint32_t>(c)];
        Entity last{};
        for (std::uint32_t row = run.first; row < run.last; ++row) {
            // What an Up term reads for the row (UpBase::at): the list's front. Targets<ChildOf>
            // adds no member to EntityList: the two are pointer-interconvertible.
            const Entity p =
                reinterpret_cast<const EntityList*>(col.data + std::size_t{row} * col.size)
                    ->front();
            if (row != run.first && p == last) {
                ++groups_.back().end;
                continue;
            }
            last = p;
            CascadeGroup g{row + 1, dead_archetype, 0};
            if (const EntityRecord* r = s.try_record(p);
                r != nullptr && in_matched_[r->archetype]) {
                g.table = r->archetype;
                g.row = r->row;
            }
            groups_.push_back(g);
        }
    }
}

std::size_t CascadeOrder::run_of(std::size_t r0, std::size_t r1, std::size_t row) const noexcept {
    // The last run starting at or before `row`.
    const auto* first = run_rows_.data() + r0;
    return static_cast<std::size_t>(std::upper_bound(first, run_rows_.data() + r1, row) -
                                    run_rows_.data()) -
           1;
}

std::size_t CascadeOrder::group_of(std::size_t r, std::uint32_t row) const noexcept {
    const auto* first = groups_.data() + runs_[r].group;
    const auto* last =
        groups_.data() + (r + 1 < runs_.size() ? runs_[r + 1].group : groups_.size());
    // The first group ending after `row`.
    const auto* g = std::upper_bound(
        first, last, row, [](std::uint32_t x, const CascadeGroup& y) { return x < y.end; });
    return static_cast<std::size_t>(g - groups_.data());
}

}  // namespace tessera::detail

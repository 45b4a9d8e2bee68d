// propagate_transforms, phase 1 (transform_plan.hpp): checking the plan against the world, and
// rebuilding it (the tables, the first-parent hierarchy, the depth-first steps, the level order).
#include "transform_plan.hpp"

#include <cassert>
#include <cstdint>
#include <span>
#include <utility>

namespace tessera::detail {

/// `e`'s first ChildOf target, or null (`e` alive).
Entity Propagation::first_parent(Entity e) const noexcept {
    const EntityRecord& r = *s_.try_record(e);
    const auto* t = column<Targets<ChildOf>>(s_.archetype(r.archetype), targets_id_);
    return t == nullptr || t[r.row].empty() ? Entity::null() : t[r.row].front();
}

/// Whether the plan still describes the world: same tables with the same rows and columns,
/// no first parent changed.
bool Propagation::plan_matches() {
    const std::span<const std::uint32_t> tables = st_.with_local.update();
    if (!st_.planned || st_.layout != s_.layout_epoch() || tables.size() != st_.tables.size() ||
        hierarchy_overflowed(s_) || !hierarchy_changes(s_).empty())
        return false;
    for (std::size_t k = 0; k < tables.size(); ++k) {
        const Archetype& a = s_.archetype(tables[k]);
        const PlanTable& t = st_.tables[k];
        const Column* wcol = column_of(a, world_id_);
        if (t.index != tables[k] || t.size != a.size || t.capacity != a.capacity ||
            t.entities != a.entities || t.local != column<LocalTransform>(a, local_id_) ||
            t.world != column<WorldTransform>(a, world_id_) ||
            t.changed != (wcol != nullptr ? wcol->changed : nullptr) || t.freed != a.freed)
            return false;
    }
    return true;
}

/// Rebuilds the plan from the tables with a LocalTransform and the first-parent hierarchy,
/// marking dirty the steps that are new or whose nearest ancestor with a step changed (the
/// others hold a current WorldTransform, or are dirty by their change ticks).
void Propagation::build_plan() {
    st_.planned = false;
    record_tables();
    const std::uint32_t n = st_.rows;
    st_.steps.resize(n);
    st_.step_end.resize(n);
    st_.step_entity.resize(n);
    st_.step_depth.resize(n);
    st_.row_parent.resize(n);
    st_.row_fingerprint.resize(n);
    st_.fingerprinted = false;
    st_.row_step.resize(n);
    st_.work.resize(n);
    st_.dirty.assign((std::size_t{n} + 63) / 64, 0);
    st_.forced.resize(st_.dirty.size());
    if (st_.nodes.size() < s_.record_count()) st_.nodes.resize(s_.record_count());
    std::size_t spares = 0;
    for (const PlanTable& t : st_.tables) spares += t.world == nullptr ? t.size : 0;
    st_.spare.resize(spares);  // before any step points into it
    link_nodes();
    emit_steps();
    st_.levels_ready = false;
    st_.layout = s_.layout_epoch();
    st_.planned = true;
}

/// Records the tables with a LocalTransform.
void Propagation::record_tables() {
    const std::span<const std::uint32_t> tables = st_.with_local.update();
    st_.tables.clear();
    std::uint32_t rows = 0;
    for (const std::uint32_t index : tables) {
        const Archetype& a = s_.archetype(index);
        const Column* wcol = column_of(a, world_id_);
        st_.tables.push_back(PlanTable{index, a.size, a.capacity, rows, a.freed, a.entities,
                                       column<LocalTransform>(a, local_id_),
                                       column<WorldTransform>(a, world_id_),
                                       wcol != nullptr ? wcol->changed : nullptr,
                                       wcol != nullptr ? wcol->changed_max : nullptr});
        rows += a.size;
    }
    st_.rows = rows;
}

/// Builds the child lists in `nodes`: every entity with a LocalTransform under its first
/// parent, and the parents without one under theirs, up to the roots (in `roots`).
void Propagation::link_nodes() {
    std::pmr::vector<PlanNode>& nodes = st_.nodes;
    for (std::uint32_t k = 0; k < st_.tables.size(); ++k) {
        const PlanTable& t = st_.tables[k];
        for (std::uint32_t row = 0; row < t.size; ++row) meet(nodes[t.entities[row].index], k, row);
    }
    // Backwards, so that the lists (filled at their heads) hold children in table order.
    st_.roots.clear();
    for (std::uint32_t k = static_cast<std::uint32_t>(st_.tables.size()); k-- > 0;) {
        const PlanTable& t = st_.tables[k];
        const auto* targets = column<Targets<ChildOf>>(s_.archetype(t.index), targets_id_);
        for (std::uint32_t row = t.size; row-- > 0;) {
            const Entity p =
                targets != nullptr && !targets[row].empty() ? targets[row].front() : Entity::null();
            link(t.entities[row].index, p);
        }
    }
}

/// Starts node `n`'s part in this build (keeping what its step was computed from).
void Propagation::meet(PlanNode& n, std::uint32_t table, std::uint32_t row) const noexcept {
    n.seen = ep_;
    n.first_child = n.next = none;
    n.table = table;
    n.row = row;
}

/// Puts node `x` in the child list of `p` (its first parent), walking up through parents
/// without a LocalTransform met for the first time.
void Propagation::link(std::uint32_t x, Entity p) {
    std::pmr::vector<PlanNode>& nodes = st_.nodes;
    for (;;) {
        if (!p) {
            st_.roots.push_back(x);
            return;
        }
        PlanNode& pn = nodes[p.index];
        const bool known = pn.seen == ep_;
        if (!known) meet(pn, none, 0);
        nodes[x].next = pn.first_child;
        pn.first_child = x;
        if (known) return;
        x = p.index;
        p = first_parent(p);
    }
}

/// Walks the child lists depth first from every root, appending a step per entity with a
/// LocalTransform. A step is marked dirty when it is new, when its nearest ancestor with a
/// step changed (by re-parenting, or by an ancestor gaining or losing its LocalTransform),
/// or when it has no WorldTransform (its spare matrix holds nothing yet).
void Propagation::emit_steps() {
    PlanNode* const nodes = st_.nodes.data();
    const PlanTable* const tables = st_.tables.data();
    TreeStep* const steps = st_.steps.data();
    std::uint32_t* const step_end = st_.step_end.data();
    Entity* const step_entity = st_.step_entity.data();
    std::uint32_t* const step_depth = st_.step_depth.data();
    std::uint32_t* const row_step = st_.row_step.data();
    const glm::mat4** const row_parent = st_.row_parent.data();
    std::uint64_t* const dirty = st_.dirty.data();
    SpareMatrix* spare = st_.spare.data();
    std::pmr::vector<TransformState::Frame>& stack = st_.stack;
    std::uint32_t n = 0;
    std::size_t moved = 0;
    bool ordered = true;
    // Emits node `x`'s step, if it has one (`base` is the entity of its nearest ancestor
    // with a step, `parent` that one's world matrix, `base_row` its row), and pushes its
    // frame.
    auto visit = [&](std::uint32_t x, Entity base, const glm::mat4* parent, std::uint32_t depth,
                     std::uint32_t base_row) {
        PlanNode& node = nodes[x];
        TransformState::Frame f{x, node.first_child, none, base, parent, depth, base_row};
        if (node.table != none) {
            const PlanTable& t = tables[node.table];
            const std::uint32_t row = node.row;
            const std::uint32_t at = t.first + row;
            ordered = ordered && t.world != nullptr && (base_row == none || base_row < at);
            const Entity e = t.entities[row];
            TreeStep& s = steps[n];
            s.local = &t.local[row].matrix;
            s.parent = parent;
            s.world = t.world != nullptr ? &t.world[row].matrix : &(spare++)->matrix;
            s.changed = t.world != nullptr ? t.changed + row : nullptr;
            s.bound = t.world != nullptr ? t.changed_max + row / tick_block : nullptr;
            // compute assumes this (the parent is another step's world).
            assert(reinterpret_cast<std::uintptr_t>(s.local) % 64 == 0 &&
                   reinterpret_cast<std::uintptr_t>(s.world) % 64 == 0);
            if (node.stepped != e || node.base != base || s.changed == nullptr) {
                set_bit(dirty, n);
                ++moved;
            }
            node.stepped = e;
            node.base = base;
            step_entity[n] = e;
            step_depth[n] = depth;
            ++f.depth;
            row_step[at] = n;
            row_parent[at] = parent;
            f.base_row = at;
            f.step = n++;
            f.base_entity = e;
            f.base = s.world;
        }
        stack.push_back(f);
    };
    for (std::size_t r = st_.roots.size(); r-- > 0;) {
        visit(st_.roots[r], Entity::null(), nullptr, 0, none);
        while (!stack.empty()) {
            TransformState::Frame& f = stack.back();
            const std::uint32_t c = f.next_child;
            if (c == none) {
                if (f.step != none) step_end[f.step] = n;
                stack.pop_back();
                continue;
            }
            f.next_child = nodes[c].next;
            visit(c, f.base_entity, f.base, f.depth, f.base_row);  // may reallocate `stack`
        }
    }
    assert(n == st_.steps.size() && spare == st_.spare.data() + st_.spare.size());
    moved_ = moved;
    st_.row_ordered = ordered;
}

/// Fills `level`: the rows in table order, sorted stably by depth (a counting sort).
void Propagation::order_levels() {
    if (st_.levels_ready) return;
    st_.level.resize(st_.steps.size());
    st_.level_step.resize(st_.steps.size());
    std::pmr::vector<std::uint32_t>& start = st_.depth_start;
    start.clear();
    for (const std::uint32_t d : st_.step_depth) {
        if (d >= start.size()) start.resize(std::size_t{d} + 1, 0);
        ++start[d];
    }
    std::uint32_t sum = 0;
    for (std::uint32_t& c : start) sum += std::exchange(c, sum);
    const auto rows = static_cast<std::uint32_t>(st_.row_step.size());
    for (std::uint32_t r = 0; r < rows; ++r) {
        const std::uint32_t i = st_.row_step[r];
        const std::uint32_t k = start[st_.step_depth[i]]++;
        st_.level[k] = static_cast<const PlanStep&>(st_.steps[i]);
        st_.level_step[k] = i;
    }
    st_.levels_ready = true;
}

}  // namespace tessera::detail

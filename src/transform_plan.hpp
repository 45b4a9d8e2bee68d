// propagate_transforms (transform.hpp), internal: the per-world state, the plan, and the class
// that runs one call. The call's entry and phase 0 are in transform.cpp, the plan (phase 1) in
// transform_plan.cpp, the passes that compute world matrices (phase 2) in transform_pass.cpp.
//
// The per-world state (a hidden resource, `TransformState`) keeps the tick of the previous call
// and a *plan*: every entity with a LocalTransform once, in depth-first pre-order of the
// first-parent hierarchy, so parents come before their children and every subtree is one
// contiguous range of the plan. Each step (`TreeStep`, 40 bytes) points straight into the table
// columns: the entity's LocalTransform, its WorldTransform (or a `spare` matrix while its
// addition is queued), its WorldTransform changed tick and that tick's block bound, and the
// world matrix of its nearest ancestor with a LocalTransform (null: the identity). Entities
// without a LocalTransform are not steps: their parent's matrix passes through to their
// children's steps. Beside the steps:
//   - `step_end[i]`: the end of step i's subtree (its range is [i, step_end[i]));
//   - `step_entity[i]`: step i's entity (for World::set when WorldTransform is observed);
//   - `tables`: the tables with a LocalTransform the plan was built from (index, size,
//     capacity, rows freed, column addresses), and per row of those tables, in table order, its
//     step (`row_step`), its parent matrix (`row_parent`) and the fingerprint of its
//     WorldTransform (`row_fingerprint`);
//   - `nodes` (by entity index): the hierarchy (child lists) while a plan is built, and which
//     entity had a step at that index in the last plan, with its `base` (the entity of its
//     nearest ancestor with a step, whose world matrix it multiplies).
//
// The plan stays valid while nothing moves a row of those tables and no first parent changes:
// every call compares the tables (same set, sizes, capacities, column addresses and count of
// rows freed: then every row holds the same entity) and checks that the hierarchy log is empty.
// Anything else (spawn, despawn, re-parenting, an archetype move, a table growing) rebuilds the
// plan; the rebuild marks dirty the steps that are new or have a new base (their parent matrix
// changed without any change tick moving), and the call goes on as usual. A call: (0) adds the
// missing WorldTransforms; (1) checks or rebuilds the plan; (2) computes every step (a full
// pass: when every row comes after its parent's, as when parents are spawned first, a plain loop
// over the columns in table and row order, which writes a matrix whose fingerprint changed
// without reading the old one; else a straight loop over a copy of the steps ordered by depth,
// then table and row, so that it reads the columns nearly in address order), or marks the steps of
// the rows whose LocalTransform or WorldTransform changed tick moved in a bitmap over the steps
// (reading only the tick blocks whose bound, Column::changed_max, moved), lists the outermost of
// them (each one's subtree is a contiguous range of the depth-first plan) and computes those ranges
// in one loop; (3) records the tick and advances it. Every walk uses an explicit stack kept in the
#pragma once

#include <tessera/transform.hpp>

#include <tessera/detail/storage.hpp>
#include <tessera/query.hpp>
#include <tessera/relation.hpp>
#include <tessera/world.hpp>

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <vector>

namespace tessera::detail {

inline constexpr std::uint32_t none = 0xFFFFFFFFu;
/// Steps between a step and the one `compute` prefetches for.
inline constexpr std::uint32_t prefetch_distance = 8;

/// One entity with a LocalTransform in the plan: `*world = *parent * *local`.
struct PlanStep {
    const glm::mat4* local = nullptr;
    glm::mat4* world = nullptr;         ///< its WorldTransform, or a spare matrix
    const glm::mat4* parent = nullptr;  ///< nearest ancestor's world matrix; null = identity
    std::uint64_t* changed = nullptr;   ///< WorldTransform's changed tick; null for a spare
};

/// A step of the depth-first plan, which incremental passes compute: each write also raises
/// `*bound`, its block bound of WorldTransform changed ticks (`Column::changed_max`; null for a
/// spare). The full passes leave it out (they raise every bound once).
struct TreeStep : PlanStep {
    std::uint64_t* bound = nullptr;
};

/// The world matrix of an entity whose WorldTransform is yet to be added, aligned as a column
/// row is (compute assumes it).
struct alignas(64) SpareMatrix {
    glm::mat4 matrix;
};

/// A table with a LocalTransform as the plan saw it.
struct PlanTable {
    std::uint32_t index = none;  ///< archetype index
    std::uint32_t size = 0;
    std::uint32_t capacity = 0;
    std::uint32_t first = 0;  ///< its first row in `row_step`
    std::uint64_t freed = 0;  ///< Archetype::freed
    const Entity* entities = nullptr;
    const LocalTransform* local = nullptr;
    WorldTransform* world = nullptr;  ///< null: no WorldTransform (addition queued)
    std::uint64_t* changed = nullptr;
    std::uint64_t* changed_max = nullptr;
};

/// An entity index in the hierarchy while a plan is built: its child list and, for an entity
/// with a LocalTransform, its table (in `tables`) and row; and what its step was computed from
/// in the previous plan.
struct PlanNode {
    std::uint32_t seen = 0;  ///< epoch of the build that met it (else the next four are stale)
    std::uint32_t first_child = none;
    std::uint32_t next = none;   ///< next sibling
    std::uint32_t table = none;  ///< none: no LocalTransform (passes its parent's matrix through)
    std::uint32_t row = 0;
    Entity stepped{};  ///< the entity that had a step at this index in the last plan built
    Entity base{};     ///< that step's nearest ancestor with a step (null: none)
};

/// The per-world state: a resource of this (internal) type.
struct TransformState {
    explicit TransformState(Storage& s)
        : with_local(s),
          local_without_world(s),
          steps(s.resource()),
          step_end(s.resource()),
          step_entity(s.resource()),
          step_depth(s.resource()),
          row_parent(s.resource()),
          row_fingerprint(s.resource()),
          level(s.resource()),
          level_step(s.resource()),
          depth_start(s.resource()),
          tables(s.resource()),
          row_step(s.resource()),
          nodes(s.resource()),
          roots(s.resource()),
          stack(s.resource()),
          dirty(s.resource()),
          work(s.resource()),
          forced(s.resource()),
          spare(s.resource()),
          missing(s.resource()) {
        with_local.spec.all = {component_id<LocalTransform>()};
        local_without_world.spec.all = {component_id<LocalTransform>()};
        local_without_world.spec.none = {component_id<WorldTransform>()};
    }

    /// A frame of the depth-first walk that builds the plan.
    struct Frame {
        std::uint32_t node;
        std::uint32_t next_child;
        std::uint32_t step;      ///< its step, or none
        Entity base_entity;      ///< the entity of the step its children multiply (or null)
        const glm::mat4* base;   ///< that step's world matrix (null: the identity)
        std::uint32_t depth;     ///< steps on the path from its root, its own included
        std::uint32_t base_row;  ///< that step's row in `row_parent`'s order (none: no step)
    };

    bool primed = false;  ///< a call has completed
    PropagationMode mode = PropagationMode::automatic;
    std::uint64_t since = 0;   ///< the tick at the end of the previous call
    std::uint32_t epoch = 0;   ///< this call's number (0 is never a valid epoch)
    bool planned = false;      ///< `steps` etc. describe the tables in `tables`
    bool complete = true;      ///< the last call returned normally (else compute everything)
    std::uint64_t layout = 0;  ///< Storage::layout_epoch the plan was built in
    QueryState with_local;
    QueryState local_without_world;
    std::pmr::vector<TreeStep> steps;
    std::pmr::vector<std::uint32_t> step_end;
    std::pmr::vector<Entity> step_entity;
    std::pmr::vector<std::uint32_t> step_depth;  ///< ancestors with a step (for order_levels)
    /// Per row of `tables` (in table order), its step's parent matrix (null: the identity).
    std::pmr::vector<const glm::mat4*> row_parent;
    /// Per row of `tables`, the `fingerprint` of its WorldTransform, valid while `fingerprinted`:
    /// a row-order full pass sets them, and anything else that may write a WorldTransform
    /// without them clears the flag (a rebuild, an incremental or level-order pass). Writes by
    /// anyone else move the row's changed tick past `since` (or stamp its table).
    std::pmr::vector<std::uint32_t> row_fingerprint;
    bool fingerprinted = false;
    /// Every row's parent step is an earlier row and every table has a WorldTransform: a full
    /// pass can read the columns themselves in table and row order (as when parents are spawned
    /// before their children).
    bool row_ordered = false;
    /// Otherwise (or when a full pass needs step numbers: forced steps, observed writes) the
    /// steps again, ordered for a full pass: by depth (parents before children), then in table
    /// and row order, so a full pass reads the columns nearly in address order (the depth-first
    /// order jumps between rows); `level_step[k]` is `level[k]`'s step. Filled on first use
    /// after a build (`levels_ready`).
    bool levels_ready = false;
    std::pmr::vector<PlanStep> level;
    std::pmr::vector<std::uint32_t> level_step;
    std::pmr::vector<std::uint32_t> depth_start;
    std::pmr::vector<PlanTable> tables;
    std::uint32_t rows = 0;  ///< rows of `tables`
    std::pmr::vector<std::uint32_t> row_step;
    std::pmr::vector<PlanNode> nodes;       ///< by entity index
    std::pmr::vector<std::uint32_t> roots;  ///< entity indices without a first parent
    std::pmr::vector<Frame> stack;
    std::pmr::vector<std::uint64_t> dirty;   ///< a bit per step: compute its subtree
    std::pmr::vector<std::uint32_t> work;    ///< the subtrees an incremental pass computes
    std::pmr::vector<std::uint64_t> forced;  ///< a bit per step: its WorldTransform was just added
    std::pmr::vector<SpareMatrix> spare;     ///< world matrices of entities without WorldTransform
    std::pmr::vector<Entity> missing;        ///< entities given a WorldTransform this call
};

/// A column of `a` as typed values (null when `a` lacks the component).
template <class T>
T* column(const Archetype& a, ComponentId id) noexcept {
    const std::int32_t c = a.column_index(id);
    return c >= 0 ? reinterpret_cast<T*>(a.columns[static_cast<std::uint32_t>(c)].data) : nullptr;
}
/// The column of component `id` in `a`, or null.
inline const Column* column_of(const Archetype& a, ComponentId id) noexcept {
    const std::int32_t c = a.column_index(id);
    return c >= 0 ? &a.columns[static_cast<std::uint32_t>(c)] : nullptr;
}

/// Bit `i` of a bitmap.
inline bool test_bit(const std::uint64_t* bits, std::uint32_t i) noexcept {
    return ((bits[i / 64] >> (i % 64)) & 1u) != 0;
}
/// Sets bit `i` of a bitmap.
inline void set_bit(std::uint64_t* bits, std::uint32_t i) noexcept {
    bits[i / 64] |= std::uint64_t{1} << (i % 64);
}

/// One call of propagate_transforms.
class Propagation {
public:
    Propagation(World& world, TransformState& state)
        : world_(world),
          s_(world.storage()),
          st_(state),
          local_id_(component_id<LocalTransform>()),
          world_id_(component_id<WorldTransform>()),
          targets_id_(component_id<Targets<ChildOf>>()) {}

    /// Runs the call (transform.cpp); returns the number of WorldTransforms written.
    std::size_t run();

private:
    void begin_epoch();

    // ---- phase 0: WorldTransform where missing (transform.cpp) ----

    void add_missing();

    // ---- phase 1: the plan (transform_plan.cpp) ----

    /// `e`'s first ChildOf target, or null (`e` alive).
    Entity first_parent(Entity e) const noexcept;
    /// Whether the plan still describes the world: same tables with the same rows and columns,
    /// no first parent changed.
    bool plan_matches();
    /// Rebuilds the plan from the tables with a LocalTransform and the first-parent hierarchy,
    /// marking dirty the steps that are new or whose nearest ancestor with a step changed (the
    /// others hold a current WorldTransform, or are dirty by their change ticks).
    void build_plan();
    /// Records the tables with a LocalTransform.
    void record_tables();
    /// Builds the child lists in `nodes`: every entity with a LocalTransform under its first
    /// parent, and the parents without one under theirs, up to the roots (in `roots`).
    void link_nodes();
    /// Starts node `n`'s part in this build (keeping what its step was computed from).
    void meet(PlanNode& n, std::uint32_t table, std::uint32_t row) const noexcept;
    /// Puts node `x` in the child list of `p` (its first parent), walking up through parents
    /// without a LocalTransform met for the first time.
    void link(std::uint32_t x, Entity p);
    /// Walks the child lists depth first from every root, appending a step per entity with a
    /// LocalTransform (marking dirty the new ones and those whose base changed).
    void emit_steps();
    /// Fills `level`: the rows in table order, sorted stably by depth (a counting sort).
    void order_levels();

    // ---- phase 2: computing (transform_pass.cpp) ----

    /// Marks the steps of the entities given a WorldTransform this call.
    void mark_forced();
    /// Computes every step; returns the number written.
    std::size_t compute_all();
    /// The full pass over the columns in table and row order.
    std::size_t compute_rows();
    /// The full pass over the level-ordered copy (`level`).
    template <bool General>
    std::size_t compute_levels();
    /// Fetches the matrices step `s` reads and writes.
    static void prefetch(const PlanStep& s) noexcept;
    /// Computes step `s`, number `i`; returns whether it wrote a WorldTransform.
    template <bool General, class Step>
    bool compute(const Step& s, std::uint32_t i);
    /// Marks (in `dirty`) the steps of the rows whose LocalTransform or WorldTransform changed
    /// since the previous call. False when a full pass is cheaper.
    bool collect_dirty();
    /// Computes the subtree of every dirty step not inside an earlier one's, in plan order.
    void run_incremental();
    /// Computes the ranges of the first `count` subtrees listed in `work`.
    template <bool General>
    std::size_t compute_ranges(std::uint32_t count);

    World& world_;
    Storage& s_;
    TransformState& st_;
    const ComponentId local_id_;
    const ComponentId world_id_;
    const ComponentId targets_id_;
    std::uint32_t ep_ = 0;
    std::uint64_t tick_ = 0;
    bool hooked_ = false;
    const std::uint64_t* forced_ = nullptr;  ///< `forced`, when some step is marked in it
    /// Some step may be forced, a spare or observed: computing takes the general path.
    bool general_ = false;
    std::size_t moved_ = 0;  ///< steps the plan's rebuild marked dirty
    std::size_t written_ = 0;
};

}  // namespace tessera::detail

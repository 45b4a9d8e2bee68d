// propagate_transforms: world matrices from the ChildOf hierarchy (transform.hpp).
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
// state.
#include <tessera/transform.hpp>

#include <tessera/detail/storage.hpp>
#include <tessera/query.hpp>
#include <tessera/relation.hpp>
#include <tessera/resource.hpp>
#include <tessera/world.hpp>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <memory_resource>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tessera {
namespace detail {

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

namespace {

/// Whether two matrices hold the same bits (so NaNs compare equal to themselves and an
/// unchanged NaN is not rewritten every call).
inline bool same_bits(const glm::mat4& a, const glm::mat4& b) noexcept {
#if defined(__SSE2__)
    const auto* x = reinterpret_cast<const __m128i*>(&a);
    const auto* y = reinterpret_cast<const __m128i*>(&b);
    const __m128i d =
        _mm_or_si128(_mm_or_si128(_mm_xor_si128(_mm_loadu_si128(x), _mm_loadu_si128(y)),
                                  _mm_xor_si128(_mm_loadu_si128(x + 1), _mm_loadu_si128(y + 1))),
                     _mm_or_si128(_mm_xor_si128(_mm_loadu_si128(x + 2), _mm_loadu_si128(y + 2)),
                                  _mm_xor_si128(_mm_loadu_si128(x + 3), _mm_loadu_si128(y + 3))));
    return _mm_movemask_epi8(_mm_cmpeq_epi8(d, _mm_setzero_si128())) == 0xFFFF;
#else
    std::uint64_t x[8];
    std::uint64_t y[8];
    std::memcpy(x, &a, sizeof x);
    std::memcpy(y, &b, sizeof y);
    std::uint64_t diff = 0;
    for (int i = 0; i < 8; ++i) diff |= x[i] ^ y[i];
    return diff == 0;
#endif
}

/// A 32-bit fingerprint of a matrix's bits (their xor, folded): matrices with different
/// fingerprints differ; equal fingerprints prove nothing.
inline std::uint32_t fingerprint(const glm::mat4& m) noexcept {
#if defined(__SSE2__)
    const auto* x = reinterpret_cast<const __m128i*>(&m);
    __m128i a = _mm_xor_si128(_mm_xor_si128(_mm_loadu_si128(x), _mm_loadu_si128(x + 1)),
                              _mm_xor_si128(_mm_loadu_si128(x + 2), _mm_loadu_si128(x + 3)));
    a = _mm_xor_si128(a, _mm_shuffle_epi32(a, 0x4E));
    a = _mm_xor_si128(a, _mm_shuffle_epi32(a, 0xB1));
    return static_cast<std::uint32_t>(_mm_cvtsi128_si32(a));
#else
    std::uint32_t v[16];
    std::memcpy(v, &m, sizeof v);
    std::uint32_t h = 0;
    for (const std::uint32_t x : v) h ^= x;
    return h;
#endif
}

/// Bit r set when `t[r]` is after `since`, for the `n` (at most 16) ticks at `t`. `since - t`
/// has its top bit set exactly when t > since (ticks stay far below 2^63).
inline std::uint32_t newer_mask(const std::uint64_t* t, std::uint32_t n,
                                std::uint64_t since) noexcept {
    std::uint32_t mask = 0;
#if defined(__SSE2__)
    if (n == 16) {
        const __m128i s = _mm_set1_epi64x(static_cast<long long>(since));
        for (int k = 0; k < 16; k += 2) {
            const __m128i d =
                _mm_sub_epi64(s, _mm_loadu_si128(reinterpret_cast<const __m128i*>(t + k)));
            mask |= static_cast<std::uint32_t>(_mm_movemask_pd(_mm_castsi128_pd(d))) << k;
        }
        return mask;
    }
#endif
    for (std::uint32_t r = 0; r < n; ++r) mask |= static_cast<std::uint32_t>(t[r] > since) << r;
    return mask;
}

/// A column of `a` as typed values (null when `a` lacks the component).
template <class T>
T* column(const Archetype& a, ComponentId id) noexcept {
    const std::int32_t c = a.slot(id);
    return c >= 0 ? reinterpret_cast<T*>(a.columns[static_cast<std::uint32_t>(c)].data) : nullptr;
}
const Column* column_of(const Archetype& a, ComponentId id) noexcept {
    const std::int32_t c = a.slot(id);
    return c >= 0 ? &a.columns[static_cast<std::uint32_t>(c)] : nullptr;
}

bool test_bit(const std::uint64_t* bits, std::uint32_t i) noexcept {
    return ((bits[i / 64] >> (i % 64)) & 1u) != 0;
}
void set_bit(std::uint64_t* bits, std::uint32_t i) noexcept {
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

    std::size_t run() {
        begin_epoch();
        add_missing();
        // Nothing below moves a row: observers of WorldTransform writes get their structural
        // changes queued until the end.
        DeferScope defer(s_);
        observed_ = s_.observes(world_id_);
        tick_ = s_.tick();
        // After an exception the plan may have been rebuilt (forgetting what moved) without
        // computing those steps, and after a whole-world swap (restore, load) entities may hold
        // anything: everything is computed then.
        const bool resumed = !std::exchange(st_.complete, false) || st_.layout != s_.layout_epoch();
        if (plan_matches()) {
            std::fill(st_.dirty.begin(), st_.dirty.end(), 0);
            moved_ = 0;
        } else {
            build_plan();  // marks the steps whose parent changed
        }
        mark_forced();
        general_ = forced_ != nullptr || observed_ || !st_.spare.empty();
        if (resumed || !st_.primed || st_.mode == PropagationMode::full || !collect_dirty())
            written_ = compute_all();
        else
            run_incremental();
        clear_hierarchy_changes(s_);
        st_.since = s_.tick();
        s_.advance_tick();
        st_.primed = true;
        st_.complete = true;
        defer.close();
        return written_;
    }

private:
    void begin_epoch() {
        if (st_.epoch == std::numeric_limits<std::uint32_t>::max()) {
            for (PlanNode& node : st_.nodes) node.seen = 0;
            st_.epoch = 0;
        }
        ep_ = ++st_.epoch;
    }

    /// `e`'s first ChildOf target, or null (`e` alive).
    Entity first_parent(Entity e) const noexcept {
        const EntityRecord& r = *s_.record(e);
        const auto* t = column<Targets<ChildOf>>(s_.archetype(r.archetype), targets_id_);
        return t == nullptr || t[r.row].empty() ? Entity::null() : t[r.row].front();
    }

    // ---- phase 0: WorldTransform where missing ----

    void add_missing() {
        st_.missing.clear();
        for (const std::uint32_t index : st_.local_without_world.update()) {
            const Archetype& a = s_.archetype(index);
            st_.missing.insert(st_.missing.end(), a.entities, a.entities + a.size);
        }
        for (const Entity e : st_.missing) {
            // An observer of an earlier add may have changed the entity meanwhile.
            if (!world_.is_alive(e) || world_.has<WorldTransform>(e)) continue;
            world_.add(e, WorldTransform{});
        }
    }

    // ---- phase 1: the plan ----

    /// Whether the plan still describes the world: same tables with the same rows and columns,
    /// no first parent changed.
    bool plan_matches() {
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
    void build_plan() {
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
    void record_tables() {
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
    void link_nodes() {
        std::pmr::vector<PlanNode>& nodes = st_.nodes;
        for (std::uint32_t k = 0; k < st_.tables.size(); ++k) {
            const PlanTable& t = st_.tables[k];
            for (std::uint32_t row = 0; row < t.size; ++row)
                meet(nodes[t.entities[row].index], k, row);
        }
        // Backwards, so that the lists (filled at their heads) hold children in table order.
        st_.roots.clear();
        for (std::uint32_t k = static_cast<std::uint32_t>(st_.tables.size()); k-- > 0;) {
            const PlanTable& t = st_.tables[k];
            const auto* targets = column<Targets<ChildOf>>(s_.archetype(t.index), targets_id_);
            for (std::uint32_t row = t.size; row-- > 0;) {
                const Entity p = targets != nullptr && !targets[row].empty() ? targets[row].front()
                                                                             : Entity::null();
                link(t.entities[row].index, p);
            }
        }
    }

    /// Starts node `n`'s part in this build (keeping what its step was computed from).
    void meet(PlanNode& n, std::uint32_t table, std::uint32_t row) const noexcept {
        n.seen = ep_;
        n.first_child = n.next = none;
        n.table = table;
        n.row = row;
    }

    /// Puts node `x` in the child list of `p` (its first parent), walking up through parents
    /// without a LocalTransform met for the first time.
    void link(std::uint32_t x, Entity p) {
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
    void emit_steps() {
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
    void order_levels() {
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

    // ---- phase 2: computing ----

    /// Marks the steps of the entities given a WorldTransform this call (they moved table, so
    /// the plan was rebuilt): written and counted whatever they hold.
    void mark_forced() {
        for (const Entity e : st_.missing) {
            if (!world_.is_alive(e) || !world_.has<WorldTransform>(e)) continue;
            const PlanNode& node = st_.nodes[e.index];
            if (node.seen != ep_ || node.table == none) continue;
            if (forced_ == nullptr) std::fill(st_.forced.begin(), st_.forced.end(), 0);
            forced_ = st_.forced.data();
            set_bit(st_.forced.data(), st_.row_step[st_.tables[node.table].first + node.row]);
        }
    }

    /// Computes every step: in table and row order when that puts parents first (reading the
    /// columns as they lie, like a plain loop over arrays), else in level order.
    std::size_t compute_all() {
        std::size_t written = 0;
        if (st_.row_ordered && !general_) {
            written = compute_rows();
        } else {
            st_.fingerprinted = false;
            order_levels();
            written = general_ ? compute_levels<true>() : compute_levels<false>();
        }
        if (written != 0 && !observed_) {
            // A full pass writes most rows: raise every block bound rather than one per write.
            for (const PlanTable& t : st_.tables) {
                for (std::size_t b = 0; t.changed_max != nullptr && b < tick_blocks(t.size); ++b)
                    raise_bound(t.changed_max[b], tick_);
            }
        }
        return written;
    }

    /// The full pass over the columns in table and row order (`row_ordered`, plain steps). A
    /// matrix whose fingerprint differs from the stored one is written without reading the
    /// old value (when the stored one is valid and nobody else wrote the row since); the others
    /// are compared in full.
    std::size_t compute_rows() {
        const bool valid = std::exchange(st_.fingerprinted, false);
        const std::uint64_t since = st_.since;
        const glm::mat4* const* parent = st_.row_parent.data();
        std::uint32_t* fp = st_.row_fingerprint.data();
        std::size_t written = 0;
        for (const PlanTable& t : st_.tables) {
            if (t.size == 0) continue;  // (an empty table may lack a WorldTransform)
            const bool trusted =
                valid && column_of(s_.archetype(t.index), world_id_)->stamped <= since;
            for (std::uint32_t row = 0; row < t.size; ++row) {
                glm::mat4& world = *std::assume_aligned<64>(&t.world[row].matrix);
                const glm::mat4& local = *std::assume_aligned<64>(&t.local[row].matrix);
                const glm::mat4* const p = parent[row];
                const glm::mat4 m = p == nullptr ? local : *std::assume_aligned<64>(p) * local;
                const std::uint32_t h = fingerprint(m);
                const bool differs = trusted && fp[row] != h && t.changed[row] <= since;
                fp[row] = h;
                if (!differs && same_bits(world, m)) continue;
                world = m;
                t.changed[row] = tick_;
                ++written;
            }
            parent += t.size;
            fp += t.size;
        }
        st_.fingerprinted = true;
        return written;
    }

    /// The full pass over the level-ordered copy (`level`).
    template <bool General>
    std::size_t compute_levels() {
        const PlanStep* const steps = st_.level.data();
        const std::uint32_t* const index = st_.level_step.data();
        const auto count = static_cast<std::uint32_t>(st_.level.size());
        std::size_t written = 0;
        for (std::uint32_t k = 0; k < count; ++k) {
            if (k + prefetch_distance < count) prefetch(steps[k + prefetch_distance]);
            written += compute<General>(steps[k], index[k]) ? 1 : 0;
        }
        return written;
    }

    /// Fetches the matrices step `s` reads and writes. (Its changed tick is only written, and
    /// neighbouring steps share the lines of ticks and bounds.)
    static void prefetch(const PlanStep& s) noexcept {
        __builtin_prefetch(s.local);
        __builtin_prefetch(s.world, 1);
    }

    /// Computes step `s`, number `i` (its parent's world matrix is computed or current); returns
    /// whether it wrote a WorldTransform. A TreeStep's write raises its block bound. `General`:
    /// the step may be forced, a spare, or observed (`general_`); else it is none of them.
    /// Every matrix a step points to is 64-byte aligned (a column row or a SpareMatrix).
    template <bool General, class Step>
    bool compute(const Step& s, std::uint32_t i) {
        const glm::mat4& local = *std::assume_aligned<64>(s.local);
        glm::mat4& world = *std::assume_aligned<64>(s.world);
        const glm::mat4 m =
            s.parent == nullptr ? local : *std::assume_aligned<64>(s.parent) * local;
        if constexpr (General) {
            if (same_bits(world, m) && (forced_ == nullptr || !test_bit(forced_, i))) return false;
            if (s.changed == nullptr) {
                world = m;  // a spare: its WorldTransform is yet to be added
                return false;
            }
            if (observed_) {
                world_.set(st_.step_entity[i], WorldTransform{m});  // fires on_set
                return true;
            }
        } else if (same_bits(world, m)) {
            return false;
        }
        world = m;
        *s.changed = tick_;
        if constexpr (std::is_same_v<Step, TreeStep>) raise_bound(*s.bound, tick_);
        return true;
    }

    /// Marks (in `dirty`) the steps of the rows whose LocalTransform or WorldTransform changed
    /// since the previous call. False when the dirty steps are so many that a full pass is
    /// cheaper.
    bool collect_dirty() {
        const std::size_t limit = st_.mode == PropagationMode::incremental
                                      ? std::numeric_limits<std::size_t>::max()
                                      : st_.steps.size() / 8;
        const std::uint64_t since = st_.since;
        std::uint64_t* const bits = st_.dirty.data();
        std::size_t dirty = moved_;
        if (dirty > limit) return false;
        for (const PlanTable& t : st_.tables) {
            const std::uint32_t n = t.size;
            if (n == 0) continue;
            const Archetype& a = s_.archetype(t.index);
            const Column& lcol = *column_of(a, local_id_);
            const Column* wcol = column_of(a, world_id_);
            const std::uint32_t* const row_step = st_.row_step.data() + t.first;
            if (lcol.stamped > since || (wcol != nullptr && wcol->stamped > since)) {
                // A query's T& term stamped the whole table.
                dirty += n;
                if (dirty > limit) return false;
                for (std::uint32_t row = 0; row < n; ++row) set_bit(bits, row_step[row]);
                continue;
            }
            // Rows are read only in the blocks whose bound (Column::changed_max) is new, and
            // the bounds 16 blocks at a time.
            const std::uint64_t* const lt = lcol.changed;
            const std::uint64_t* const wt = wcol != nullptr ? wcol->changed : lt;
            const std::uint64_t* const lb = lcol.changed_max;
            const std::uint64_t* const wb = wcol != nullptr ? wcol->changed_max : lb;
            // Marks the dirty rows of block b (`local`, `world`: which bounds are new).
            auto mark = [&](std::size_t b, bool local, bool world) {
                const auto first = static_cast<std::uint32_t>(b * tick_block);
                const std::uint32_t rows = std::min<std::uint32_t>(n - first, tick_block);
                std::uint32_t m = 0;
                if (local) m = newer_mask(lt + first, rows, since);
                if (world) m |= newer_mask(wt + first, rows, since);
                for (; m != 0; m &= m - 1, ++dirty)
                    set_bit(bits,
                            row_step[first + static_cast<std::uint32_t>(std::countr_zero(m))]);
                return dirty <= limit;
            };
            const std::size_t blocks = tick_blocks(n);
            for (std::size_t b = 0; b < blocks; b += 16) {
                const auto group =
                    static_cast<std::uint32_t>(std::min<std::size_t>(16, blocks - b));
                const std::uint32_t lm = newer_mask(lb + b, group, since);
                const std::uint32_t wm = newer_mask(wb + b, group, since);
                for (std::uint32_t m = lm | wm; m != 0; m &= m - 1) {
                    const auto j = static_cast<std::uint32_t>(std::countr_zero(m));
                    if (!mark(b + j, ((lm >> j) & 1u) != 0, ((wm >> j) & 1u) != 0)) return false;
                }
            }
        }
        return true;
    }

    /// Computes the subtree of every dirty step not inside an earlier one's, in plan order:
    /// lists the first step of each in `work`, then computes their ranges in one loop that
    /// fetches ahead across subtrees (most of them are a step or two).
    void run_incremental() {
        const std::uint64_t* const bits = st_.dirty.data();
        const std::uint32_t* const step_end = st_.step_end.data();
        std::uint32_t* const work = st_.work.data();
        std::uint32_t count = 0;
        std::uint32_t covered = 0;  // steps below this are in a listed subtree
        for (std::size_t w = 0; w < st_.dirty.size(); ++w) {
            for (std::uint64_t b = bits[w]; b != 0; b &= b - 1) {
                const auto i = static_cast<std::uint32_t>(w * 64 + std::countr_zero(b));
                if (i < covered) continue;
                work[count++] = i;
                covered = step_end[i];
            }
        }
        if (count == 0) return;
        st_.fingerprinted = false;
        written_ += general_ ? compute_ranges<true>(count) : compute_ranges<false>(count);
    }

    /// Computes the ranges of the first `count` subtrees listed in `work`.
    template <bool General>
    std::size_t compute_ranges(std::uint32_t count) {
        const std::uint32_t* const work = st_.work.data();
        const std::uint32_t* const step_end = st_.step_end.data();
        const TreeStep* const steps = st_.steps.data();
        // A cursor `prefetch_distance` steps ahead: step `ahead` of subtree `next`.
        std::uint32_t next = 0;
        std::uint32_t ahead = work[0];
        auto advance = [&] {
            if (next == count) return;
            prefetch(steps[ahead]);
            if (++ahead == step_end[work[next]] && ++next < count) ahead = work[next];
        };
        for (std::uint32_t d = 0; d < prefetch_distance; ++d) advance();
        std::size_t written = 0;
        for (std::uint32_t r = 0; r < count; ++r) {
            for (std::uint32_t i = work[r], end = step_end[i]; i < end; ++i) {
                advance();
                written += compute<General>(steps[i], i) ? 1 : 0;
            }
        }
        return written;
    }

    World& world_;
    Storage& s_;
    TransformState& st_;
    const ComponentId local_id_;
    const ComponentId world_id_;
    const ComponentId targets_id_;
    std::uint32_t ep_ = 0;
    std::uint64_t tick_ = 0;
    bool observed_ = false;
    const std::uint64_t* forced_ = nullptr;  ///< `forced`, when some step is marked in it
    /// Some step may be forced, a spare or observed: computing takes the general path.
    bool general_ = false;
    std::size_t moved_ = 0;  ///< steps the plan's rebuild marked dirty
    std::size_t written_ = 0;
};

/// The world's state, made (with change tracking and the hierarchy log turned on) on first use.
TransformState& transform_state(World& world) {
    if (TransformState* st = world.try_resource<TransformState>()) return *st;
    Storage& s = world.storage();
    s.ensure_component(component_id<LocalTransform>());
    s.ensure_component(component_id<WorldTransform>());
    s.track(component_id<LocalTransform>());
    s.track(component_id<WorldTransform>());
    track_hierarchy(s);
    return world.insert_resource(TransformState(s));
}

}  // namespace
}  // namespace detail

void detail::set_propagation_mode(World& world, PropagationMode mode) {
    detail::transform_state(world).mode = mode;
}

std::size_t propagate_transforms(World& world) {
    detail::TransformState& state = detail::transform_state(world);
    return detail::Propagation(world, state).run();
}

}  // namespace tessera

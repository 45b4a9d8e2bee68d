// propagate_transforms: world matrices from the ChildOf hierarchy (transform.hpp).
//
// Per-world state (a hidden resource, `TransformState`): the tick of the previous call, three
// cached archetype matches, and three arrays indexed by entity index:
//   - `TransformSlot` (16 bytes, what the full pass touches): the address of the entity's world
//     matrix in this call (its WorldTransform value, its parent's for a pass-through entity, null
//     for the identity) and the epoch (call number) it was set in;
//   - `TransformMark`: this call's flags (dirty, forced, clean, covered), also epoch-stamped, so
//     nothing is cleared between calls;
//   - `TransformLink`: the transform tree (first-parent links as intrusive doubly linked child
//     lists), which the incremental pass walks instead of looking up `world.children` and every
//     child's first parent. The links are kept up to date by incremental calls (from the
//     hierarchy log); a full call leaves them stale and the next incremental call rebuilds them.
//
// A call: (0) adds the missing WorldTransforms; (1) unless it is the first call, collects the
// dirty entities from the change ticks of LocalTransform and WorldTransform, the hierarchy log
// and the entities that lost their LocalTransform; (2) either recomputes the subtrees of the
// topmost dirty entities (incremental) or every entity (full: first call, or many dirty);
// (3) records the tick and advances it. Every walk up or down the hierarchy uses an explicit
// stack kept in the state.
#include <tessera/transform.hpp>

#include <tessera/detail/storage.hpp>
#include <tessera/query.hpp>
#include <tessera/relation.hpp>
#include <tessera/resource.hpp>
#include <tessera/world.hpp>

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory_resource>
#include <span>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tessera {
namespace detail {

/// What propagate_transforms knows of one entity index: what the full pass reads and writes
/// (16 bytes, so a parent's is one load).
struct TransformSlot {
    const glm::mat4* world = nullptr;  ///< valid when `done` is this call's epoch; null = identity
    std::uint32_t done = 0;            ///< epoch in which `world` was set
    std::uint32_t had_local = 0;       ///< had a LocalTransform when last computed (any call)
};

/// The marks of one entity index for the current call (the incremental pass's, and `force`).
struct TransformMark {
    std::uint32_t mark = 0;   ///< epoch in which `flags` were set (else they are 0)
    std::uint32_t flags = 0;  ///< TransformFlag bits
};

inline constexpr std::uint32_t no_link = 0xFFFFFFFFu;

/// The transform tree at one entity index: `owner` in the child list of its first parent.
/// Invariant (for incremental calls): a linked entity's parent chain is linked up to a root,
/// and `parent` is the index of its first ChildOf target.
struct TransformLink {
    Entity owner{};                  ///< the entity these links belong to
    std::uint32_t parent = no_link;  ///< index of its first parent, while in its child list
    std::uint32_t first_child = no_link;
    std::uint32_t next = no_link;  ///< sibling links in the parent's child list
    std::uint32_t prev = no_link;
    std::uint32_t linked = 0;  ///< in its first parent's list (or a root)
};

enum TransformFlag : std::uint8_t {
    dirty_flag = 1,  ///< needs recomputing, with its subtree
    force_flag = 2,  ///< its WorldTransform was just added: write (and count) it whatever it holds
    covered_flag = 4,  ///< below a dirty entity: computed by that one's traversal
    clean_flag = 8,    ///< no dirty ancestor and not dirty: `world` is its current matrix
};

/// The per-world state: a resource of this (internal) type.
struct TransformState {
    explicit TransformState(Storage& s)
        : with_local(s),
          world_without_local(s),
          local_without_world(s),
          slots(s.resource()),
          marks(s.resource()),
          links(s.resource()),
          dirty(s.resource()),
          path(s.resource()),
          work(s.resource()),
          missing(s.resource()),
          spare(s.resource()) {
        with_local.spec.all = {component_id<LocalTransform>()};
        world_without_local.spec.all = {component_id<WorldTransform>()};
        world_without_local.spec.none = {component_id<LocalTransform>()};
        local_without_world.spec.all = {component_id<LocalTransform>()};
        local_without_world.spec.none = {component_id<WorldTransform>()};
    }

    bool primed = false;  ///< a call has completed
    PropagationMode mode = PropagationMode::automatic;
    std::uint64_t since = 0;   ///< the tick at the end of the previous call
    std::uint32_t epoch = 0;   ///< this call's number (0 is never a valid epoch)
    bool links_valid = false;  ///< `links` match the hierarchy (false after a full call)
    QueryState with_local;
    QueryState world_without_local;
    QueryState local_without_world;
    std::pmr::vector<TransformSlot> slots;  ///< by entity index
    std::pmr::vector<TransformMark> marks;  ///< by entity index, as many as slots
    std::pmr::vector<TransformLink> links;  ///< by entity index, as many as slots
    std::pmr::vector<Entity> dirty;         ///< the dirty entities of this call
    std::pmr::vector<Entity> path;          ///< walks up the hierarchy
    std::pmr::vector<std::uint32_t> work;   ///< walks down the hierarchy (entity indices)
    std::pmr::vector<Entity> missing;       ///< entities given a WorldTransform this call
    std::pmr::vector<glm::mat4> spare;      ///< world matrices of entities without WorldTransform
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

inline glm::mat4 times(const glm::mat4* parent, const glm::mat4& local) noexcept {
    return parent == nullptr ? local : *parent * local;
}

/// A column of `a` as typed values.
template <class T>
T* column(const Archetype& a, std::int32_t c) noexcept {
    return reinterpret_cast<T*>(a.columns[static_cast<std::uint32_t>(c)].data);
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
        const bool incremental = st_.primed && st_.mode != PropagationMode::full && collect_dirty();
        // Nothing below moves a row: observers of WorldTransform writes get their structural
        // changes queued until the end.
        DeferScope defer(s_);
        observed_ = s_.observes(world_id_);
        tick_ = s_.tick();
        reserve_spare();
        if (incremental) {
            update_links();
            run_incremental();
        } else {
            run_full();
            st_.links_valid = false;  // not maintained by full calls
        }
        clear_hierarchy_changes(s_);
        st_.since = s_.tick();
        s_.advance_tick();
        st_.primed = true;
        defer.close();
        return written_;
    }

private:
    // ---- slots ----

    void begin_epoch() {
        if (st_.epoch == std::numeric_limits<std::uint32_t>::max()) {
            for (TransformSlot& t : st_.slots) t.done = 0;
            for (TransformMark& m : st_.marks) m.mark = 0;
            st_.epoch = 0;
        }
        ep_ = ++st_.epoch;
    }

    /// Makes `slots[index]` exist. Invalidates references to slots when it grows.
    void fit(std::uint32_t index) {
        if (index >= st_.slots.size()) [[unlikely]]
            grow(index);
    }
    [[gnu::noinline]] void grow(std::uint32_t index) {
        const std::size_t want =
            std::max<std::size_t>(index + std::size_t{1}, st_.slots.size() * 2);
        // All or none: reserve everything first, so the resizes can't fail.
        st_.marks.reserve(want);
        st_.links.reserve(want);
        st_.slots.resize(want);
        st_.marks.resize(want);
        st_.links.resize(want);
    }
    TransformSlot& slot(std::uint32_t index) noexcept { return st_.slots[index]; }

    /// The flags of `index` (fitted) in this call.
    std::uint32_t flags(std::uint32_t index) const noexcept {
        const TransformMark& m = st_.marks[index];
        return m.mark == ep_ ? m.flags : 0;
    }
    void set_flag(std::uint32_t index, std::uint32_t f) noexcept {
        TransformMark& m = st_.marks[index];
        if (m.mark != ep_) {
            m.mark = ep_;
            m.flags = 0;
        }
        m.flags |= f;
    }

    bool forced(std::uint32_t index) const noexcept {
        return any_forced_ && (flags(index) & force_flag) != 0;
    }

    // ---- lookups ----

    /// `e`'s first ChildOf target, or null (`e` alive).
    Entity first_parent(const EntityRecord& r) const noexcept {
        const Archetype& a = s_.archetype(r.archetype);
        const std::int32_t tc = a.slot(targets_id_);
        if (tc < 0) return Entity::null();
        const Targets<ChildOf>& t = column<Targets<ChildOf>>(a, tc)[r.row];
        return t.empty() ? Entity::null() : t.front();
    }
    Entity first_parent(Entity e) const noexcept {
        const EntityRecord* r = s_.record(e);
        return r == nullptr ? Entity::null() : first_parent(*r);
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
            fit(e.index);
            set_flag(e.index, force_flag);
            any_forced_ = true;
        }
    }

    /// Room for the world matrices of entities with a LocalTransform but no WorldTransform (the
    /// additions were queued: the world is iterating), so pointers into `spare` stay valid.
    void reserve_spare() {
        std::size_t n = 0;
        for (const std::uint32_t index : st_.local_without_world.update())
            n += s_.archetype(index).size;
        st_.spare.clear();
        st_.spare.reserve(n);
    }
    const glm::mat4* keep_spare(const glm::mat4& m) {
        // reserve_spare counted every entity that can land here, so this never reallocates.
        assert(st_.spare.size() < st_.spare.capacity());
        st_.spare.push_back(m);
        return &st_.spare.back();
    }

    // ---- computing one entity ----

    /// Writes `m` to the WorldTransform at `row` of column `wc` when its bits differ (or when
    /// `force`), stamping the changed tick like World::set.
    void write(Entity e, const Archetype& a, std::uint32_t row, std::int32_t wc, const glm::mat4& m,
               bool force) {
        WorldTransform& w = column<WorldTransform>(a, wc)[row];
        if (!force && same_bits(w.matrix, m)) return;
        ++written_;
        if (observed_) [[unlikely]] {
            world_.set(e, WorldTransform{m});  // fires on_set (changes queued by our scope)
            return;
        }
        w.matrix = m;
        Storage::stamp_changed(a, row, wc, tick_);
    }

    /// The columns of the table last computed in (entities of one subtree mostly share it).
    struct TableView {
        std::uint32_t index = no_index;
        const LocalTransform* local = nullptr;  ///< null: no LocalTransform (pass-through)
        WorldTransform* world = nullptr;        ///< null: no WorldTransform (addition queued)
        std::uint64_t* ticks = nullptr;         ///< WorldTransform's changed ticks
        const Archetype* archetype = nullptr;
        std::int32_t world_column = -1;
    };

    const TableView& view_of(std::uint32_t index) noexcept {
        if (view_.index == index) [[likely]]
            return view_;
        const Archetype& a = s_.archetype(index);
        const std::int32_t lc = a.slot(local_id_);
        const std::int32_t wc = a.slot(world_id_);
        view_.index = index;
        view_.archetype = &a;
        view_.world_column = wc;
        view_.local = lc >= 0 ? column<LocalTransform>(a, lc) : nullptr;
        view_.world = wc >= 0 && lc >= 0 ? column<WorldTransform>(a, wc) : nullptr;
        view_.ticks =
            view_.world != nullptr ? a.columns[static_cast<std::uint32_t>(wc)].changed : nullptr;
        return view_;
    }

    /// Computes `e` (alive, at `r`) from its parent's world matrix `parent` (null = identity):
    /// writes its WorldTransform when it has a LocalTransform, and returns its world matrix.
    const glm::mat4* compute(Entity e, const EntityRecord& r, const glm::mat4* parent) {
        const TableView& v = view_of(r.archetype);
        fit(e.index);
        TransformSlot& t = slot(e.index);
        t.done = ep_;
        if (v.local == nullptr) {
            t.had_local = 0;
            t.world = parent;  // a pass-through: identity local matrix
            return parent;
        }
        t.had_local = 1;
        const std::uint32_t row = r.row;
        const glm::mat4 m = times(parent, v.local[row].matrix);
        if (v.world == nullptr) [[unlikely]] {
            t.world = keep_spare(m);
            return t.world;
        }
        glm::mat4& w = v.world[row].matrix;
        t.world = &w;
        if (same_bits(w, m) && !forced(e.index)) return t.world;
        ++written_;
        if (observed_) [[unlikely]] {
            world_.set(e, WorldTransform{m});  // fires on_set (changes queued by our scope)
        } else {
            w = m;
            if (v.ticks != nullptr) v.ticks[row] = tick_;
        }
        return t.world;
    }

    // ---- full ----

    /// Computes the not-yet-computed ancestors of the entity whose first parent is `p`, from the
    /// top down; returns `p`'s world matrix.
    const glm::mat4* compute_ancestors(Entity p) {
        st_.path.clear();
        const glm::mat4* base = nullptr;
        for (Entity x = p;;) {
            st_.path.push_back(x);
            const Entity q = first_parent(x);
            if (!q) break;
            fit(q.index);
            const TransformSlot& t = slot(q.index);
            if (t.done == ep_) {
                base = t.world;
                break;
            }
            x = q;
        }
        for (std::size_t i = st_.path.size(); i-- > 0;) {
            const Entity x = st_.path[i];
            base = compute(x, *s_.record(x), base);
        }
        return base;
    }

    /// The full pass over one table with a LocalTransform: each row from its parent's matrix
    /// (computed earlier in the pass, or now with its ancestors).
    void full_table(const Archetype& a) {
        const std::int32_t wc = a.slot(world_id_);
        const std::int32_t tc = a.slot(targets_id_);
        const LocalTransform* const local = column<LocalTransform>(a, a.slot(local_id_));
        const Targets<ChildOf>* const targets = tc >= 0 ? column<Targets<ChildOf>>(a, tc) : nullptr;
        WorldTransform* const world = wc >= 0 ? column<WorldTransform>(a, wc) : nullptr;
        std::uint64_t* const ticks =
            wc >= 0 ? a.columns[static_cast<std::uint32_t>(wc)].changed : nullptr;
        const Entity* const entities = a.entities;
        const std::uint32_t n = a.size;
        const std::uint32_t ep = ep_;
        const std::uint64_t tick = tick_;
        // Locals, so the compiler keeps them in registers (the slow paths refresh them).
        TransformSlot* slots = st_.slots.data();
        std::size_t fitted = st_.slots.size();
        std::size_t written = 0;
        for (std::uint32_t row = 0; row < n; ++row) {
            const Entity e = entities[row];
            if (e.index >= fitted) [[unlikely]] {
                fit(e.index);
                slots = st_.slots.data();
                fitted = st_.slots.size();
            }
            if (slots[e.index].done == ep) continue;  // computed as someone's ancestor
            const glm::mat4* parent = nullptr;
            if (targets != nullptr) {
                const Entity p = targets[row].front();
                if (p.index < fitted && slots[p.index].done == ep) [[likely]] {
                    parent = slots[p.index].world;
                } else {
                    parent = compute_ancestors(p);
                    slots = st_.slots.data();
                    fitted = st_.slots.size();
                }
            }
            const glm::mat4 m = times(parent, local[row].matrix);
            TransformSlot& t = slots[e.index];
            t.done = ep;
            t.had_local = 1;
            if (world == nullptr) [[unlikely]] {
                t.world = keep_spare(m);
                continue;
            }
            t.world = &world[row].matrix;
            if (same_bits(world[row].matrix, m) && !forced(e.index)) continue;
            if (observed_) [[unlikely]] {
                write(e, a, row, wc, m, true);
                continue;
            }
            world[row].matrix = m;
            if (ticks != nullptr) ticks[row] = tick;
            ++written;
        }
        written_ += written;
    }

    void run_full() {
        for (const std::uint32_t index : st_.with_local.update()) {
            const Archetype& a = s_.archetype(index);
            if (a.size != 0) full_table(a);
        }
        // Entities that lost their LocalTransform were computed (as pass-through) if anything
        // below them has one; either way they are no longer "had a local".
        for (const std::uint32_t index : st_.world_without_local.update()) {
            const Archetype& a = s_.archetype(index);
            for (std::uint32_t row = 0; row < a.size; ++row) {
                const Entity e = a.entities[row];
                if (e.index < st_.slots.size()) slot(e.index).had_local = 0;
            }
        }
    }

    // ---- incremental ----

    /// Collects this call's dirty entities into `dirty` (duplicates possible). False when there
    /// are so many that a full pass is cheaper.
    bool collect_dirty() {
        st_.dirty.clear();
        const std::span<const std::uint32_t> tables = st_.with_local.update();
        std::size_t locals = 0;
        for (const std::uint32_t index : tables) locals += s_.archetype(index).size;
        const std::size_t limit = st_.mode == PropagationMode::incremental
                                      ? std::numeric_limits<std::size_t>::max()
                                      : locals / 8;
        const std::uint64_t since = st_.since;
        std::pmr::vector<Entity>& dirty = st_.dirty;
        for (const std::uint32_t index : tables) {
            const Archetype& a = s_.archetype(index);
            const std::uint32_t n = a.size;
            if (n == 0) continue;
            const std::int32_t wc = a.slot(world_id_);
            const Column& lcol = a.columns[static_cast<std::uint32_t>(a.slot(local_id_))];
            const Column* wcol = wc >= 0 ? &a.columns[static_cast<std::uint32_t>(wc)] : nullptr;
            if (lcol.stamped > since || (wcol != nullptr && wcol->stamped > since)) {
                // A query's T& term stamped the whole table.
                if (dirty.size() + n > limit) return false;
                dirty.insert(dirty.end(), a.entities, a.entities + n);
                continue;
            }
            const std::uint64_t* const lt = lcol.changed;
            const std::uint64_t* const wt = wcol != nullptr ? wcol->changed : lt;
            for (std::uint32_t first = 0; first < n; first += 16) {
                const std::uint32_t last = std::min(n, first + 16);
                // `since - t` has its top bit set exactly when t > since (ticks stay far below
                // 2^63): a branch-free OR over the block, which the compiler vectorises.
                std::uint64_t any = 0;
                for (std::uint32_t row = first; row < last; ++row)
                    any |= (since - lt[row]) | (since - wt[row]);
                if ((any >> 63) == 0) continue;
                for (std::uint32_t row = first; row < last; ++row) {
                    if (lt[row] > since || wt[row] > since) {
                        if (dirty.size() == limit) return false;
                        dirty.push_back(a.entities[row]);
                    }
                }
            }
        }
        // Entities that lost their LocalTransform: their children's parent matrix changed.
        for (const std::uint32_t index : st_.world_without_local.update()) {
            const Archetype& a = s_.archetype(index);
            for (std::uint32_t row = 0; row < a.size; ++row) {
                const Entity e = a.entities[row];
                if (e.index < st_.slots.size() && slot(e.index).had_local != 0) {
                    if (dirty.size() >= limit) return false;
                    dirty.push_back(e);
                }
            }
        }
        // Entities whose first parent may have changed (all of them, if the log overflowed).
        if (hierarchy_overflowed(s_)) return false;
        for (const Entity e : hierarchy_changes(s_)) {
            if (dirty.size() >= limit) return false;
            if (s_.record(e) != nullptr) dirty.push_back(e);
        }
        for (const Entity e : dirty) {
            fit(e.index);
            set_flag(e.index, dirty_flag);
        }
        return true;
    }

    // ---- the transform tree ----

    /// Makes index `x.index` hold `x`'s links. A new owner starts unlinked: the index leaves
    /// the child list it was in, and the children listed under it (of a dead entity) are
    /// detached. May grow the arrays (invalidating references into them).
    void claim(Entity x) {
        fit(x.index);
        if (st_.links[x.index].owner == x) return;
        detach(x.index);
        std::pmr::vector<TransformLink>& links = st_.links;
        for (std::uint32_t c = links[x.index].first_child; c != no_link;) {
            const std::uint32_t next = links[c].next;
            links[c].parent = links[c].next = links[c].prev = no_link;
            links[c].linked = 0;
            c = next;
        }
        links[x.index] = TransformLink{};
        links[x.index].owner = x;
    }

    /// Takes index `i` out of its parent's child list (unlinked).
    void detach(std::uint32_t i) noexcept {
        std::pmr::vector<TransformLink>& links = st_.links;
        TransformLink& l = links[i];
        if (l.parent != no_link) {
            if (l.prev != no_link)
                links[l.prev].next = l.next;
            else
                links[l.parent].first_child = l.next;
            if (l.next != no_link) links[l.next].prev = l.prev;
        }
        l.parent = l.next = l.prev = no_link;
        l.linked = 0;
    }

    /// Puts index `i` (detached) at the head of `p`'s child list.
    void attach(std::uint32_t i, std::uint32_t p) noexcept {
        std::pmr::vector<TransformLink>& links = st_.links;
        TransformLink& l = links[i];
        l.parent = p;
        l.prev = no_link;
        l.next = links[p].first_child;
        if (l.next != no_link) links[l.next].prev = i;
        links[p].first_child = i;
        l.linked = 1;
    }

    /// Links `x` (alive) under its first parent, and the parent chain up to a linked entity.
    void ensure_linked(Entity x) {
        for (Entity y = x;;) {
            claim(y);
            if (st_.links[y.index].linked != 0) return;
            const Entity p = first_parent(y);
            if (!p) {
                st_.links[y.index].linked = 1;  // a root
                return;
            }
            claim(p);
            attach(y.index, p.index);
            y = p;
        }
    }

    /// Brings the links up to date: rebuilt after a full call, else the entities of the
    /// hierarchy log moved to their new first parent; then every dirty entity linked.
    void update_links() {
        if (!st_.links_valid) {
            std::fill(st_.links.begin(), st_.links.end(), TransformLink{});
            for (const std::uint32_t index : st_.with_local.update()) {
                const Archetype& a = s_.archetype(index);
                for (std::uint32_t row = 0; row < a.size; ++row) ensure_linked(a.entities[row]);
            }
            st_.links_valid = true;
        } else {
            for (const Entity e : hierarchy_changes(s_)) {
                if (s_.record(e) == nullptr) continue;
                claim(e);
                detach(e.index);
                ensure_linked(e);
            }
        }
        // Before any traversal: an entity linked after its parent's traversal would be missed.
        for (const Entity d : st_.dirty) {
            if (s_.record(d) != nullptr) ensure_linked(d);
        }
    }

    // ---- incremental ----

    /// Whether dirty `d` has no dirty ancestor; then `parent` is its parent's world matrix.
    /// Marks the ancestors it walks through: clean (with their current matrix) or covered (below
    /// a dirty entity), so no entity is walked through twice in a call. An ancestor already
    /// computed in this call (`done`, not clean) is below a dirty entity too.
    bool topmost(Entity d, const glm::mat4*& parent) {
        const std::pmr::vector<TransformLink>& links = st_.links;
        st_.path.clear();
        bool covered = false;
        const glm::mat4* base = nullptr;
        for (std::uint32_t x = links[d.index].parent; x != no_link; x = links[x].parent) {
            const std::uint32_t f = flags(x);
            if ((f & (dirty_flag | covered_flag)) != 0) {
                covered = true;
                break;
            }
            if (slot(x).done == ep_) {
                covered = (f & clean_flag) == 0;
                base = slot(x).world;
                break;
            }
            st_.path.push_back(links[x].owner);
        }
        for (std::size_t i = st_.path.size(); i-- > 0;) {
            const Entity x = st_.path[i];
            if (covered) {
                set_flag(x.index, covered_flag);  // below a dirty entity: its traversal computes x
                continue;
            }
            set_flag(x.index, clean_flag);
            base = current_world(x, base);
            TransformSlot& t = slot(x.index);
            t.world = base;
            t.done = ep_;
        }
        parent = base;
        return !covered;
    }

    /// The world matrix of `x`, which is clean (neither it nor an ancestor is dirty), given its
    /// parent's: its WorldTransform as the previous call left it, or the parent's for a
    /// pass-through entity.
    const glm::mat4* current_world(Entity x, const glm::mat4* parent) {
        const EntityRecord& r = *s_.record(x);
        const Archetype& a = s_.archetype(r.archetype);
        const std::int32_t lc = a.slot(local_id_);
        if (lc < 0) return parent;
        const std::int32_t wc = a.slot(world_id_);
        if (wc >= 0) return &column<WorldTransform>(a, wc)[r.row].matrix;
        // No WorldTransform yet (its addition is queued): compute the value it will get.
        return keep_spare(times(parent, column<LocalTransform>(a, lc)[r.row].matrix));
    }

    /// Recomputes `root` (topmost dirty, parent matrix `parent`) and its subtree (through the
    /// links), depth first.
    void recompute_subtree(Entity root, const glm::mat4* parent) {
        std::pmr::vector<std::uint32_t>& work = st_.work;
        work.clear();
        compute(root, *s_.record(root), parent);
        push_children(root.index);
        while (!work.empty()) {
            const std::uint32_t c = work.back();
            work.pop_back();
            const Entity e = st_.links[c].owner;
            const std::uint32_t p = st_.links[c].parent;
            const EntityRecord* r = s_.record(e);
            if (r == nullptr || slot(c).done == ep_) continue;  // died since it was linked
            compute(e, *r, slot(p).world);
            push_children(c);
        }
    }

    void push_children(std::uint32_t i) {
        const std::pmr::vector<TransformLink>& links = st_.links;
        for (std::uint32_t c = links[i].first_child; c != no_link; c = links[c].next)
            st_.work.push_back(c);
    }

    void run_incremental() {
        for (const Entity d : st_.dirty) {
            if (s_.record(d) == nullptr) continue;
            if (slot(d.index).done == ep_)
                continue;  // in an earlier root's subtree (or listed twice)
            const glm::mat4* parent = nullptr;
            if (topmost(d, parent)) recompute_subtree(d, parent);
        }
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
    bool any_forced_ = false;  ///< some WorldTransform was added by this call
    TableView view_;
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

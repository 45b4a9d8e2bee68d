// Relations: the per-world relation index (reverse lookup), relate/unrelate, and despawns that
// follow relations (cleanup of relations pointing at the dead, the ChildOf cascade).
#include <tessera/detail/observe.hpp>
#include <tessera/detail/storage.hpp>
#include <tessera/error.hpp>
#include <tessera/relation.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <sstream>
#include <string>
#include <tuple>

namespace tessera::detail {

namespace {

/// The `Targets<R>` of `e` (whose id is `targets`), or null.
EntityList* targets_of(const Storage& s, ComponentId targets, Entity e) noexcept {
    // Targets<R> adds no member to EntityList: the two are pointer-interconvertible.
    return reinterpret_cast<EntityList*>(s.find(e, targets));
}

std::string type_name(const RelationType& type) {
    return std::string(component_info(type.data).name);
}

[[noreturn]] void throw_dead(const char* op, const RelationType& type, Entity e, const char* role) {
    std::ostringstream os;
    os << op << '<' << type_name(type) << ">: " << role << ' ' << e << " is not alive";
    throw Error(errc::not_alive, os.str());
}

/// Runs a one-step change: `pre` observers, the mechanics, `post` observers. Without observers
/// only the mechanics run; when an observer throws, the mechanics still run (once).
template <class Pre, class Mechanics, class Post>
void change(Storage& s, Pre&& pre, Mechanics&& mechanics, Post&& post) {
    if (s.observers() == nullptr) {
        mechanics();
        return;
    }
    bool done = false;
    auto finish = [&]() noexcept {
        if (!done) {
            done = true;
            mechanics();
        }
    };
    observed(
        s,
        [&] {
            pre();
            finish();
            post();
        },
        finish);
}

/// Moves the value at `value` (consumed) into the uninitialised slot of `id` at `slot`.
void construct_value(Storage& s, RowSlot slot, ComponentId id, std::byte* value) noexcept {
    const std::int32_t c = slot.archetype->slot(id);
    if (c < 0) {  // a tag: the value object ends here
        const ComponentInfo& info = component_info(id);
        if (value != nullptr && info.destroy != nullptr) info.destroy(value, 1);
        return;
    }
    Column& col = slot.archetype->columns[static_cast<std::uint32_t>(c)];
    col.relocate_in(col.data + std::size_t{slot.row} * col.size, value);
    s.stamp_added(slot, c);
}

/// Replaces `e`'s `id` with the value at `value` (consumed), marking it changed.
void replace_value(Storage& s, Entity e, ComponentId id, std::byte* value) noexcept {
    const Location loc = s.locate(e, id);
    if (loc.archetype == nullptr) {  // a tag
        const ComponentInfo& info = component_info(id);
        if (value != nullptr && info.destroy != nullptr) info.destroy(value, 1);
        return;
    }
    Column& col = loc.archetype->columns[static_cast<std::uint32_t>(loc.column)];
    std::byte* dst = col.data + std::size_t{loc.row} * col.size;
    if (col.destroy != nullptr) col.destroy(dst, 1);
    col.relocate_in(dst, value);
    s.stamp_changed(*loc.archetype, loc.row, loc.column);
}

}  // namespace

/// Every relation type a world uses, with the reverse index (target -> sources) of each, and
/// the scratch lists of despawns, loop checks and the hierarchy log (kept between calls).
class RelationIndex {
public:
    struct Kind {
        RelationType type;
        std::pmr::vector<EntityList> sources;  ///< by target entity index
    };

    explicit RelationIndex(std::pmr::memory_resource* mr)
        : log_(mr),
          mr_(mr),
          kinds_(mr),
          by_id_(mr),
          marks_(mr),
          down_marks_(mr),
          stack_(mr),
          down_(mr),
          doomed_(mr),
          pos_(mr),
          cur_(mr),
          losses_(mr),
          moves_(mr) {}

    [[nodiscard]] std::pmr::memory_resource* resource() const noexcept { return mr_; }

    [[nodiscard]] Kind* find(ComponentId data) noexcept {
        if (data.value >= by_id_.size() || by_id_[data.value] < 0) return nullptr;
        return &kinds_[static_cast<std::size_t>(by_id_[data.value])];
    }

    /// The kind of `type`, registered on first use (the world then refuses its components in
    /// add/remove/spawn). @throws invalid_argument when the type is a plain component here.
    Kind& kind_for(Storage& s, const RelationType& type, const char* op) {
        if (Kind* k = find(type.data)) return *k;
        for (std::size_t i = first_user_archetype; i < s.archetype_slots(); ++i) {
            const Archetype& a = s.archetype(static_cast<std::uint32_t>(i));
            if (a.contains(type.data) || a.contains(type.targets)) {
                throw Error(errc::invalid_argument,
                            std::string(op) + '<' + type_name(type) + ">: " + type_name(type) +
                                " is already used as a plain component in this world; a type "
                                "is either a component or a relation");
            }
        }
        s.ensure_component(type.data);
        s.ensure_component(type.targets);
        if (type.data.value >= by_id_.size()) by_id_.resize(type.data.value + 1, -1);
        kinds_.push_back(Kind{type, std::pmr::vector<EntityList>(mr_)});
        by_id_[type.data.value] = static_cast<std::int32_t>(kinds_.size() - 1);
        s.mark_relation(type.data, type.targets);
        return kinds_.back();
    }

    /// The sources list of `target` in `k`, made if needed (may throw bad_alloc).
    EntityList& sources_at(Kind& k, std::uint32_t target) {
        if (target >= k.sources.size()) {
            if (target >= k.sources.capacity())
                k.sources.reserve(std::max<std::size_t>(target + 1, k.sources.capacity() * 2));
            while (k.sources.size() <= target) k.sources.emplace_back(mr_);
        }
        return k.sources[target];
    }
    [[nodiscard]] EntityList* sources_if(Kind& k, std::uint32_t target) noexcept {
        return target < k.sources.size() ? &k.sources[target] : nullptr;
    }

    // ---- the hierarchy log ----
    /// Room for `n` more entries. A log nobody empties stops at `max_log` entries: it is then
    /// dropped and marked overflowed (its reader recomputes everything instead).
    void reserve_log(std::size_t n) {
        if (!logging_ || overflowed_) return;
        if (log_.size() + n > max_log) {
            overflowed_ = true;
            log_.clear();
            return;
        }
        if (log_.size() + n > log_.capacity())  // geometric: reserve(size + n) alone is O(n^2)
            log_.reserve(std::max(log_.size() + n, log_.capacity() * 2));
    }
    void log(const RelationType& type, Entity e) noexcept {
        if (logging_ && !overflowed_ && type.hierarchy) log_.push_back(e);  // reserved
    }
    static constexpr std::size_t max_log = std::size_t{1} << 16;
    bool logging_ = false;
    bool overflowed_ = false;
    std::pmr::vector<Entity> log_;

    // ---- marks: an epoch per entity index ----
    void new_epoch() {
        if (++epoch_ == 0) {
            std::fill(marks_.begin(), marks_.end(), 0u);
            std::fill(down_marks_.begin(), down_marks_.end(), 0u);
            epoch_ = 1;
        }
    }
    void mark(Entity e) {
        if (e.index >= marks_.size())
            marks_.resize(std::max<std::size_t>(e.index + 1, marks_.size() * 2), 0u);
        marks_[e.index] = epoch_;
    }
    [[nodiscard]] bool marked(Entity e) const noexcept {
        return e.index < marks_.size() && marks_[e.index] == epoch_;
    }
    // A second set of marks (same epoch), for the downward half of the loop check.
    void down_mark(Entity e) {
        if (e.index >= down_marks_.size())
            down_marks_.resize(std::max<std::size_t>(e.index + 1, down_marks_.size() * 2), 0u);
        down_marks_[e.index] = epoch_;
    }
    [[nodiscard]] bool down_marked(Entity e) const noexcept {
        return e.index < down_marks_.size() && down_marks_[e.index] == epoch_;
    }

    /// Throws hierarchy_cycle when relating `child` to `parent` by `k` would close a loop.
    void check_cycle(Storage& s, const Kind& k, Entity child, Entity parent, const char* op) {
        auto fail = [&](const char* how) {
            std::ostringstream os;
            os << op << '<' << type_name(k.type) << ">: relating " << child << " to " << parent
               << how;
            throw Error(errc::hierarchy_cycle, os.str());
        };
        if (child == parent) fail(" would make it its own parent");
        if (child.index >= k.sources.size() || k.sources[child.index].empty()) return;  // a leaf
        // A loop needs `child` among the parent's ancestors, i.e. `parent` among the child's
        // descendants. Both searches run in turns, one entity each, so the cost is bounded by
        // twice the smaller of the two sets (a deep parent or a large subtree alone is cheap).
        new_epoch();
        stack_.clear();
        down_.clear();
        stack_.push_back(parent);
        down_.push_back(child);
        mark(parent);
        down_mark(child);
        while (!stack_.empty() && !down_.empty()) {
            const Entity up = stack_.back();
            stack_.pop_back();
            if (const EntityList* parents = targets_of(s, k.type.targets, up)) {
                for (const Entity p : *parents) {
                    if (p == child) fail(" would close a loop: the target descends from it");
                    if (!marked(p)) {
                        mark(p);
                        stack_.push_back(p);
                    }
                }
            }
            const Entity down = down_.back();
            down_.pop_back();
            if (down.index < k.sources.size()) {
                for (const Entity c : k.sources[down.index]) {
                    if (c == parent) fail(" would close a loop: the target descends from it");
                    if (!down_marked(c)) {
                        down_mark(c);
                        down_.push_back(c);
                    }
                }
            }
        }
    }

    /// Whether despawning `e` touches a relation (its own, or one pointing at it).
    [[nodiscard]] bool involved(const Storage& s, Entity e) const noexcept {
        const Archetype& a = s.archetype(s.record(e)->archetype);
        for (const Kind& k : kinds_) {
            if (a.contains(k.type.targets)) return true;
            if (e.index < k.sources.size() && !k.sources[e.index].empty()) return true;
        }
        return false;
    }

    bool despawn(Storage& s, Entity root);

    /// Copies `src`'s kinds and reverse lists (not its scratch or its hierarchy log) into this
    /// empty index. May throw bad_alloc.
    void copy_kinds(const RelationIndex& src) {
        for (const Kind& k : src.kinds_) {
            Kind& copy = kinds_.emplace_back(Kind{k.type, std::pmr::vector<EntityList>(mr_)});
            copy.sources.reserve(k.sources.size());
            for (const EntityList& list : k.sources) copy.sources.emplace_back(list, mr_);
        }
        by_id_.assign(src.by_id_.begin(), src.by_id_.end());
    }
    /// The kinds, for whole-world readers.
    [[nodiscard]] const std::pmr::deque<Kind>& kinds() const noexcept { return kinds_; }

private:
    /// A relation a survivor of a despawn loses: its relation of kind `kind` loses a target,
    /// the doomed entity at position `step` (planning scratch).
    struct Loss {
        Entity source;
        std::uint32_t kind;
        std::uint32_t step;
        std::uint32_t seq;  ///< order found (std::stable_sort would allocate outside the world)
    };
    /// A survivor that loses its whole relation of kind `kind` when the `step`th doomed entity
    /// dies: it moves from archetype `from` to `to` then.
    struct Move {
        Entity source;
        std::uint32_t kind;
        std::uint32_t step;
        std::uint32_t from;
        std::uint32_t to;
    };

    void plan(Storage& s, Entity root);
    void pre(Storage& s, std::size_t step);
    void mechanics(Storage& s, std::size_t step) noexcept;
    void post(Storage& s, std::size_t step);
    /// The moves made when the `step`th doomed entity dies.
    [[nodiscard]] std::span<const Move> moves_at(std::size_t step) const noexcept {
        auto by_step = [](const Move& m, std::size_t k) { return m.step < k; };
        const auto first = std::lower_bound(moves_.begin(), moves_.end(), step, by_step);
        const auto last = std::lower_bound(first, moves_.end(), step + 1, by_step);
        return {first, last};
    }
    /// The two components of a kind, sorted.
    [[nodiscard]] std::array<ComponentId, 2> ids_of(std::uint32_t kind) const noexcept {
        std::array<ComponentId, 2> ids{kinds_[kind].type.data, kinds_[kind].type.targets};
        if (ids[1] < ids[0]) std::swap(ids[0], ids[1]);
        return ids;
    }
    /// Grows a by-entity-index array to hold `index`.
    static void fit(std::pmr::vector<std::uint32_t>& v, std::uint32_t index) {
        if (index >= v.size()) v.resize(std::max<std::size_t>(index + 1, v.size() * 2), 0u);
    }

    std::pmr::memory_resource* mr_;
    std::pmr::deque<Kind> kinds_;  ///< a deque: callbacks may add kinds while one is in use
    std::pmr::vector<std::int32_t> by_id_;  ///< data component id -> kind, -1 when none
    std::pmr::vector<std::uint32_t> marks_;
    std::pmr::vector<std::uint32_t> down_marks_;
    std::uint32_t epoch_ = 0;
    std::pmr::vector<Entity> stack_;
    std::pmr::vector<Entity> down_;
    std::pmr::vector<Entity> doomed_;      ///< a despawn's entities, breadth first
    std::pmr::vector<std::uint32_t> pos_;  ///< by entity index: position in doomed_ (if marked)
    std::pmr::vector<std::uint32_t> cur_;  ///< by entity index: a survivor's planned archetype
    std::pmr::vector<Loss> losses_;
    std::pmr::vector<Move> moves_;
};

// ------------------------------------------------------------------------------ despawn
//
// A despawn that touches relations is planned first (everything that can fail: the doomed
// set, the archetypes survivors move to, room for the moves and the log), then carried out one
// doomed entity at a time, root first and breadth first. Each step: on_despawn, on_unrelate for
// its own relations, on_remove per component, on_exit, on_unrelate at each entity relating to
// it (both ends still alive), on_remove for the survivors that lose a whole relation; then the
// mechanics (the relations pointing at it go, those survivors move, it dies); then the
// survivors' query on_exit/on_enter.

void RelationIndex::plan(Storage& s, Entity root) {
    new_epoch();
    doomed_.clear();
    losses_.clear();
    moves_.clear();
    auto doom = [&](Entity e) {
        fit(pos_, e.index);
        mark(e);
        pos_[e.index] = static_cast<std::uint32_t>(doomed_.size());
        doomed_.push_back(e);
    };
    doom(root);
    // The doomed: the root, then (ChildOf) every child whose parents are all doomed.
    for (std::size_t i = 0; i < doomed_.size(); ++i) {
        const Entity x = doomed_[i];
        for (Kind& k : kinds_) {
            if (!k.type.hierarchy || x.index >= k.sources.size()) continue;
            for (const Entity c : k.sources[x.index]) {
                if (marked(c) || s.permanent(c.index)) continue;
                const EntityList* parents = targets_of(s, k.type.targets, c);
                if (std::all_of(parents->begin(), parents->end(),
                                [&](Entity p) { return marked(p) || s.record(p) == nullptr; })) {
                    doom(c);
                }
            }
        }
    }
    // What the survivors lose, grouped by (survivor, kind).
    for (std::uint32_t i = 0; i < doomed_.size(); ++i) {
        const Entity x = doomed_[i];
        for (std::uint32_t k = 0; k < kinds_.size(); ++k) {
            if (x.index >= kinds_[k].sources.size()) continue;
            for (const Entity src : kinds_[k].sources[x.index]) {
                if (!marked(src))
                    losses_.push_back({src, k, i, static_cast<std::uint32_t>(losses_.size())});
            }
        }
    }
    std::sort(losses_.begin(), losses_.end(), [](const Loss& a, const Loss& b) {
        return std::tie(a.source.index, a.kind, a.seq) < std::tie(b.source.index, b.kind, b.seq);
    });
    // A relation whose every target dies goes when its last target dies: one move then.
    for (std::size_t i = 0; i < losses_.size();) {
        std::size_t j = i;
        std::uint32_t last = 0;
        for (; j < losses_.size() && losses_[j].source == losses_[i].source &&
               losses_[j].kind == losses_[i].kind;
             ++j) {
            last = std::max(last, losses_[j].step);
        }
        const Kind& k = kinds_[losses_[i].kind];
        if (targets_of(s, k.type.targets, losses_[i].source)->size() == j - i)
            moves_.push_back({losses_[i].source, losses_[i].kind, last, 0, 0});
        i = j;
    }
    std::sort(moves_.begin(), moves_.end(), [](const Move& a, const Move& b) {
        return std::tie(a.step, a.source.index, a.kind) < std::tie(b.step, b.source.index, b.kind);
    });
    // The archetypes they move through (created now), with room reserved.
    for (Move& m : moves_) {
        fit(cur_, m.source.index);
        m.from = down_marked(m.source) ? cur_[m.source.index] : s.record(m.source)->archetype;
        const std::array<ComponentId, 2> ids = ids_of(m.kind);
        m.to = s.removal_target(s.archetype(m.from), ids).index;
        down_mark(m.source);
        cur_[m.source.index] = m.to;
    }
    for (const Move& m : moves_) s.reserve_rows(s.archetype(m.to), moves_.size());
    reserve_log(losses_.size());
}

void RelationIndex::pre(Storage& s, std::size_t step) {
    // Kinds are visited by index and copied: a callback may add one (deque: no reallocation).
    const Entity x = doomed_[step];
    deliver(s, Event::despawn, x);
    for (std::size_t k = 0; k < kinds_.size(); ++k) {
        const RelationType type = kinds_[k].type;
        if (const EntityList* list = targets_of(s, type.targets, x)) {
            for (const Entity t : list->span())
                deliver_relation(s, Event::unrelate, type.data, x, t);
        }
    }
    const std::uint32_t from = s.record(x)->archetype;
    for (const ComponentId id : s.archetype(from).ids) deliver(s, Event::remove, id, x);
    deliver_move(s, x, from, no_index);
    for (std::size_t k = 0; k < kinds_.size(); ++k) {
        const RelationType type = kinds_[k].type;
        if (const EntityList* list = sources_if(kinds_[k], x.index)) {
            for (const Entity src : list->span()) {
                if (src != x)  // a relation to itself was reported with its own
                    deliver_relation(s, Event::unrelate, type.data, src, x);
            }
        }
    }
    for (const Move& m : moves_at(step)) {
        for (const ComponentId id : ids_of(m.kind)) deliver(s, Event::remove, id, m.source);
    }
}

void RelationIndex::mechanics(Storage& s, std::size_t step) noexcept {
    const Entity x = doomed_[step];
    for (Kind& k : kinds_) {
        // x leaves the reverse lists of its targets...
        if (const EntityList* list = targets_of(s, k.type.targets, x)) {
            for (const Entity t : *list) {
                if (EntityList* back = sources_if(k, t.index)) back->erase(x);
            }
        }
        // ...and the target lists of the entities relating to it.
        if (EntityList* own = sources_if(k, x.index)) {
            for (const Entity src : *own) {
                EntityList* targets = targets_of(s, k.type.targets, src);
                if (!marked(src) && targets->front() == x) log(k.type, src);
                targets->erase(x);
            }
            own->clear();
        }
    }
    for (const Move& m : moves_at(step))
        s.move_entity(m.source, *s.record(m.source), s.archetype(m.to));
    s.despawn(x);
}

void RelationIndex::post(Storage& s, std::size_t step) {
    for (const Move& m : moves_at(step)) deliver_move(s, m.source, m.from, m.to);
}

bool RelationIndex::despawn(Storage& s, Entity root) {
    plan(s, root);  // everything that can fail
    const std::size_t n = doomed_.size();
    std::size_t next = 0;
    auto run = [&](bool notify) {
        while (next < n) {
            const std::size_t step = next;
            if (notify) pre(s, step);
            ++next;
            mechanics(s, step);
            if (notify) post(s, step);
        }
    };
    if (s.observers() == nullptr) {
        run(false);
    } else {
        observed(
            s, [&] { run(true); }, [&]() noexcept { run(false); });
    }
    return true;
}

bool despawn_related(Storage& s, Entity e) {
    const EntityRecord* r = s.record(e);
    if (r == nullptr) return false;
    RelationIndex& index = *s.relations();
    if (!index.involved(s, e)) {
        if (s.observes(*r)) return observed_despawn(s, e);
        return s.despawn(e);
    }
    return index.despawn(s, e);
}

// ------------------------------------------------------------------------ relate / unrelate

void relation_add(Storage& s, const RelationType& type, Entity e, Entity target, std::byte* value,
                  Commit commit) {
    constexpr const char* op = "World::relate";
    if (s.record(e) == nullptr) throw_dead(op, type, e, "entity");
    if (s.record(target) == nullptr) throw_dead(op, type, target, "target");
    RelationIndex& index = s.relation_index();
    RelationIndex::Kind& k = index.kind_for(s, type, op);
    if (type.hierarchy) index.check_cycle(s, k, e, target, op);
    EntityList& back = index.sources_at(k, target.index);
    const std::uint32_t from = s.record(e)->archetype;
    if (s.archetype(from).contains(type.targets)) {
        EntityList& list = *targets_of(s, type.targets, e);
        const bool had = list.contains(target);
        if (!had) {
            list.reserve(list.size() + 1);
            back.reserve(back.size() + 1);
        }
        replace_value(s, e, type.data, value);
        if (!had) {
            list.push_back(target);
            back.push_back(e);
            const Location loc = s.locate(e, type.targets);
            s.stamp_changed(*loc.archetype, loc.row, loc.column);
        }
        commit();
        change(
            s, [] {}, [] {},
            [&] {
                if (!component_info(type.data).is_tag()) deliver(s, Event::set, type.data, e);
                if (!had) deliver_relation(s, Event::relate, type.data, e, target);
            });
        return;
    }
    // The first target: R and Targets<R> arrive in one archetype move.
    back.reserve(back.size() + 1);
    index.reserve_log(1);
    ComponentId ids[2] = {type.data, type.targets};
    if (ids[1] < ids[0]) std::swap(ids[0], ids[1]);
    bool existed[2] = {false, false};
    const RowSlot slot = s.prepare_add(e, ids, existed, op);
    construct_value(s, slot, type.data, value);
    const std::int32_t c = slot.archetype->slot(type.targets);
    Column& col = slot.archetype->columns[static_cast<std::uint32_t>(c)];
    EntityList* list = type.make_targets(col.data + std::size_t{slot.row} * col.size, s.resource());
    list->push_back(target);  // the inline slot: no allocation
    s.stamp_added(slot, c);
    back.push_back(e);
    index.log(type, e);
    commit();
    const std::uint32_t to = slot.archetype->index;
    change(
        s, [] {}, [] {},
        [&] {
            for (const ComponentId id : ids) deliver(s, Event::add, id, e);
            deliver_move(s, e, from, to);
            deliver_relation(s, Event::relate, type.data, e, target);
        });
}

namespace {

/// Removes `targets` (all of `e`'s, or one) from `e`'s relation `k`; the relation goes with its
/// last target. Returns how many targets were removed.
std::size_t unlink(Storage& s, RelationIndex& index, RelationIndex::Kind& k, Entity e,
                   const Entity* one, Commit commit) {
    const RelationType& type = k.type;
    EntityList* list = targets_of(s, type.targets, e);
    if (list == nullptr || (one != nullptr && !list->contains(*one))) {
        commit();
        return 0;
    }
    const std::size_t n = one != nullptr ? 1 : list->size();
    const bool whole = n == list->size();
    ComponentId ids[2] = {type.data, type.targets};
    if (ids[1] < ids[0]) std::swap(ids[0], ids[1]);
    const std::uint32_t from = s.record(e)->archetype;
    std::uint32_t to = from;
    if (whole) {
        Archetype& dest = s.removal_target(s.archetype(from), ids);
        s.reserve_rows(dest, 1);
        to = dest.index;
    }
    index.reserve_log(1);
    commit();
    change(
        s,
        [&] {
            if (one != nullptr) {
                deliver_relation(s, Event::unrelate, type.data, e, *one);
            } else {
                for (const Entity t : *list) deliver_relation(s, Event::unrelate, type.data, e, t);
            }
            if (whole) {
                for (const ComponentId id : ids) deliver(s, Event::remove, id, e);
            }
        },
        [&]() noexcept {
            EntityList& targets = *targets_of(s, type.targets, e);
            const std::span<const Entity> gone =
                one != nullptr ? std::span<const Entity>(one, 1) : targets.span();
            if (targets.front() == gone.front() || whole) index.log(type, e);
            for (const Entity t : gone) {
                if (EntityList* back = index.sources_if(k, t.index)) back->erase(e);
            }
            if (whole) {
                s.move_entity(e, *s.record(e), s.archetype(to));
            } else {
                targets.erase(*one);
                const Location loc = s.locate(e, type.targets);
                s.stamp_changed(*loc.archetype, loc.row, loc.column);
            }
        },
        [&] { deliver_move(s, e, from, to); });
    return n;
}

RelationIndex::Kind* kind_of(Storage& s, const RelationType& type) noexcept {
    RelationIndex* index = s.relations();
    return index == nullptr ? nullptr : index->find(type.data);
}

}  // namespace

bool relation_remove(Storage& s, const RelationType& type, Entity e, Entity target, Commit commit) {
    if (s.record(e) == nullptr) throw_dead("World::unrelate", type, e, "entity");
    RelationIndex::Kind* k = kind_of(s, type);
    if (k == nullptr) {
        commit();
        return false;
    }
    return unlink(s, *s.relations(), *k, e, &target, commit) != 0;
}

std::size_t relation_clear(Storage& s, const RelationType& type, Entity e, Commit commit) {
    if (s.record(e) == nullptr) throw_dead("World::unrelate", type, e, "entity");
    RelationIndex::Kind* k = kind_of(s, type);
    if (k == nullptr) {
        commit();
        return 0;
    }
    return unlink(s, *s.relations(), *k, e, nullptr, commit);
}

// ------------------------------------------------------------- the deferring entry points

void relate(Storage& s, const RelationType& type, Entity e, Entity target, std::byte* value) {
    if (!s.deferring()) return relation_add(s, type, e, target, value, {});
    constexpr const char* op = "World::relate";
    check_not_parallel(s, op);
    if (s.record(e) == nullptr) throw_dead(op, type, e, "entity");
    if (s.record(target) == nullptr) throw_dead(op, type, target, "target");
    RelationIndex::Kind& k = s.relation_index().kind_for(s, type, op);
    if (type.hierarchy && e == target) s.relations()->check_cycle(s, k, e, target, op);
    const ComponentInfo& info = s.ensure_component(type.data);
    s.deferred().reserve(1);
    std::byte* slot = nullptr;
    if (!info.is_tag()) {
        slot = s.deferred().allocate_value(info);
        if (info.relocate != nullptr)
            info.relocate(slot, value, 1);
        else
            std::memcpy(slot, value, info.size);
    } else if (info.destroy != nullptr) {
        info.destroy(value, 1);
    }
    s.deferred().push_relation(Command::Kind::relate, e, target, type, info, slot);
}

namespace {
bool queue_unrelate(Storage& s, const RelationType& type, Entity e, Entity target, bool all) {
    check_not_parallel(s, "World::unrelate");
    if (s.record(e) == nullptr) throw_dead("World::unrelate", type, e, "entity");
    s.deferred().reserve(1);
    s.deferred().push_relation(Command::Kind::unrelate, e, target, type, component_info(type.data),
                               nullptr, all);
    const EntityList* list = targets_of(s, type.targets, e);
    return list != nullptr && (all || list->contains(target));
}
}  // namespace

bool unrelate(Storage& s, const RelationType& type, Entity e, Entity target) {
    if (!s.deferring()) return relation_remove(s, type, e, target, {});
    return queue_unrelate(s, type, e, target, false);
}

std::size_t unrelate_all(Storage& s, const RelationType& type, Entity e) {
    if (!s.deferring()) return relation_clear(s, type, e, {});
    const EntityList* list = targets_of(s, type.targets, e);
    const std::size_t n = list == nullptr ? 0 : list->size();
    queue_unrelate(s, type, e, Entity::null(), true);
    return n;
}

std::span<const Entity> sources(const Storage& s, ComponentId data, Entity target) noexcept {
    RelationIndex* index = s.relations();
    if (index == nullptr || s.record(target) == nullptr) return {};
    RelationIndex::Kind* k = index->find(data);
    if (k == nullptr) return {};
    const EntityList* list = index->sources_if(*k, target.index);
    return list == nullptr ? std::span<const Entity>{} : list->span();
}

void track_hierarchy(Storage& s) {
    RelationIndex& index = s.relation_index();
    if (!index.logging_) {
        index.log_.reserve(64);
        index.logging_ = true;
    }
}

std::span<const Entity> hierarchy_changes(const Storage& s) noexcept {
    const RelationIndex* index = s.relations();
    return index == nullptr ? std::span<const Entity>{} : std::span<const Entity>(index->log_);
}

void clear_hierarchy_changes(Storage& s) noexcept {
    if (RelationIndex* index = s.relations()) {
        index->log_.clear();
        index->overflowed_ = false;
    }
}

bool hierarchy_overflowed(const Storage& s) noexcept {
    const RelationIndex* index = s.relations();
    return index != nullptr && index->overflowed_;
}

// ------------------------------------------------------------------------------ storage

RelationIndex& Storage::relation_index() {
    if (relations_ == nullptr) {
        void* mem = mr_->allocate(sizeof(RelationIndex), alignof(RelationIndex));
        try {
            relations_ = ::new (mem) RelationIndex(mr_);  // the deque allocates already
        } catch (...) {
            mr_->deallocate(mem, sizeof(RelationIndex), alignof(RelationIndex));
            throw;
        }
    }
    return *relations_;
}

std::vector<RelationKindView> relation_kinds(const Storage& s) {
    std::vector<RelationKindView> out;
    if (s.relations() == nullptr) return out;
    for (const RelationIndex::Kind& k : s.relations()->kinds())
        out.push_back(RelationKindView{&k.type, k.sources});
    return out;
}

void register_relation(Storage& s, const RelationType& type, const char* op) {
    s.relation_index().kind_for(s, type, op);
}

void set_sources(Storage& s, const RelationType& type, std::uint32_t target,
                 std::span<const Entity> sources) {
    RelationIndex& index = s.relation_index();
    EntityList& list = index.sources_at(*index.find(type.data), target);
    list.reserve(sources.size());
    for (const Entity e : sources) list.push_back(e);
}

RelationIndex* clone_relation_index(const RelationIndex& src, Storage& dst) {
    RelationIndex& copy = dst.relation_index();
    copy.copy_kinds(src);
    return &copy;
}

void destroy_relation_index(RelationIndex* index) noexcept {
    if (index == nullptr) return;
    std::pmr::memory_resource* mr = index->resource();
    index->~RelationIndex();
    mr->deallocate(index, sizeof(RelationIndex), alignof(RelationIndex));
}

void Storage::mark_relation(ComponentId data, ComponentId targets) noexcept {
    for (const ComponentId id : {data, targets}) {
        components_[id.value].relation = true;
        components_[id.value].observed = true;
    }
    observed_ = true;
    for (Archetype* a : archetypes_) {
        if (a->contains(data) || a->contains(targets)) a->observed = true;
    }
}

void Storage::throw_relation_component(ComponentId id, const char* op) {
    const std::string name(component_info(id).name);
    throw Error(errc::invalid_argument, std::string(op) + '<' + name + ">: " + name +
                                            " belongs to a relation in this world: use "
                                            "relate/unrelate");
}

}  // namespace tessera::detail

namespace tessera {

std::span<const Entity> World::children(Entity parent) const noexcept {
    return detail::sources(*storage_, component_id<ChildOf>(), parent);
}

std::span<const Entity> World::parents(Entity child) const noexcept {
    return targets<ChildOf>(child);
}

Entity World::parent(Entity child) const noexcept {
    const std::span<const Entity> p = parents(child);
    return p.empty() ? Entity::null() : p.front();
}

}  // namespace tessera

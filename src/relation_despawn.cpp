// Despawns that follow relations: cleanup of the relations pointing at the dead, and the
// ChildOf cascade.
#include "relation_index.hpp"

namespace tessera::detail {

// ------------------------------------------------------------------------------ despawn
//
// A despawn that touches relations (of one entity or of many: one call either way) is planned
// first (everything that can fail: the doomed set, the archetypes survivors move to, room for the
// moves and the log), then carried out one doomed entity at a time, root first and breadth first.
// Each step: on_despawn, on_unrelate for its own relations, on_remove per component, on_exit,
// on_unrelate at each entity relating to it (both ends still alive), on_remove for the survivors
// that lose a whole relation; then the mechanics (the relations pointing at it go, those survivors
// move, it dies); then the survivors' query on_exit/on_enter.

std::size_t RelationIndex::plan(Storage& s, std::span<const Entity> roots) {
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
    // The doomed: each root not doomed yet, then (ChildOf) every child whose parents are all
    // doomed, breadth first, before the next root: the order of one despawn per root.
    std::size_t listed = 0;
    for (const Entity root : roots) {
        if (s.try_record(root) == nullptr) continue;
        ++listed;
        if (marked(root)) continue;  // an earlier root's cascade took it
        std::size_t i = doomed_.size();
        doom(root);
        for (; i < doomed_.size(); ++i) {
            const Entity x = doomed_[i];
            for (Kind& k : kinds_) {
                if (!k.type.hierarchy || x.index >= k.sources.size()) continue;
                for (const Entity c : k.sources[x.index]) {
                    if (marked(c) || s.permanent(c.index)) continue;
                    const EntityList* parents = targets_of(s, k.type.targets, c);
                    if (std::all_of(parents->begin(), parents->end(), [&](Entity p) {
                            return marked(p) || s.try_record(p) == nullptr;
                        })) {
                        doom(c);
                    }
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
        m.from = down_marked(m.source) ? cur_[m.source.index] : s.try_record(m.source)->archetype;
        const std::array<ComponentId, 2> ids = ids_of(m.kind);
        m.to = s.removal_target(s.archetype(m.from), ids).index;
        down_mark(m.source);
        cur_[m.source.index] = m.to;
    }
    for (const Move& m : moves_) s.reserve_rows(s.archetype(m.to), moves_.size());
    reserve_log(losses_.size());
    return listed;
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
    const std::uint32_t from = s.try_record(x)->archetype;
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
                const bool first = targets->front() == x;
                if (!marked(src) && first) log(k.type, src);
                targets->erase(x);
                if (k.type.hierarchy && first && !marked(src)) s.name_moved(src);
            }
            own->clear();
        }
    }
    for (const Move& m : moves_at(step))
        s.move_entity(m.source, *s.try_record(m.source), s.archetype(m.to));
    s.despawn(x);
}

void RelationIndex::post(Storage& s, std::size_t step) {
    for (const Move& m : moves_at(step)) deliver_move(s, m.source, m.from, m.to);
}

std::size_t RelationIndex::despawn(Storage& s, std::span<const Entity> roots, Commit commit) {
    const std::size_t listed = plan(s, roots);  // everything that can fail
    commit();
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
        notifying(
            s, [&] { run(true); }, [&]() noexcept { run(false); });
    }
    return listed;
}

std::size_t despawn_related(Storage& s, std::span<const Entity> es, Commit commit) {
    RelationIndex& index = *s.relations();
    const auto involved = [&](Entity e) {
        return s.try_record(e) != nullptr && index.involved(s, e);
    };
    if (std::none_of(es.begin(), es.end(), involved)) {
        if (es.size() == 1) {
            commit();
            return despawn_notifying(s, es[0]) ? 1 : 0;
        }
        return despawn_notifying(s, es, commit);
    }
    return index.despawn(s, es, commit);
}

}  // namespace tessera::detail

// The operation layer: structural changes applied now (one archetype move each, strong
// guarantee), the deferral flush, and the application of queued and buffered commands.
#include <tessera/detail/operations.hpp>
#include <tessera/error.hpp>

#include "required.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <unordered_map>

namespace tessera::detail {

[[noreturn]] void throw_not_alive(const char* op, Entity e, ComponentId id);

void put_value(Storage& s, TableRow at, ComponentId id, std::byte* value, bool existed) noexcept {
    if (const SparseSet* set = s.sparse(id)) [[unlikely]] {
        // A sparse component: its entry in the set exists already (prepare_add, apply_place).
        const ComponentInfo& info = set->info();
        if (info.size == 0) {
            if (value != nullptr && info.destroy != nullptr) info.destroy(value, 1);
            return;
        }
        const std::uint32_t row = set->find(at.archetype->entities[at.row]);
        std::byte* dst = set->value(row);
        if (existed && info.destroy != nullptr) info.destroy(dst, 1);
        info.relocate_values(dst, value, 1);
        if (existed) set->stamp_changed(row, s.tick());
        return;
    }
    const std::int32_t c = at.archetype->column_index(id);
    if (c < 0 || at.archetype->columns[static_cast<std::uint32_t>(c)].size == 0) {
        // A tag: no bytes to place (an enableable tag's flag is set by the move).
        const ComponentInfo& info = component_info(id);
        if (value != nullptr && info.destroy != nullptr) info.destroy(value, 1);
        return;
    }
    Column& col = at.archetype->columns[static_cast<std::uint32_t>(c)];
    std::byte* dst = col.data + std::size_t{at.row} * col.size;
    if (existed && col.destroy != nullptr) col.destroy(dst, 1);
    col.relocate_in(dst, value);
    if (existed)
        s.stamp_changed(*at.archetype, at.row, c);
    else
        s.stamp_added(at, c);
}

void apply_add(Storage& s, Entity e, std::span<const ComponentId> call_ids,
               std::byte* const* call_values, const char* op, Commit commit) {
    s.check_plain(call_ids, op);
    const EntityRecord* r = s.try_record(e);
    if (r == nullptr) throw_not_alive(op, e, call_ids[0]);
    const std::uint32_t from = r->archetype;
    Required required(s, call_ids, call_values);
    required.bring(s.archetype(from), op, e);
    const std::span<const ComponentId> ids = required.ids();
    std::byte* const* values = required.values();
    ScratchArray<bool> existed(ids.size(), s.resource());
    std::int32_t column = absent_column;
    const TableRow at = ids.size() == 1 ? s.prepare_add_one(e, ids[0], existed[0], column, op)
                                        : s.prepare_add(e, ids, existed.data(), op);
    for (std::size_t i = 0; i < ids.size(); ++i) put_value(s, at, ids[i], values[i], existed[i]);
    required.consumed();
    commit();
    if (s.hooked(ids)) s.hooks().added(s, e, from, ids, existed.data());
}

void apply_place(Storage& s, Entity e, std::span<const ComponentId> call_ids,
                 std::byte* const* call_values, Commit commit) {
    s.check_plain(call_ids, "World::spawn");
    const EntityRecord* r = s.try_record(e);
    TESSERA_ASSERT(r != nullptr && r->archetype == pending_archetype,
                   "apply_place: the entity is not pending");
    Required required(s, call_ids, call_values);
    required.bring(s.archetype(pending_archetype), "World::spawn");
    const std::span<const ComponentId> ids = required.ids();
    std::byte* const* values = required.values();
    for (const ComponentId id : ids) s.ensure_component(id);
    // The table takes the table components; sparse ones go to their sets (room first).
    ScratchArray<ComponentId> sorted(ids.size(), s.resource());
    std::size_t n = 0;
    for (const ComponentId id : ids) {
        if (s.sparse(id) == nullptr) sorted[n++] = id;
    }
    std::sort(sorted.data(), sorted.data() + n);
    Archetype& to = s.archetype_for({sorted.data(), n});
    s.reserve_rows(to, 1);
    if (n != ids.size()) s.reserve_sparse(ids, e.index);
    // Nothing below throws until the observers.
    const TableRow at = s.move_entity(e, *r, to);
    if (n != ids.size()) {
        for (const ComponentId id : ids) {
            if (SparseSet* set = s.sparse(id)) set->insert(e, s.tick());
        }
    }
    for (std::size_t i = 0; i < ids.size(); ++i) put_value(s, at, ids[i], values[i], false);
    required.consumed();
    commit();
    if (s.hooked(to) || s.hooked(ids)) s.hooks().spawned(s, e);  // ids: the sparse ones too
}

bool sparse_hooked(const Storage& s, Entity e) noexcept {
    if (!s.hooked()) return false;
    for (const SparseSet* set : s.sparse_sets()) {
        if (s.hooked(set->info().id) && set->contains(e)) return true;
    }
    return false;
}

bool apply_remove(Storage& s, Entity e, std::span<const ComponentId> ids, const char* op,
                  Commit commit) {
    if (s.hooked(ids)) return s.hooks().remove(s, e, ids, op, commit);
    // The core's removes change nothing or complete: the commit may follow.
    const bool removed = ids.size() == 1 ? s.remove_one(e, ids[0], op) : s.remove(e, ids, op);
    commit();
    return removed;
}

bool apply_despawn(Storage& s, Entity e) {
    if (s.hooked()) [[unlikely]]
        return s.hooks().despawn(s, e);
    return s.despawn(e);
}

namespace {
/// The live entities of `es`, each once, in the order given, appended to `out`; with
/// `skip_queued`, without those whose despawn is queued already. Reads all of `es` first (it
/// may be storage the despawns change, such as `children(p)` or a table's entity column).
/// @throws std::bad_alloc (scratch).
void live_distinct(Storage& s, std::span<const Entity> es, bool skip_queued,
                   std::pmr::vector<Entity>& out) {
    out.reserve(es.size());
    if (es.size() <= 16 && !skip_queued) {
        for (const Entity e : es) {
            if (s.try_record(e) != nullptr && std::find(out.begin(), out.end(), e) == out.end())
                out.push_back(e);
        }
        return;
    }
    // A bit per entity index (two live handles never share one).
    const auto mask = [](Entity e) { return std::uint64_t{1} << (e.index % 64); };
    std::pmr::vector<std::uint64_t> seen((std::size_t{s.record_count()} + 63) / 64, 0,
                                         s.resource());
    if (skip_queued) {
        for (const Command& c : s.deferred().pending()) {
            if (c.kind == Command::Kind::despawn && s.try_record(c.entity) != nullptr)
                seen[c.entity.index / 64] |= mask(c.entity);
        }
    }
    for (const Entity e : es) {
        if (s.try_record(e) == nullptr || (seen[e.index / 64] & mask(e)) != 0) continue;
        seen[e.index / 64] |= mask(e);
        out.push_back(e);
    }
}
}  // namespace

std::size_t apply_despawns(Storage& s, std::span<const Entity> es) {
    const auto concerned = [&s](Entity e) {
        const EntityRecord* r = s.try_record(e);
        return r != nullptr && (s.hooked(*r) || sparse_hooked(s, e));
    };
    if (!s.hooked() || (s.relations() == nullptr && std::none_of(es.begin(), es.end(), concerned)))
        [[likely]] {
        return s.despawn_many(es);  // reads `es` before it changes anything
    }
    // One call through the hooks, planned whole before the first change.
    std::pmr::vector<Entity> live(s.resource());
    live_distinct(s, es, false, live);
    return s.hooks().despawn_many(s, live, {});
}

std::size_t queue_despawns(Storage& s, std::span<const Entity> es) {
    std::pmr::vector<Entity> doomed(s.resource());
    live_distinct(s, es, true, doomed);
    s.deferred().reserve(doomed.size());
    for (const Entity e : doomed) s.deferred().push(Command::Kind::despawn, e);  // no throw now
    return doomed.size();
}

// ------------------------------------------------------------------------------- deferral

void flush(Storage& s) {
    // Observers of the changes applied here queue their own changes behind the rest, so one
    // loop applies everything: no recursion however long the chain of reactions.
    s.begin_defer();
    struct Leave {
        Storage& s;
        ~Leave() { (void)s.leave_defer(); }
    } leave{s};
    std::exception_ptr cycle;
    while (Command* c = s.deferred().front()) {
        try {
            apply_front(s, s.deferred(), c->entity, c->target);
        } catch (const Error& error) {
            if (error.code() != errc::hierarchy_cycle) throw;
            if (!cycle) cycle = std::current_exception();
        }
    }
    if (cycle) std::rethrow_exception(cycle);
}

namespace {
/// The commands of the call at the front of `pending` (not empty). A spawn's place and the adds
/// right behind it (at most `group` of them: all are queued before the place, so a partial group
/// can't happen); an add or remove and the followers that belong to it (same kind and entity,
/// `group` 0), at most `group` in all; any other command alone.
std::size_t call_extent(std::span<const Command> pending) noexcept {
    const Command& head = pending[0];
    std::size_t n = 1;
    if (head.kind == Command::Kind::place) {
        while (n - 1 < head.group && n < pending.size() && pending[n].kind == Command::Kind::add &&
               pending[n].entity == head.entity)
            ++n;
    } else if (head.kind == Command::Kind::add || head.kind == Command::Kind::remove) {
        const std::size_t want = std::max<std::size_t>(head.group, 1);
        while (n < want && n < pending.size() && pending[n].kind == head.kind &&
               pending[n].entity == head.entity && pending[n].group == 0)
            ++n;
    }
    return n;
}
}  // namespace

void reserve_queued(Storage& s) {
    const std::span<const Command> pending = s.deferred().pending();
    if (pending.empty()) return;
    std::pmr::memory_resource* mr = s.resource();
    // Where each entity the commands move is, as they apply in order (archetype by entity
    // index), the rows each target table gains, and the entries each sparse set gains.
    std::pmr::unordered_map<std::uint32_t, std::uint32_t> where(mr);
    std::pmr::unordered_map<std::uint32_t, std::size_t> gains(mr);
    std::pmr::unordered_map<const SparseSet*, std::size_t> entries(mr);
    std::pmr::vector<ComponentId> ids(mr);
    std::pmr::vector<ComponentId> brought(mr);
    std::pmr::vector<ComponentId> table(mr);
    std::size_t widest = 0;
    for (std::size_t i = 0; i < pending.size();) {
        const Command& c = pending[i];
        const std::size_t n = call_extent(pending.subspan(i));  // as `apply_front` applies it
        const std::span<const Command> call = pending.subspan(i, n);
        i += n;
        const EntityRecord* r = s.try_record(c.entity);
        if (r == nullptr) continue;
        const auto it = where.find(c.entity.index);
        const std::uint32_t at = it != where.end() ? it->second : r->archetype;
        if (at == dead_archetype) continue;
        Archetype& from = s.archetype(at);
        std::uint32_t to = at;
        switch (c.kind) {
            case Command::Kind::despawn: to = dead_archetype; break;
            case Command::Kind::place:
            case Command::Kind::add: {
                if (c.kind == Command::Kind::place && at != pending_archetype) continue;
                ids.clear();
                for (const Command& a : call.subspan(c.kind == Command::Kind::place ? 1 : 0))
                    ids.push_back(a.id);
                const std::span<const ComponentId> all =
                    Required::list(s, from, ids, c.entity, brought) ? std::span(brought)
                                                                    : std::span(ids);
                table.clear();
                for (const ComponentId id : all) {
                    s.ensure_component(id);
                    if (SparseSet* set = s.sparse(id)) {
                        if (!set->contains(c.entity)) set->reserve(c.entity.index, ++entries[set]);
                    } else if (!from.contains(id)) {
                        table.push_back(id);
                    }
                }
                if (table.empty() && c.kind == Command::Kind::add) continue;
                widest = std::max(widest, from.ids.size() + all.size());
                to = table.size() == 1 && at != pending_archetype
                         ? s.edge_target(from, table[0], true).index
                         : s.merged_target(from, table, true).index;
                break;
            }
            case Command::Kind::remove: {
                ids.clear();
                for (const Command& a : call) {
                    if (from.contains(a.id)) ids.push_back(a.id);
                }
                if (ids.empty()) continue;
                widest = std::max(widest, from.ids.size());
                to = ids.size() == 1 ? s.edge_target(from, ids[0], false).index
                                     : s.merged_target(from, ids, false).index;
                break;
            }
            case Command::Kind::relate:
            case Command::Kind::unrelate: continue;  // the relations' own (a hooked world)
        }
        where[c.entity.index] = to;
        if (to != dead_archetype) ++gains[to];
    }
    for (const auto& [index, rows] : gains) s.reserve_rows(s.archetype(index), rows);
    s.reserve_set_buffer(widest);
}

void end_defer_noexcept(Storage& s) noexcept {
    if (!s.leave_defer()) return;
    try {
        flush(s);
    } catch (...) {
        // The failing command and the rest stay queued; the next flush retries them.
    }
}

void take_back_queued(Storage& s, std::size_t queue_mark, Storage::IndexMark index_mark) noexcept {
    CommandQueue& q = s.deferred();
    const std::span<const Command> queued = q.since(queue_mark);
    // The pending entities of the queued spawns, newest first (each place command was pushed
    // as its entity was made).
    for (auto c = queued.rbegin(); c != queued.rend(); ++c) {
        if (c->kind == Command::Kind::place) s.release_pending(index_mark, {&c->entity, 1});
    }
    q.truncate(queue_mark);
}

// -------------------------------------------------------------------- queued commands

namespace {

/// Pops the front command of `q` (its value moved out: nothing left to destroy).
void pop_consumed(void* queue) noexcept {
    auto& q = *static_cast<CommandQueue*>(queue);
    q.front()->value = nullptr;
    q.pop();
}

/// Pops `n` commands whose values were consumed.
struct PopCall {
    CommandQueue* q;
    std::size_t n;
    static void run(void* self) noexcept {
        auto& p = *static_cast<PopCall*>(self);
        for (std::size_t k = 0; k < p.n; ++k) pop_consumed(p.q);
    }
    Commit commit() noexcept { return {&PopCall::run, this}; }
};

}  // namespace

Applied apply_front(Storage& s, CommandQueue& q, Entity target, Entity other) {
    const Command cmd = *q.front();  // the queue may grow (and move) while observers run
    const EntityRecord* r = s.try_record(target);
    auto drop = [&q] {  // pops the front command, destroying a value it still owns
        Command& c = *q.front();
        if (c.value != nullptr && c.info->destroy != nullptr) c.info->destroy(c.value, 1);
        c.value = nullptr;
        q.pop();
    };
    switch (cmd.kind) {
        case Command::Kind::place: {
            if (r == nullptr || r->archetype != pending_archetype) {
                drop();
                return {0, 1};
            }
            // The spawn's components: the adds right behind it.
            const std::span<const Command> pending = q.pending();
            const std::size_t n = call_extent(pending) - 1;
            ScratchArray<ComponentId> ids(n, s.resource());
            ScratchArray<std::byte*> values(n, s.resource());
            for (std::size_t k = 0; k < n; ++k) {
                ids[k] = pending[1 + k].id;
                values[k] = pending[1 + k].value;
            }
            PopCall pop{&q, n + 1};
            apply_place(s, target, ids.span(), values.data(), pop.commit());
            return {n + 1, 0};
        }
        case Command::Kind::despawn: {
            // Popped once the despawn can no longer fail: a bad_alloc leaves it queued.
            const Commit pop{&pop_consumed, &q};
            bool died = false;
            if (s.hooked()) {
                died = s.hooks().despawn_many(s, {&target, 1}, pop) != 0;
            } else {
                died = s.despawn(target);
                pop();
            }
            return died ? Applied{1, 0} : Applied{0, 1};
        }
        case Command::Kind::remove: {
            if (r == nullptr) {
                drop();
                return {0, 1};
            }
            const std::size_t n = call_extent(q.pending());
            const std::span<const Command> call = q.pending().first(n);
            for (const Command& c : call) s.check_plain({&c.id, 1}, "World::remove");
            const Archetype& from = s.archetype(r->archetype);
            ScratchArray<ComponentId> buffer(n, s.resource());
            std::size_t present = 0;
            for (const Command& c : call) {
                if (from.contains(c.id) || s.has(target, c.id)) buffer[present++] = c.id;  // sparse
            }
            const std::span<const ComponentId> ids(buffer.data(), present);
            if (present == 0) {
                for (std::size_t k = 0; k < n; ++k) q.pop();
                return {0, n};
            }
            // The commands leave the queue once the remove can no longer fail.
            PopCall pop{&q, n};
            apply_remove(s, target, ids, "World::remove", pop.commit());
            return {present, n - present};
        }
        case Command::Kind::add: {
            if (r == nullptr) {
                drop();
                return {0, 1};
            }
            const std::size_t n = call_extent(q.pending());
            const std::span<const Command> call = q.pending().first(n);
            ScratchArray<ComponentId> ids(n, s.resource());
            ScratchArray<std::byte*> values(n, s.resource());
            for (std::size_t k = 0; k < n; ++k) {
                ids[k] = call[k].id;
                values[k] = call[k].value;
            }
            PopCall pop{&q, n};
            apply_add(s, target, ids.span(), values.data(), "World::add", pop.commit());
            return {n, 0};
        }
        case Command::Kind::relate:
        case Command::Kind::unrelate: {
            const bool all = cmd.kind == Command::Kind::unrelate && cmd.group != 0;
            if (r == nullptr || (!all && s.try_record(other) == nullptr)) {
                drop();  // the source or the target died meanwhile (or was never alive)
                return {0, 1};
            }
            // The change pops the command once it can no longer fail (before its observers run).
            // Only the relations know these commands: they come with their hooks.
            const Commit pop{&pop_consumed, &q};
            try {
                return cmd.hooks->apply(s, cmd, target, other, pop) ? Applied{1, 0} : Applied{0, 1};
            } catch (const Error& error) {
                if (error.code() == errc::hierarchy_cycle)
                    drop();  // dropped, reported by the caller
                throw;
            }
        }
    }
    return {0, 0};
}

}  // namespace tessera::detail

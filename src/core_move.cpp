// Row moves: a row from one table to another along an edge (the fast paths of one add or
// remove, and the general move), and freeing a row. Like the rest of the core, each mutating
// function does all that can fail first.
#include <tessera/detail/core.hpp>
#include <tessera/error.hpp>

#include <algorithm>
#include <bit>
#include <cstring>
#include <iterator>
#include <memory>

namespace tessera::detail {

[[noreturn]] void throw_not_alive(const char* op, Entity e, ComponentId id);

namespace {

/// Copies one value of `n` bytes between rows that don't overlap, inline for every size
/// (overlapping head and tail words, 16-byte blocks past 16), so a loop of row moves calls
/// nothing and keeps its registers.
[[gnu::always_inline]] inline void copy_bytes(std::byte* d, const std::byte* s,
                                              std::size_t n) noexcept {
    const auto copy = [d, s]<std::size_t W>(std::size_t at) {
        unsigned char word[W];
        std::memcpy(word, s + at, W);
        std::memcpy(d + at, word, W);
    };
    // The common sizes first (a float or an int; two of them, or a pointer).
    if (n == 4) [[likely]] {
        copy.operator()<4>(0);
    } else if (n == 8) {
        copy.operator()<8>(0);
    } else if (n >= 16) {
        for (std::size_t at = 0; at + 16 < n; at += 16) copy.operator()<16>(at);
        copy.operator()<16>(n - 16);
    } else if (n >= 8) {
        copy.operator()<8>(0);
        copy.operator()<8>(n - 8);
    } else if (n >= 4) {
        copy.operator()<4>(0);
        copy.operator()<4>(n - 4);
    } else if (n >= 2) {
        copy.operator()<2>(0);
        copy.operator()<2>(n - 2);
    } else if (n == 1) {
        copy.operator()<1>(0);
    }
}

// Moves one value: its relocate function, else its bytes.
inline void move_value(const Column& c, std::byte* d, std::byte* s) noexcept {
    if (c.relocate != nullptr)
        c.relocate(d, s, 1);
    else
        copy_bytes(d, s, c.size);
}

// Folds a column's whole-chunk stamp into its rows, so a row with an older tick can enter.
void settle(Column& c, std::uint32_t rows) noexcept {
    for (std::uint32_t i = 0; i < rows; ++i) {
        if (c.log != nullptr) c.log->wrote(i, c.changed[i], c.changed_at(i));  // rows raised
        c.changed[i] = c.changed_at(i);
    }
    c.raise_blocks(0, rows, c.stamped);
    c.stamped = 0;
}

// The row logs of `a` as row `row` is freed and `last` fills it (or goes, when the same): out
// of line, so that freeing a row of a table without a log stays one test.
[[gnu::cold, gnu::noinline]] void unlist_freed(const Archetype& a, std::uint32_t row,
                                               std::uint32_t last) noexcept {
    for (const Column& c : a.columns) {
        if (c.log == nullptr) continue;
        if (row == last)
            c.log->dropped(row, c.changed[row]);
        else
            c.log->filled(row, last, c.changed[row], c.changed[last]);
    }
}

// Moves row `src` of `from` to row `dst` of `to` (same component): value, ticks, enable flag.
// Within one table (`&from == &to`) the chunk stamp applies to both rows alike.
inline void move_row(const Column& from, std::uint32_t src, const Column& to,
                     std::uint32_t dst) noexcept {
    move_value(from, to.data + std::size_t{dst} * to.size,
               from.data + std::size_t{src} * from.size);
    if (to.changed != nullptr) {
        to.added[dst] = from.added[src];
        const std::uint64_t tick = &from == &to ? from.changed[src] : from.changed_at(src);
        // A row log: a row entering another table is new there; within one table `free_row`
        // keeps the log (the hole's entry and the last row's).
        if (to.log != nullptr && &from != &to) [[unlikely]]
            to.log->entered(dst, tick);
        to.put_changed(dst, tick);
    }
    if (to.enabled != nullptr) to.enabled[dst] = from.enabled[src];
}

}  // namespace

Archetype& Core::merged_target(const Archetype& from, std::span<const ComponentId> ids,
                               bool adding) {
    // The set is built in place in the kept buffer: sorted, each id once.
    std::pmr::vector<ComponentId>& set = set_buffer_;
    set.clear();
    if (adding) {
        set.reserve(from.ids.size() + ids.size());
        set.assign(from.ids.begin(), from.ids.end());
        for (const ComponentId id : ids) {
            const auto at = std::lower_bound(set.begin(), set.end(), id);
            if (at == set.end() || *at != id) set.insert(at, id);
        }
    } else {
        set.reserve(from.ids.size());
        for (const ComponentId id : from.ids) {
            if (std::find(ids.begin(), ids.end(), id) == ids.end()) set.push_back(id);
        }
    }
    return archetype_for(set);
}

Archetype& Core::edge_target(Archetype& from, ComponentId id, bool adding) {
    if (const EdgeMap::Edge* e = from.edges.find(id.value); e != nullptr) {
        if (Archetype* to = adding ? e->add : e->remove) return *to;
    }
    if (adding) ensure_component(id);
    const ComponentId one[] = {id};
    Archetype& to = merged_target(from, one, adding);
    // Only tables with rows get edges: the fast paths (`add_bytes`) move rows along them. No
    // edge leads back to its own table (adding a component the table has, removing one it
    // lacks), so an edge found means the component is absent (add) or present (remove).
    if (from.index == pending_archetype || from.index == dead_archetype || &to == &from) return to;
    EdgeMap::Edge& edge = from.edges.get(id.value);
    (adding ? edge.add : edge.remove) = &to;
    // The pivot is the column `id` has in the larger table of the two.
    const std::int32_t c = (adding ? to : from).column_index(id);
    (adding ? edge.add_pivot : edge.remove_pivot) =
        c >= 0 ? static_cast<std::uint16_t>(c) : EdgeMap::Edge::no_column;
    return to;
}

// Moves the last row of `a` into `row`, whose values are already gone (destroyed or moved out).
[[gnu::always_inline]] inline void Core::free_row(Archetype& a, std::uint32_t row) noexcept {
    const std::uint32_t last = a.size - 1;
    if (a.logged) [[unlikely]]
        unlist_freed(a, row, last);
    if (row != last) {
        if (a.tracked || a.enableable) {
            for (const Column& c : a.columns) move_row(c, last, c, row);
        } else {
            for (const Column& c : a.columns) {
                move_value(c, c.data + std::size_t{row} * c.size,
                           c.data + std::size_t{last} * c.size);
            }
        }
        const Entity moved = a.entities[last];
        a.entities[row] = moved;
        record_data_[moved.index].row = row;
    }
    --a.size;
    ++a.freed;
}

inline void Core::free_record(std::uint32_t index) noexcept {
    EntityRecord& r = record_data_[index];
    r.archetype = dead_archetype;
    r.generation = next_generation(r.generation);
    r.row = free_head_;
    free_head_ = index;
    ++free_count_;
    --alive_;
}

bool Core::despawn(Entity e) noexcept {
    if (try_record(e) == nullptr) return false;
    const EntityRecord& r = record_data_[e.index];
    if (!sparse_sets_.empty()) [[unlikely]]
        erase_sparse(e);
    if (r.archetype != pending_archetype) {
        Archetype& a = *archetypes_[r.archetype];
        if (!a.bytewise) destroy_rows(a, r.row, 1);  // bytewise values are never destroyed
        free_row(a, r.row);
    }
    free_record(e.index);
    return true;
}

std::size_t Core::despawn_many(std::span<const Entity> es) {
    // The entity index does not move here: locals, so the loops need not reload it.
    EntityRecord* const records = record_data_;
    const std::uint32_t count = record_count_;
    const auto live = [records, count](Entity e) noexcept -> EntityRecord* {
        if (e.index >= count) return nullptr;
        EntityRecord* r = records + e.index;
        return r->generation == e.generation && r->archetype != dead_archetype ? r : nullptr;
    };
    // Everything that can fail comes first: a bit per row of each table an entity is in. When
    // the entities are many (a word per 64 of them covers every row of the world), every table
    // gets its bits without a pass to find which are concerned.
    std::pmr::vector<std::uint32_t> offset(archetypes_.size(), no_index, mr_);
    std::pmr::vector<std::uint32_t> touched(mr_);
    std::pmr::vector<std::uint64_t> bits(mr_);
    const auto give_bits = [&](std::uint32_t index) {
        offset[index] = static_cast<std::uint32_t>(bits.size());
        bits.resize(bits.size() + (archetypes_[index]->size + 63) / 64);
        touched.push_back(index);
    };
    if (es.size() * 64 >= alive_) {
        for (std::uint32_t index = empty_archetype; index < archetypes_.size(); ++index) {
            if (index != pending_archetype && archetypes_[index]->size != 0) give_bits(index);
        }
    } else {
        for (const Entity e : es) {
            const EntityRecord* r = live(e);
            if (r != nullptr && offset[r->archetype] == no_index) give_bits(r->archetype);
        }
    }
    // Nothing below throws. The records in the order given, as one despawn at a time would
    // free them (a handle given twice is dead the second time), each row's bit set.
    const std::uint32_t* const at = offset.data();
    std::uint64_t* const row_bits = bits.data();
    std::uint32_t head = free_head_;
    std::size_t n = 0;
    for (const Entity e : es) {
        EntityRecord* r = live(e);
        if (r == nullptr) continue;
        if (!sparse_sets_.empty()) [[unlikely]]
            erase_sparse(e);
        if (r->archetype != pending_archetype) [[likely]]
            row_bits[at[r->archetype] + r->row / 64] |= std::uint64_t{1} << (r->row % 64);
        r->archetype = dead_archetype;
        r->generation = next_generation(r->generation);
        r->row = head;
        head = e.index;
        ++n;
    }
    free_head_ = head;
    free_count_ += n;
    alive_ -= n;
    // Each table from its highest freed row down: the last row, which fills a hole, is then
    // never one to free. Freed rows at the end just shorten the table, a word of them at once.
    for (const std::uint32_t index : touched) {
        Archetype& a = *archetypes_[index];
        const bool destroy = !a.bytewise;  // bytewise values are never destroyed
        const std::uint64_t* words = bits.data() + offset[index];
        for (std::size_t w = (std::size_t{a.size} + 63) / 64; w-- > 0;) {
            for (std::uint64_t word = words[w]; word != 0;) {
                const auto first = static_cast<std::uint32_t>(w * 64);
                if (word == ~std::uint64_t{0} && a.size == first + 64) {
                    if (destroy) destroy_rows(a, first, 64);
                    if (a.logged) drop_logged_rows(a, first, a.size);
                    a.size = first;
                    a.freed += 64;
                    break;
                }
                const int high = 63 - std::countl_zero(word);
                word &= ~(std::uint64_t{1} << high);
                const std::uint32_t row = first + static_cast<std::uint32_t>(high);
                if (destroy) destroy_rows(a, row, 1);
                free_row(a, row);
            }
        }
    }
    return n;
}

std::size_t Core::despawn_tables(std::span<const std::uint32_t> tables) noexcept {
    std::size_t n = 0;
    for (const std::uint32_t index : tables) {
        Archetype& a = *archetypes_[index];
        std::uint32_t head = free_head_;
        for (std::uint32_t row = 0; row < a.size; ++row) {
            const std::uint32_t i = a.entities[row].index;
            if (!sparse_sets_.empty()) [[unlikely]]
                erase_sparse(a.entities[row]);
            EntityRecord& r = record_data_[i];
            r.archetype = dead_archetype;
            r.generation = next_generation(r.generation);
            r.row = head;
            head = i;
        }
        free_head_ = head;
        free_count_ += a.size;
        alive_ -= a.size;
        destroy_rows(a, 0, a.size);
        if (a.logged) drop_logged_rows(a, 0, a.size);
        n += a.size;
        a.freed += a.size;
        a.size = 0;
    }
    return n;
}

namespace {
/// Row `dst` of columns `into`.. gets the values of row `src` of columns [c, end) (one to
/// one), whose hole the values of row `last` fill (a copy onto itself when `src` is last).
[[gnu::always_inline]] inline void move_columns(const Column* c, const Column* end,
                                                const Column* into, std::size_t src,
                                                std::size_t dst, std::size_t last) noexcept {
    for (; c != end; ++c, ++into) {
        const std::size_t size = c->size;
        std::byte* const out = into->data + dst * size;
        std::byte* const hole = c->data + src * size;
        const std::byte* const tail = c->data + last * size;
        // One test of the size for both copies in the common cases.
        if (size == 4) [[likely]] {
            copy_bytes(out, hole, 4);
            copy_bytes(hole, tail, 4);
        } else if (size == 8) {
            copy_bytes(out, hole, 8);
            copy_bytes(hole, tail, 8);
        } else {
            copy_bytes(out, hole, size);
            copy_bytes(hole, tail, size);
        }
    }
}
}  // namespace

template <bool Adding>
[[gnu::always_inline]] inline std::uint32_t Core::move_bytes(Entity e, std::uint32_t src,
                                                             Archetype& from, Archetype& to,
                                                             std::uint32_t pivot) noexcept {
    const std::uint32_t dst = to.size;
    const std::uint32_t last = from.size - 1;
    // Columns are in id order in both tables: they pair up one to one on each side of the
    // pivot, the column of the added (or removed) component in the larger table.
    const Column* c = from.columns.data();
    const Column* const end = std::to_address(from.columns.end());
    const Column* into = to.columns.data();
    if (pivot != EdgeMap::Edge::no_column) {
        move_columns(c, c + pivot, into, src, dst, last);
        c += pivot;
        into += pivot;
        if constexpr (Adding) {
            ++into;  // the added column: the caller constructs its value
        } else {
            // The removed value is trivially destructible: its hole only needs filling.
            copy_bytes(c->data + std::size_t{src} * c->size, c->data + std::size_t{last} * c->size,
                       c->size);
            ++c;
        }
    }
    move_columns(c, end, into, src, dst, last);
    to.entities[dst] = e;
    ++to.size;
    // The last row fills the hole (when `e` was last, it is `e` itself: its record is set
    // again below).
    const Entity moved = from.entities[last];
    from.entities[src] = moved;
    record_data_[moved.index].row = src;
    --from.size;
    ++from.freed;
    EntityRecord& r = record_data_[e.index];
    r.archetype = to.index;
    r.row = dst;
    return dst;
}

namespace {
std::byte tag_slot;  // where `add_bytes` says a tag's (absent) value goes
}  // namespace

std::byte* Core::add_bytes(Entity e, ComponentId id) noexcept {
    // A dead record's generation can match a forged handle, but it points at the sentinel
    // archetype, which has no components and no edges.
    if (e.index >= record_count_) return nullptr;
    const EntityRecord& r = record_data_[e.index];
    if (r.generation != e.generation) return nullptr;
    Archetype& from = *archetypes_[r.archetype];
    // An add edge exists only when `from` lacks `id` (see edge_target).
    const EdgeMap::Edge* edge = from.edges.find(id.value);
    if (edge == nullptr || edge->add == nullptr) return nullptr;
    Archetype& to = *edge->add;
    if (to.size == to.capacity || from.slow_rows || to.slow_rows) return nullptr;
    const std::uint32_t pivot = edge->add_pivot;
    const std::uint32_t row = move_bytes<true>(e, r.row, from, to, pivot);
    if (pivot == EdgeMap::Edge::no_column) return &tag_slot;
    const Column& c = to.columns[pivot];
    return c.data + std::size_t{row} * c.size;
}

bool Core::remove_bytes(Entity e, ComponentId id) noexcept {
    if (e.index >= record_count_) return false;
    const EntityRecord& r = record_data_[e.index];
    if (r.generation != e.generation) return false;
    Archetype& from = *archetypes_[r.archetype];
    // A remove edge exists only when `from` has `id` (see edge_target).
    const EdgeMap::Edge* edge = from.edges.find(id.value);
    if (edge == nullptr || edge->remove == nullptr) return false;
    Archetype& to = *edge->remove;
    if (to.size == to.capacity || from.slow_rows || to.slow_rows) return false;
    move_bytes<false>(e, r.row, from, to, edge->remove_pivot);
    return true;
}

TableRow Core::prepare_add_one(Entity e, ComponentId id, bool& existed, std::int32_t& column,
                               const char* op) {
    const EntityRecord* r = try_record(e);
    if (r == nullptr) throw_not_alive(op, e, id);
    Archetype& from = *archetypes_[r->archetype];
    column = from.column_index(id);
    existed = column != absent_column;
    if (existed) return {&from, r->row};
    const EdgeMap::Edge* edge = from.edges.find(id.value);
    Archetype* target = nullptr;
    if (edge != nullptr && edge->add != nullptr) {
        target = edge->add;
    } else {
        // A sparse component never has an edge: it is added to its set, the row stays.
        ensure_component(id);
        if (SparseSet* set = sparse(id)) [[unlikely]] {
            column = absent_column;
            existed = set->contains(e);
            if (!existed) {
                set->reserve(e.index, 1);
                set->insert(e, tick());  // the caller constructs the value
            }
            return {&from, r->row};
        }
        target = &edge_target(from, id, true);
        edge = from.edges.find(id.value);  // still none from the pending table
    }
    Archetype& to = *target;
    if (to.size == to.capacity) reserve_rows(to, 1);
    column = to.column_index(id);
    // Nothing below throws.
    if (edge != nullptr && !(from.slow_rows || to.slow_rows))
        return {&to, move_bytes<true>(e, r->row, from, to, edge->add_pivot)};
    return move_entity(e, *r, to);
}

TableRow Core::move_entity(Entity e, const EntityRecord& rec, Archetype& to) noexcept {
    Archetype& from = *archetypes_[rec.archetype];
    const std::uint32_t src = rec.row;
    const std::uint32_t dst = to.size;
    const bool plain = !(from.tracked || from.enableable || to.tracked || to.enableable);
    for (const Column& c : from.columns) {
        const std::int32_t k = to.column_index(c.id);  // >= 0: `to` has the column (flags-only too)
        if (k >= 0 && plain) {
            const Column& into = to.columns[static_cast<std::uint32_t>(k)];
            move_value(c, into.data + std::size_t{dst} * c.size,
                       c.data + std::size_t{src} * c.size);
        } else if (k >= 0) {
            Column& into = to.columns[static_cast<std::uint32_t>(k)];
            if (into.stamped != 0 && c.changed != nullptr && c.changed_at(src) < into.stamped) {
                settle(into, to.size);  // else the row would look changed at the stamp
            }
            move_row(c, src, into, dst);
        } else if (c.destroy != nullptr) {
            c.destroy(c.data + std::size_t{src} * c.size, 1);
        }
    }
    if (to.enableable) {
        // Components new to the row start enabled; their values are the caller's to construct.
        for (Column& c : to.columns) {
            if (c.enabled != nullptr && !from.contains(c.id)) c.enabled[dst] = 1;
        }
    }
    to.entities[dst] = e;
    ++to.size;
    if (from.index != pending_archetype) free_row(from, src);
    EntityRecord& r = record_data_[e.index];
    r.archetype = to.index;
    r.row = dst;
    return {&to, dst};
}

TableRow Core::prepare_add(Entity e, std::span<const ComponentId> ids, bool* existed,
                           const char* op) {
    const EntityRecord* r = try_record(e);
    if (r == nullptr) throw_not_alive(op, e, ids[0]);
    Archetype& from = *archetypes_[r->archetype];
    for (ComponentId id : ids) ensure_component(id);
    if (!sparse_sets_.empty() && std::any_of(ids.begin(), ids.end(), [&](ComponentId id) {
            return sparse(id) != nullptr;
        })) [[unlikely]] {
        return prepare_add_sparse(e, *r, ids, existed);
    }
    bool all = true;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        existed[i] = from.contains(ids[i]);
        all = all && existed[i];
    }
    if (all) return {&from, r->row};
    Archetype* to = nullptr;
    if (ids.size() == 1) {
        to = &edge_target(from, ids[0], true);
    } else {
        to = &merged_target(from, ids, true);
    }
    reserve_rows(*to, 1);
    return move_entity(e, *r, *to);
}

TableRow Core::prepare_add_sparse(Entity e, const EntityRecord& r, std::span<const ComponentId> ids,
                                  bool* existed) {
    // Everything that can fail first: room in each set, then the table part's target and room
    // in it; then the row moves (when a table component is new) and the new sparse entries are
    // made, neither of which throws.
    Archetype& from = *archetypes_[r.archetype];
    ScratchArray<ComponentId> table(ids.size(), mr_);
    std::size_t new_table = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (SparseSet* set = sparse(ids[i])) {
            existed[i] = set->contains(e);
            if (!existed[i]) set->reserve(e.index, 1);
        } else {
            existed[i] = from.contains(ids[i]);
            if (!existed[i]) table[new_table++] = ids[i];
        }
    }
    TableRow at{&from, r.row};
    if (new_table != 0) {
        Archetype& to = new_table == 1 ? edge_target(from, table[0], true)
                                       : merged_target(from, {table.data(), new_table}, true);
        reserve_rows(to, 1);
        at = move_entity(e, r, to);
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (SparseSet* set = sparse(ids[i]); set != nullptr && !existed[i]) set->insert(e, tick());
    }
    return at;
}

bool Core::remove(Entity e, std::span<const ComponentId> ids, const char* op) {
    const EntityRecord* r = try_record(e);
    if (r == nullptr) throw_not_alive(op, e, ids[0]);
    Archetype& from = *archetypes_[r->archetype];
    // Sparse components are in no table: `removal_target` leaves them out of the set (a set
    // difference), and they are erased from their sets once the row has moved (no throw).
    const bool in_sets =
        !sparse_sets_.empty() && std::any_of(ids.begin(), ids.end(), [&](ComponentId id) {
            const SparseSet* set = sparse(id);
            return set != nullptr && set->contains(e);
        });
    if (std::none_of(ids.begin(), ids.end(), [&](ComponentId id) { return from.contains(id); })) {
        if (!in_sets) return false;
    } else {
        Archetype& to = removal_target(from, ids);
        reserve_rows(to, 1);
        move_entity(e, *r, to);
    }
    if (in_sets) {
        for (const ComponentId id : ids) {
            if (SparseSet* set = sparse(id)) set->erase(e);
        }
    }
    return true;
}

Archetype& Core::removal_target(Archetype& from, std::span<const ComponentId> ids) {
    return ids.size() == 1 ? edge_target(from, ids[0], false) : merged_target(from, ids, false);
}

}  // namespace tessera::detail

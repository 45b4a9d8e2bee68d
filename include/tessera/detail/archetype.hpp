/// @file detail/archetype.hpp
/// Archetype tables: the columns of one component set, their change ticks and enable flags,
/// and the edges to the tables one add or remove away. Internal, not API.
///
/// Layout: an archetype is a sorted set of component ids plus a table of rows. Each non-tag
/// component has a column (one contiguous, 64-byte aligned array of values); tracked components
/// add two tick arrays (added, changed; the changed array ends with a bound per block of rows),
/// enableable ones a byte per row (an enableable tag has a column of flags and no value bytes).
/// Every column and the entity column share the archetype's
/// capacity. The id table maps a component id to its column (dense by id value), so a typed
/// lookup is one load.
#pragma once

#include <tessera/component.hpp>
#include <tessera/entity.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory_resource>
#include <vector>

namespace tessera::detail {

/// What the id table holds: a column index (>= 0), or one of these.
inline constexpr std::int32_t absent_column = -1;
inline constexpr std::int32_t tag_column = -2;

/// Whether a component has a column in the tables that hold it: every non-tag does, and an
/// enableable tag does too (its column has no value bytes, only the enable flags).
inline bool has_column(const ComponentInfo& ci) noexcept {
    return !ci.is_tag() || ci.enableable;
}

/// Rows per entry of `Column::changed_max`.
inline constexpr std::uint32_t tick_block = 16;

/// Blocks of `tick_block` rows in `rows` rows (rounded up).
constexpr std::size_t tick_blocks(std::size_t rows) noexcept {
    return (rows + tick_block - 1) / tick_block;
}
/// Words of a changed-tick array for `capacity` rows: a tick per row, then a bound per block.
constexpr std::size_t changed_words(std::size_t capacity) noexcept {
    return capacity + tick_blocks(capacity);
}

/// Raises a block bound (`Column::changed_max`) to `tick`. par_each workers may raise one bound
/// at once, all with the same tick (writers of one component never run concurrently with
/// different ticks): relaxed atomics make that a plain load and store.
inline void raise_bound(std::uint64_t& bound, std::uint64_t tick) noexcept {
    std::atomic_ref<std::uint64_t> b(bound);
    if (b.load(std::memory_order_relaxed) < tick) b.store(tick, std::memory_order_relaxed);
}

/// Reads a block bound that `par_each` workers may be raising at the same time.
inline std::uint64_t load_bound(const std::uint64_t& bound) noexcept {
    return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(bound))
        .load(std::memory_order_relaxed);
}

/// The rows of one column written since an epoch (a replicator's oldest unacknowledged
/// baseline), so that a reader of a few changes among many rows visits only those: exactly
/// the rows `r < size` with `changed[r] > epoch` (the per-row ticks; a whole-chunk stamp,
/// `Column::stamped`, is not listed: it changes every row), each once, in the order of their
/// first write since the epoch. Made only for the components a `net::Replicator` asks it for
/// (`Core::log_rows`); every other column has none (`Column::log` null), and every path that
/// writes a changed tick tests that pointer first. Allocated with its column's tick arrays,
/// `capacity` entries, so an append never allocates (`set_changed` stays noexcept).
///
/// A path that changes ticks without keeping the list right sets `valid` false (the reader
/// then scans block bounds and rebuilds it). Appends may come from several `par_each` workers
/// at once (each row is one worker's): `count` and `valid` are then touched through atomics.
struct RowLog {
    std::uint64_t epoch = 0;               ///< rows whose changed tick is above it are listed
    const std::uint64_t* ticks = nullptr;  ///< the column's `changed` (a `Mut<T>` finds its row)
    std::uint32_t count = 0;               ///< entries of `rows()`
    std::uint32_t capacity = 0;            ///< rows of the table's arrays
    bool valid = true;                     ///< false: the list is not to be trusted

    /// Bytes of a log (header and both arrays) for `capacity` rows.
    static constexpr std::size_t bytes(std::size_t capacity) noexcept {
        return sizeof(RowLog) + 2 * capacity * sizeof(std::uint32_t);
    }
    /// The listed rows (`count` of them), right behind the header.
    [[nodiscard]] std::uint32_t* rows() noexcept {
        return reinterpret_cast<std::uint32_t*>(this + 1);
    }
    [[nodiscard]] const std::uint32_t* rows() const noexcept {
        return reinterpret_cast<const std::uint32_t*>(this + 1);
    }
    /// By row, its index in `rows()` (meaningful while the row is listed).
    [[nodiscard]] std::uint32_t* positions() noexcept { return rows() + capacity; }

    /// Whether the list is right (`valid`, read as workers may be writing it).
    [[nodiscard]] bool trusted() const noexcept {
        return std::atomic_ref<bool>(const_cast<bool&>(valid)).load(std::memory_order_relaxed);
    }
    /// Marks the list wrong: readers rebuild it (`rebuild`) or scan the block bounds.
    void distrust() noexcept {
        std::atomic_ref<bool>(valid).store(false, std::memory_order_relaxed);
    }
    /// Lists `row` (not listed). Safe from several workers at once; one past a full list (a
    /// path broke it: it can hold every row once) only marks it wrong.
    void append(std::uint32_t row) noexcept {
        const std::uint32_t n =
            std::atomic_ref<std::uint32_t>(count).fetch_add(1, std::memory_order_relaxed);
        if (n < capacity) [[likely]] {
            rows()[n] = row;
            positions()[row] = n;
        } else {
            distrust();
        }
    }
    /// `row`'s changed tick goes from `old` to `tick`: listed on its first write since the
    /// epoch (dedup by the old tick).
    void wrote(std::uint32_t row, std::uint64_t old, std::uint64_t tick) noexcept {
        if (old <= epoch && tick > epoch) {
            if (trusted()) append(row);
        } else if (old > epoch && tick <= epoch) {
            distrust();  // a tick going back (rare): unlisting is not safe from workers
        }
    }
    /// A new row (not listed) gets changed tick `tick`.
    void entered(std::uint32_t row, std::uint64_t tick) noexcept {
        if (tick > epoch && trusted()) append(row);
    }
    /// Rows [first, first + n), new to the table, get changed tick `tick` (one thread).
    void entered_range(std::uint32_t first, std::size_t n, std::uint64_t tick) noexcept {
        if (tick <= epoch || !valid) return;
        for (std::uint32_t row = first; row < first + n; ++row) {
            rows()[count] = row;
            positions()[row] = count++;
        }
    }
    /// Unlists the listed `row`. One thread, like the rest below.
    void unlist(std::uint32_t row) noexcept {
        std::uint32_t* const r = rows();
        std::uint32_t* const p = positions();
        const std::uint32_t at = p[row];
        const std::uint32_t moved = r[--count];
        r[at] = moved;
        p[moved] = at;
    }
    /// Row `row` is freed and the last row, `last` (> `row`), fills it; `t_row` and `t_last`
    /// are their changed ticks before the move.
    void filled(std::uint32_t row, std::uint32_t last, std::uint64_t t_row,
                std::uint64_t t_last) noexcept {
        if (!valid) return;
        const bool listed = t_row > epoch;
        if (t_last > epoch && !listed) {  // `row` takes the entry of `last`
            const std::uint32_t at = positions()[last];
            rows()[at] = row;
            positions()[row] = at;
        } else if (t_last > epoch) {
            unlist(last);
        } else if (listed) {
            unlist(row);
        }
    }
    /// Row `row`, of changed tick `tick`, leaves the table without another filling it (the
    /// table's last rows).
    void dropped(std::uint32_t row, std::uint64_t tick) noexcept {
        if (valid && tick > epoch) unlist(row);
    }
    /// Moves the epoch to `to`: the rows no longer newer leave the list. O(count), or O(1)
    /// when `newest`, a bound on every row's tick (`Column::changed_last`), is not newer.
    void trim(std::uint64_t to, std::uint64_t newest) noexcept {
        const bool back = to < epoch;
        epoch = to;
        if (back) valid = false;  // rows older than the old epoch were never listed
        if (!valid) return;
        if (newest <= to) {
            count = 0;
            return;
        }
        std::uint32_t* const r = rows();
        std::uint32_t* const p = positions();
        std::uint32_t kept = 0;
        for (std::uint32_t i = 0; i < count; ++i) {
            const std::uint32_t row = r[i];
            if (ticks[row] <= to) continue;
            r[kept] = row;
            p[row] = kept++;
        }
        count = kept;
    }
    /// Lists again every row of [0, size) newer than the epoch, from the block bounds (which
    /// follow `ticks`) and the row ticks: O(blocks + rows of the blocks with a change).
    void rebuild(std::uint32_t size) noexcept {
        count = 0;
        valid = true;
        const std::uint64_t* const bounds = ticks + capacity;
        for (std::uint32_t first = 0; first < size; first += tick_block) {
            if (bounds[first / tick_block] <= epoch) continue;
            const std::uint32_t end = size - first < tick_block ? size : first + tick_block;
            for (std::uint32_t row = first; row < end; ++row) {
                if (ticks[row] <= epoch) continue;
                rows()[count] = row;
                positions()[row] = count++;
            }
        }
    }
};

/// One component's values in an archetype (the hooks a row move needs are copied here from the
/// `ComponentInfo`). Aligned to 16 so that its size (96) stays a multiple a row move indexes
/// with shifts and adds, as the 80 bytes before `changed_last` did (88 would take a multiply
/// on the add/remove fast paths).
struct alignas(16) Column {
    // What a row move reads (`data`, `size`, `relocate`) comes first: one cache line a column.
    std::byte* data = nullptr;  ///< `capacity * size` bytes
    ComponentId id;             ///< info->id
    std::uint32_t size = 0;     ///< info->size
    /// info->relocate: null when values move with memcpy
    void (*relocate)(void* dst, void* src, std::size_t n) noexcept = nullptr;
    std::uint64_t* added = nullptr;    ///< per-row added tick; null until tracked
    std::uint64_t* changed = nullptr;  ///< per-row changed tick; null until tracked
    /// Per block of `tick_block` rows, a bound on their changed ticks (each row's is at most
    /// its block's), so a scan for changes skips a block whose bound is old; it may be above
    /// every row's (rows left). `changed_words(capacity)` words from `changed`: this is
    /// `changed + capacity`. Null until tracked.
    std::uint64_t* changed_max = nullptr;
    std::uint8_t* enabled = nullptr;  ///< per-row enable flag; null unless enableable
    /// info->destroy: null when trivially destructible
    void (*destroy)(void* p, std::size_t n) noexcept = nullptr;
    const ComponentInfo* info = nullptr;
    /// Every row's changed tick is at least this: a query's `T&` term stamps a whole chunk in
    /// O(1) here instead of writing each row. Rows leaving the table take the larger of the
    /// two; before an older row enters, it is folded into the rows (see `Storage::settle`).
    std::uint64_t stamped = 0;
    /// A bound on the changed tick of every row (with `stamped`: see `changed_bound`), raised
    /// by every path that stamps a changed or added tick or brings a row in (`set_changed`,
    /// `raise_blocks`, `Mut<T>::write`, the transform pass), so that a reader of changes skips
    /// a column with nothing newer in O(1), before looking at `changed_max`. Like the block
    /// bounds it may be above every row's (rows left). Mutable: the stamping paths are const
    /// (they write through the column's arrays). 0 until tracked.
    mutable std::uint64_t changed_last = 0;
    /// The rows written since a replicator's epoch (see `RowLog`), or null: only the
    /// components a `net::Replicator` replicates have one. (It fills what was padding: the
    /// column stays 96 bytes.)
    RowLog* log = nullptr;

    /// Moves the value at `src` into the uninitialised `dst` (a slot of this column), leaving
    /// `src` destroyed.
    void relocate_in(std::byte* dst, std::byte* src) const noexcept {
        if (relocate != nullptr)
            relocate(dst, src, 1);
        else
            std::memcpy(dst, src, size);
    }

    /// The changed tick of `row` (tick arrays must exist).
    [[nodiscard]] std::uint64_t changed_at(std::uint32_t row) const noexcept {
        return changed[row] > stamped ? changed[row] : stamped;
    }
    /// Sets `row`'s changed tick (tick arrays must exist), listing the row in the row log
    /// when there is one.
    void set_changed(std::uint32_t row, std::uint64_t tick) const noexcept {
        if (log != nullptr) [[unlikely]]
            log->wrote(row, changed[row], tick);
        put_changed(row, tick);
    }
    /// Sets `row`'s changed tick and raises the bounds; the row log is the caller's to keep.
    void put_changed(std::uint32_t row, std::uint64_t tick) const noexcept {
        changed[row] = tick;
        raise_bound(changed_max[row / tick_block], tick);
        raise_bound(changed_last, tick);
    }
    /// A bound on every row's changed tick: no row of the column changed after it. O(1).
    [[nodiscard]] std::uint64_t changed_bound() const noexcept {
        const std::uint64_t last = load_bound(changed_last);
        return last > stamped ? last : stamped;
    }
    /// Sets `row`'s added and changed ticks: a new value, or a row new to the table (its old
    /// tick means nothing). Tick arrays must exist.
    void set_added(std::uint32_t row, std::uint64_t tick) const noexcept {
        added[row] = tick;
        if (log != nullptr) [[unlikely]]
            log->entered(row, tick);
        put_changed(row, tick);
    }
    /// Raises the bounds of the blocks holding rows [first, last) to `tick` (after their ticks
    /// were written in bulk).
    void raise_blocks(std::size_t first, std::size_t last, std::uint64_t tick) const noexcept {
        for (std::size_t b = first / tick_block; b < tick_blocks(last); ++b)
            raise_bound(changed_max[b], tick);
        if (first < last) raise_bound(changed_last, tick);
    }
    /// Sets the bounds of the blocks of rows [0, rows) from the rows' ticks (after the row
    /// ticks were written in bulk).
    void bound_blocks(std::uint32_t rows) const noexcept {
        for (std::size_t b = 0; b < tick_blocks(rows); ++b) {
            const std::uint64_t* t = changed + b * tick_block;
            const std::size_t n =
                rows - b * tick_block < tick_block ? rows - b * tick_block : tick_block;
            std::uint64_t m = t[0];
            for (std::size_t i = 1; i < n; ++i) m = t[i] > m ? t[i] : m;
            changed_max[b] = m;
            if (m > changed_last) changed_last = m;
        }
    }
};

struct Archetype;

/// A small open-addressing map from a component id to the archetypes one add / one remove
/// of that component leads to. Keys are small dense integers, so the hash is the identity.
class EdgeMap {
public:
    struct Edge {
        std::uint32_t key = 0xFFFFFFFFu;
        /// The move plan of each direction: the column `key` has in the larger table (the
        /// target of an add, the source of a remove), or `no_column` for a tag. Columns are in
        /// id order in both tables, so every other column `k` of the smaller table is column
        /// `k + (k >= pivot)` of the larger one.
        std::uint16_t add_pivot = no_column;
        std::uint16_t remove_pivot = no_column;
        /// The table after adding / removing `key`, or null. Pointers, not indices: a move
        /// along an edge reaches its target with one load less (archetypes never move or die
        /// while their world lives, and a world's state moves with its tables).
        Archetype* add = nullptr;
        Archetype* remove = nullptr;
        static constexpr std::uint16_t no_column = 0xFFFF;
    };
    explicit EdgeMap(std::pmr::memory_resource* mr) : buckets_(mr) {}

    /// The edge for `key`, or null.
    [[nodiscard]] const Edge* find(std::uint32_t key) const noexcept {
        if (mask_ == 0) return nullptr;  // no buckets yet
        for (std::uint32_t i = key & mask_;; i = (i + 1) & mask_) {
            const Edge& e = buckets_[i];
            if (e.key == key) return &e;
            if (e.key == 0xFFFFFFFFu) return nullptr;
        }
    }
    /// The edge for `key`, inserted when missing. May throw bad_alloc (map unchanged then).
    Edge& get(std::uint32_t key);

private:
    std::pmr::vector<Edge> buckets_;
    std::uint32_t mask_ = 0;  ///< `buckets_.size() - 1` (a power of two, at least 8), 0 when empty
    std::uint32_t used_ = 0;
};

/// One archetype table. Allocated with its id table right behind it (`id_table_size` entries),
/// so a component lookup needs no pointer load.
struct Archetype {
    Archetype(std::pmr::memory_resource* mr, std::uint32_t id_entries)
        : id_table_size(id_entries), ids(mr), columns(mr), edges(mr) {}

    const std::uint32_t id_table_size;  ///< entries in the id table (max id value + 1)
    std::uint32_t index = 0;            ///< position in the world's archetype list
    std::uint32_t size = 0;             ///< live rows
    std::uint32_t capacity = 0;         ///< allocated rows
    /// Rows freed so far (despawns and moves out). Rows are appended only at the end and
    /// removed only by freeing (the last row fills the hole), so while `size` and `freed` stay
    /// the same every row holds the same entity.
    std::uint64_t freed = 0;
    bool tracked = false;     ///< some column has tick arrays
    bool enableable = false;  ///< some column has enable flags
    bool bytewise = true;     ///< every column's values move with memcpy
    /// Rows need more than their values moved (ticks, enable flags) or a value needs its move
    /// constructor: `tracked || enableable || !bytewise`, kept with them.
    bool slow_rows = false;
    bool hooked = false;                ///< a despawn or remove here goes through the hooks
    bool logged = false;                ///< some column has a row log (`RowLog`)
    Entity* entities = nullptr;         ///< the entity of each row
    std::pmr::vector<ComponentId> ids;  ///< sorted component set, tags included
    std::pmr::vector<Column> columns;   ///< non-tag components, in id order
    EdgeMap edges;

    /// Bytes to allocate for an archetype with `id_entries` id-table entries.
    static constexpr std::size_t allocation_size(std::uint32_t id_entries) noexcept {
        return sizeof(Archetype) + std::size_t{id_entries} * sizeof(std::int32_t);
    }
    /// id value -> column index / tag_column / absent_column.
    [[nodiscard]] std::int32_t* id_table() noexcept {
        return reinterpret_cast<std::int32_t*>(this + 1);
    }
    [[nodiscard]] const std::int32_t* id_table() const noexcept {
        return reinterpret_cast<const std::int32_t*>(this + 1);
    }
    /// Column index of `id`, `tag_column`, or `absent_column`.
    [[nodiscard]] std::int32_t column_index(ComponentId id) const noexcept {
        return id.value < id_table_size ? id_table()[id.value] : absent_column;
    }
    [[nodiscard]] bool contains(ComponentId id) const noexcept {
        return column_index(id) != absent_column;
    }
};
static_assert(sizeof(Archetype) % alignof(std::int32_t) == 0);

/// Rows [first, end) of `a`, its last ones, leave the table without others filling them: they
/// leave its row logs. Call before the rows go (it reads their ticks).
inline void drop_logged_rows(const Archetype& a, std::uint32_t first, std::uint32_t end) noexcept {
    for (const Column& c : a.columns) {
        if (c.log == nullptr) continue;
        for (std::uint32_t row = first; row < end; ++row) c.log->dropped(row, c.changed[row]);
    }
}
static_assert(sizeof(Column) == 96, "a row move indexes columns with shifts and adds");

}  // namespace tessera::detail

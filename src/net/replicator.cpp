// The server side of replication (net/replicator.hpp): finds what changed after each client's
// baseline from change ticks, the structural log and the client's visibility log, and writes
// it in the format of wire.hpp.
#include "wire.hpp"

#include <tessera/detail/notify.hpp>
#include <tessera/detail/storage.hpp>
#include <tessera/error.hpp>
#include <tessera/net/replicator.hpp>
#include <tessera/observer.hpp>
#include <tessera/world.hpp>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace tessera::net {

using tessera::detail::Archetype;
using tessera::detail::Column;
using tessera::detail::Storage;

namespace {

constexpr std::uint64_t never = std::numeric_limits<std::uint64_t>::max();

// A replicated component.
struct Replicated {
    ComponentId id;
    const ComponentInfo* info;
    wire::Kind kind;
    std::uint64_t fingerprint;
};

// A table holding replicated components: which, and their columns there.
struct Table {
    std::uint32_t archetype;
    std::uint64_t present = 0;  // bits of the replicated components it has, tags included
    std::vector<std::pair<std::uint32_t, std::uint32_t>> columns;  // (bit, column), bit order
};

// An entity whose structure changed at `tick` (a removal, a despawn, a tag added) or, in a
// client's visibility log, that entered or left its view.
struct Event {
    std::uint64_t tick;
    Entity e;
};

struct Client {
    bool connected = true;
    std::uint64_t baseline = 0;   // acked tick, 0 none
    std::uint64_t reset = never;  // baselines before this need a full state (never: one is due)
    std::uint64_t last_sent = 0;  // tick of the last message made
    Visibility mode = Visibility::all;
    std::unordered_set<std::uint64_t> listed;  // whitelist / blacklist (Entity::to_bits)
    std::vector<Event> vis;                    // entered or left the view, tick order
    std::size_t sweep_at = 64;                 // list size at which dead entities are swept
};

// Bit i of the result: whether t[i] > base, for i < n (n <= 64): the scans of a delta, over the
// block bounds of a changed column, then over the row ticks of each block with a change.
// (Four-wide AVX2 compares cut a 1% delta's instructions by 6% only: its cost is the random
// rows it reads, see docs/networking.md.)
std::uint64_t newer(const std::uint64_t* t, std::size_t n, std::uint64_t base) noexcept {
    std::uint64_t m = 0;
    for (std::size_t i = 0; i < n; ++i) m |= static_cast<std::uint64_t>(t[i] > base) << i;
    return m;
}

[[noreturn]] void fail(const char* op, const std::string& why) {
    throw Error(errc::invalid_argument, std::string(op) + ": " + why);
}

}  // namespace

struct Replicator::Impl {
    World* world;
    Storage* s;
    ReplicatorOptions options;
    std::vector<Replicated> comps;
    std::vector<ComponentId> ids;      // comps' ids, for components()
    std::vector<std::int32_t> bit_of;  // by id value: bit, or -1
    std::vector<Table> tables;
    std::vector<std::int32_t> table_of;  // by archetype index: into tables, or -1
    std::size_t seen_archetypes = 0;
    std::uint64_t epoch = 0;
    // The row logs' epoch (detail/archetype.hpp RowLog): every client's pin is at or after it,
    // so each replicated column lists every row a delta may need.
    std::uint64_t row_epoch = 0;
    std::vector<Event> log;  // structural log, tick order
    std::uint64_t last_logged = 0;
    bool lost = false;  // a log entry could not be kept: all full
    std::vector<Observer> observers;
    std::vector<Client> clients;
    std::size_t connected = 0;
    // Scratch, kept between calls.
    std::vector<Entity> touched;
    std::vector<std::uint64_t> exact;  // (table << 32 | row) sent whole, sorted
    std::vector<const Column*> active;
    std::vector<std::uint32_t> active_bits;
    std::vector<std::uint32_t> hits;  // rows of one table with a newer value

    Impl(World& w, ReplicatorOptions o) : world(&w), s(&w.storage()), options(o) {}
    ~Impl() {
        for (const Replicated& r : comps) s->unlog_rows(r.id, this);
    }
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;

    Client& client(ClientId c, const char* op) {
        if (c.value >= clients.size() || !clients[c.value].connected)
            fail(op, "unknown client " + std::to_string(c.value));
        return clients[c.value];
    }

    void note(Entity e) noexcept {
        // Ticks in the log never go back (a schedule's systems stamp their own), so it stays
        // sorted; a later tick than the event's only resends it.
        const std::uint64_t t = std::max(s->tick(), last_logged);
        try {
            log.push_back({t, e});
            last_logged = t;
        } catch (const std::bad_alloc&) {
            lost = true;  // every client gets a full state next: nothing is missed
        }
    }

    // ---- tables ----
    void add_table(const Archetype& a) {
        Table t{a.index, 0, {}};
        for (const ComponentId id : a.ids) {
            if (id.value >= bit_of.size() || bit_of[id.value] < 0) continue;
            const auto bit = static_cast<std::uint32_t>(bit_of[id.value]);
            t.present |= std::uint64_t{1} << bit;
            if (!comps[bit].info->is_tag())
                t.columns.emplace_back(bit, static_cast<std::uint32_t>(a.column_index(id)));
        }
        if (t.present == 0) return;
        std::sort(t.columns.begin(), t.columns.end());
        if (table_of.size() <= a.index) table_of.resize(a.index + 1, -1);
        tables.reserve(tables.size() + 1);  // then nothing below throws
        table_of[a.index] = static_cast<std::int32_t>(tables.size());
        tables.push_back(std::move(t));
    }
    void rebuild_tables() {
        tables.clear();
        table_of.clear();
        seen_archetypes = 0;
        epoch = s->layout_epoch();
        refresh_tables();
    }
    void refresh_tables() {
        if (epoch != s->layout_epoch()) {  // restore or load: archetype indices changed
            force_full_all();
            relog();  // the world's components are new: their row logs too
            rebuild_tables();
            return;
        }
        const std::size_t end = s->archetype_end();
        // One table at a time: after a bad_alloc the next call goes on from the one that failed.
        for (std::size_t i = seen_archetypes; i < end; seen_archetypes = ++i)
            add_table(s->archetype(static_cast<std::uint32_t>(i)));
        if (table_of.size() < end) table_of.resize(end, -1);
    }
    [[nodiscard]] const Table* table_at(std::uint32_t archetype) const noexcept {
        if (archetype >= table_of.size() || table_of[archetype] < 0) return nullptr;
        return &tables[static_cast<std::size_t>(table_of[archetype])];
    }

    // Row logs for every replicated component with a column (another replicator's logs are
    // left alone: this one then scans block bounds). @throws bad_alloc.
    void relog() {
        for (const Replicated& r : comps) {
            if (!r.info->is_tag()) s->log_rows(r.id, this, row_epoch);
        }
    }

    void force_full_all() noexcept {
        for (Client& c : clients) c.reset = never;
        log.clear();
    }

    // ---- visibility ----
    static bool visible(const Client& c, Entity e) {
        if (c.mode == Visibility::all) return true;
        const bool listed = c.listed.count(e.to_bits()) != 0;
        return c.mode == Visibility::whitelist ? listed : !listed;
    }

    // ---- writing ----
    void write_header(wire::Writer& w, std::uint64_t tick, std::uint64_t baseline) const {
        w.bytes(wire::magic, 3);
        w.u8(wire::version);
        w.u64(tick);
        w.u64(baseline);
        w.varint(comps.size());
        for (const Replicated& r : comps) {
            w.text(r.info->name);
            w.u8(static_cast<std::uint8_t>(r.kind));
            w.varint(r.info->size);
            w.u64(r.fingerprint);
        }
    }
    // The whole entity at `row` of `a` (table `t`).
    void write_exact(wire::Writer& w, const Table& t, const Archetype& a, std::uint32_t row) const {
        w.entity(a.entities[row]);
        w.varint(t.present << 1 | 1);
        for (const auto& [bit, column] : t.columns) {
            const Column& col = a.columns[column];
            wire::write_value(w, *comps[bit].info, comps[bit].kind,
                              col.data + std::size_t{row} * col.size);
        }
    }

    std::uint32_t write_full(wire::Writer& w, Client& c) {
        std::uint32_t records = 0;
        if (c.mode == Visibility::blacklist) sweep(c);
        if (c.mode == Visibility::whitelist) {
            // Only the listed entities: O(list), and the dead ones leave it.
            for (auto it = c.listed.begin(); it != c.listed.end();) {
                const Entity e = Entity::from_bits(*it);
                const tessera::detail::EntityRecord* r = s->try_record(e);
                if (r == nullptr) {
                    it = c.listed.erase(it);
                    continue;
                }
                ++it;
                if (const Table* t = table_at(r->archetype)) {
                    write_exact(w, *t, s->archetype(r->archetype), r->row);
                    ++records;
                }
            }
            return records;
        }
        for (const Table& t : tables) {
            const Archetype& a = s->archetype(t.archetype);
            for (std::uint32_t row = 0; row < a.size; ++row) {
                if (!visible(c, a.entities[row])) continue;
                write_exact(w, t, a, row);
                ++records;
            }
        }
        return records;
    }

    // Despawns and whole entities for the structural and visibility events after `base`.
    std::uint32_t write_events(wire::Writer& w, Client& c, std::uint64_t base,
                               std::uint32_t& despawns) {
        touched.clear();
        exact.clear();
        const auto after = [base](const Event& ev) { return ev.tick <= base; };
        for (auto it = std::partition_point(log.begin(), log.end(), after); it != log.end(); ++it)
            touched.push_back(it->e);
        for (auto it = std::partition_point(c.vis.begin(), c.vis.end(), after); it != c.vis.end();
             ++it)
            touched.push_back(it->e);
        if (touched.empty()) return 0;
        std::sort(touched.begin(), touched.end());
        touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
        // Despawns first (their section comes first), then the entities sent whole.
        for (const Entity e : touched) {
            const tessera::detail::EntityRecord* r = s->try_record(e);
            if (r == nullptr) c.listed.erase(e.to_bits());  // dead for good
            if (r == nullptr || table_at(r->archetype) == nullptr || !visible(c, e)) {
                w.entity(e);
                ++despawns;
            }
        }
        return static_cast<std::uint32_t>(touched.size()) - despawns;
    }
    std::uint32_t write_touched(wire::Writer& w, const Client& c) {
        std::uint32_t records = 0;
        for (const Entity e : touched) {
            const tessera::detail::EntityRecord* r = s->try_record(e);
            if (r == nullptr || !visible(c, e)) continue;
            const Table* t = table_at(r->archetype);
            if (t == nullptr) continue;
            write_exact(w, *t, s->archetype(r->archetype), r->row);
            exact.push_back(std::uint64_t{static_cast<std::uint32_t>(t - tables.data())} << 32 |
                            r->row);
            ++records;
        }
        std::sort(exact.begin(), exact.end());
        return records;
    }

    // Whether the rows of table `a` changed after `base` in the `active` columns are best read
    // from their row logs: each has one of this replicator's, from an epoch at or before
    // `base`, no whole-chunk stamp newer than `base` (every row changed: the block scan says
    // so at once), and the entries are fewer than an eighth of the rows (past that the block
    // scan's sequential reads win). A log a path marked wrong is rebuilt here.
    bool use_logs(const Archetype& a, std::uint64_t base) const noexcept {
        std::size_t entries = 0;
        for (const Column* col : active) {
            tessera::detail::RowLog* log = col->log;
            if (log == nullptr || col->stamped > base || log->epoch > base ||
                s->row_log_owner(col->id) != this)
                return false;
            if (!log->valid) log->rebuild(a.size);
            entries += log->count;
        }
        return entries * 8 <= a.size;
    }

    // The rows of `a` changed after `base` in the active columns, from their row logs, each
    // once (a row listed by an earlier active column is skipped), into `hits`.
    void collect_logged(std::uint64_t base) {
        for (std::size_t k = 0; k < active.size(); ++k) {
            const Column& col = *active[k];
            const tessera::detail::RowLog& log = *col.log;
            const bool all_newer = log.epoch == base;  // every listed row changed after `base`
            const std::uint32_t* const rows = log.rows();
            for (std::uint32_t i = 0; i < log.count; ++i) {
                const std::uint32_t row = rows[i];
                if (!all_newer && col.changed[row] <= base) continue;
                bool listed = false;
                for (std::size_t j = 0; j < k && !listed; ++j)
                    listed = active[j]->changed[row] > base;
                if (!listed) hits.push_back(row);
            }
        }
    }

    // The rows of `a` changed after `base` in the active columns, from the block bounds and
    // the row ticks, into `hits` (ascending).
    void collect_scanned(const Archetype& a, std::uint64_t base) {
        const std::size_t blocks = tessera::detail::tick_blocks(a.size);
        // 64 blocks at a time: a bit per block whose bound is newer than `base` (plain
        // loads in a loop the compiler vectorises: no worker writes while a delta is made),
        // then the rows of each such block.
        for (std::size_t g = 0; g < blocks; g += 64) {
            const std::size_t gn = std::min<std::size_t>(64, blocks - g);
            std::uint64_t marked = 0;
            for (const Column* col : active) {
                if (col->stamped > base) {
                    marked = gn == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << gn) - 1;
                    break;
                }
                marked |= newer(col->changed_max + g, gn, base);
            }
            for (; marked != 0; marked &= marked - 1) {
                const std::size_t b = g + static_cast<std::size_t>(std::countr_zero(marked));
                // The rows of the block with a value newer than `base`, one bit each.
                const auto first = static_cast<std::uint32_t>(b * tessera::detail::tick_block);
                const std::uint32_t n =
                    std::min<std::uint32_t>(a.size - first, tessera::detail::tick_block);
                std::uint32_t rows = 0;
                for (const Column* col : active) {
                    if (col->stamped > base) {
                        rows = (1u << n) - 1;
                        break;
                    }
                    // (only the block's rows: the last block may end the array)
                    rows |= static_cast<std::uint32_t>(newer(col->changed + first, n, base));
                }
                for (; rows != 0; rows &= rows - 1) {
                    const std::uint32_t row =
                        first + static_cast<std::uint32_t>(std::countr_zero(rows));
                    hits.push_back(row);
                    // The rows are far apart: start the loads the writing below makes.
                    __builtin_prefetch(a.entities + row);
                    for (const Column* col : active)
                        __builtin_prefetch(col->data + std::size_t{row} * col->size);
                }
            }
        }
    }

    // The records of `rows` of `a`, changed in plain-bytes column `col` (bit `bit`) only, none
    // sent whole, all visible: the common case of a delta (one client acknowledging every
    // message), in one loop that reserves the room of every record once, fetches rows ahead
    // and copies a value of up to 16 bytes inline. Returns the records written.
    static std::uint32_t write_listed(wire::Writer& w, const Archetype& a, const Column& col,
                                      std::uint32_t bit, std::span<const std::uint32_t> rows) {
        const std::size_t size = col.size;
        const std::byte* const data = col.data;
        const Entity* const entities = a.entities;
        std::byte head[10];  // the varint `mask << 1`, the same for every record
        const auto head_size = static_cast<std::size_t>(
            wire::Writer::put_varint(head, std::uint64_t{2} << bit) - head);
        std::byte* p = w.reserve(rows.size() * (5 + 5 + head_size + size));
        constexpr std::size_t ahead = 16;
        for (std::size_t i = 0; i < rows.size(); ++i) {
            if (i + ahead < rows.size()) {
                const std::uint32_t next = rows[i + ahead];
                __builtin_prefetch(entities + next);
                __builtin_prefetch(data + std::size_t{next} * size);
            }
            const std::uint32_t row = rows[i];
            const Entity e = entities[row];
            p = wire::Writer::put_varint(p, e.index);
            p = wire::Writer::put_varint(p, e.generation);
            if (head_size == 1)
                *p = head[0];  // the components of the first 6 bits
            else
                std::memcpy(p, head, head_size);
            p += head_size;
            const std::byte* v = data + std::size_t{row} * size;
            switch (size) {  // inline copies of the common sizes
                case 4: std::memcpy(p, v, 4); break;
                case 8: std::memcpy(p, v, 8); break;
                case 12: std::memcpy(p, v, 12); break;
                case 16: std::memcpy(p, v, 16); break;
                default: std::memcpy(p, v, size);
            }
            p += size;
        }
        w.commit(p);
        return static_cast<std::uint32_t>(rows.size());
    }

    // Every row with a replicated value changed after `base`, but those sent whole.
    std::uint32_t write_changes(wire::Writer& w, const Client& c, std::uint64_t base) {
        std::uint32_t records = 0;
        for (std::size_t ti = 0; ti < tables.size(); ++ti) {
            const Table& t = tables[ti];
            const Archetype& a = s->archetype(t.archetype);
            if (a.size == 0) continue;
            active.clear();
            active_bits.clear();
            for (const auto& [bit, column] : t.columns) {
                const Column& col = a.columns[column];
                if (col.changed != nullptr && col.changed_bound() > base) {  // O(1) per column
                    active.push_back(&col);
                    active_bits.push_back(bit);
                }
            }
            if (active.empty()) continue;
            hits.clear();
            const bool logged = use_logs(a, base);
            // One column whose log lists exactly the rows after `base`: the rows are its list
            // and the mask its bit, with no tick read.
            const bool exact_log = logged && active.size() == 1 && active[0]->log->epoch == base;
            std::span<const std::uint32_t> rows;
            if (exact_log) {
                rows = {active[0]->log->rows(), active[0]->log->count};
            } else {
                if (logged)
                    collect_logged(base);
                else
                    collect_scanned(a, base);
                rows = hits;
            }
            // The rows of this table sent whole (`exact` is sorted by table, then row).
            const std::uint64_t table_key = std::uint64_t{static_cast<std::uint32_t>(ti)} << 32;
            const auto whole_begin = std::lower_bound(exact.begin(), exact.end(), table_key);
            const auto whole_end =
                std::lower_bound(whole_begin, exact.end(), table_key + (std::uint64_t{1} << 32));
            // Every active value as plain bytes (the common case): a record's size is bounded,
            // so it is written through one pointer.
            bool raw = true;
            std::size_t bytes = 0;
            for (std::size_t k = 0; k < active.size(); ++k) {
                raw = raw && comps[active_bits[k]].kind == wire::Kind::raw;
                bytes += active[k]->size;
            }
            const bool filtered = c.mode != Visibility::all;
            if (exact_log && raw && !filtered && whole_begin == whole_end) {
                records += write_listed(w, a, *active[0], active_bits[0], rows);
                continue;
            }
            // Rows from a log are far apart and were not touched yet: fetch a few ahead.
            constexpr std::size_t ahead = 8;
            for (std::size_t i = 0; i < rows.size(); ++i) {
                if (logged && i + ahead < rows.size()) {
                    const std::uint32_t next = rows[i + ahead];
                    __builtin_prefetch(a.entities + next);
                    for (const Column* col : active) {
                        __builtin_prefetch(col->data + std::size_t{next} * col->size);
                        if (!exact_log) __builtin_prefetch(col->changed + next);
                    }
                }
                const std::uint32_t row = rows[i];
                std::uint64_t mask = 0;
                if (exact_log) {
                    mask = std::uint64_t{1} << active_bits[0];
                } else {
                    for (std::size_t k = 0; k < active.size(); ++k) {
                        if (active[k]->changed_at(row) > base)
                            mask |= std::uint64_t{1} << active_bits[k];
                    }
                }
                if (whole_begin != whole_end &&
                    std::binary_search(whole_begin, whole_end, table_key | row))
                    continue;  // sent whole
                const Entity e = a.entities[row];
                if (filtered && !visible(c, e)) continue;
                ++records;
                if (raw) {
                    std::byte* p = w.reserve(5 + 5 + 10 + bytes);
                    p = wire::Writer::put_varint(p, e.index);
                    p = wire::Writer::put_varint(p, e.generation);
                    p = wire::Writer::put_varint(p, mask << 1);
                    for (std::size_t k = 0; k < active.size(); ++k) {
                        if ((mask >> active_bits[k] & 1) == 0) continue;
                        const Column& col = *active[k];
                        std::memcpy(p, col.data + std::size_t{row} * col.size, col.size);
                        p += col.size;
                    }
                    w.commit(p);
                    continue;
                }
                w.entity(e);
                w.varint(mask << 1);
                for (std::size_t k = 0; k < active.size(); ++k) {
                    if ((mask >> active_bits[k] & 1) == 0) continue;
                    const Replicated& rc = comps[active_bits[k]];
                    wire::write_value(w, *rc.info, rc.kind,
                                      active[k]->data + std::size_t{row} * active[k]->size);
                }
            }
        }
        return records;
    }

    void build(Client& c, std::vector<std::byte>& out) {
        const std::uint64_t now = s->tick();
        const bool full = c.baseline == 0 || c.baseline < c.reset || c.reset == never ||
                          now - c.baseline > options.max_lag;
        const std::uint64_t base = full ? 0 : c.baseline;
        wire::Writer w(out);  // writes from the start; keeps the capacity
        write_header(w, now, base);
        const std::size_t despawn_at = w.size();
        w.u32(0);
        std::uint32_t despawns = 0;
        std::uint32_t records = 0;
        std::size_t records_at = 0;
        if (full) {
            records_at = w.size();
            w.u32(0);
            records = write_full(w, c);
            c.vis.clear();
            c.reset = now;
        } else {
            const std::uint32_t whole = write_events(w, c, base, despawns);
            records_at = w.size();
            w.u32(0);
            if (whole != 0) records += write_touched(w, c);
            records += write_changes(w, c, base);
        }
        w.patch_u32(despawn_at, despawns);
        w.patch_u32(records_at, records);
        c.last_sent = now;
    }

    // Drops what no client can need: log entries at or before every client's pin (its
    // baseline, or the tick of the full state it was sent and may acknowledge), and everything
    // older than max_lag ticks (such clients get a full state).
    void trim() {
        const std::uint64_t now = s->tick();
        const std::uint64_t floor = now > options.max_lag ? now - options.max_lag : 0;
        std::uint64_t keep_after = now;
        for (Client& c : clients) {
            if (!c.connected) continue;
            if (c.listed.size() > c.sweep_at) sweep(c);
            if (c.reset == never) {  // a full state is due: the view's history is not needed
                c.vis.clear();
                continue;
            }
            const std::uint64_t pin = std::max({c.baseline, c.reset, floor});
            keep_after = std::min(keep_after, pin);
            const auto gone = std::partition_point(c.vis.begin(), c.vis.end(),
                                                   [&](const Event& ev) { return ev.tick <= pin; });
            c.vis.erase(c.vis.begin(), gone);
        }
        const auto gone = std::partition_point(
            log.begin(), log.end(), [&](const Event& ev) { return ev.tick <= keep_after; });
        log.erase(log.begin(), gone);
        if (keep_after != row_epoch) {  // only rows written after every pin stay listed
            row_epoch = keep_after;
            for (const Replicated& r : comps) {
                if (s->row_log_owner(r.id) == this) s->trim_row_logs(r.id, row_epoch);
            }
        }
    }

    // Drops dead entities from `c`'s list (entities that never had a replicated component
    // leave no log entry): amortised O(1) per show/hide.
    void sweep(Client& c) const {
        for (auto it = c.listed.begin(); it != c.listed.end();) {
            if (s->try_record(Entity::from_bits(*it)) == nullptr)
                it = c.listed.erase(it);
            else
                ++it;
        }
        c.sweep_at = std::max<std::size_t>(64, 2 * c.listed.size());
    }

    void replicate(std::span<const ComponentId> add) {
        constexpr const char* op = "Replicator::replicate";
        std::vector<const ComponentInfo*> infos;
        for (const ComponentId id : add) {
            const ComponentInfo& info = s->ensure_component(id);
            const std::string name(info.name);
            if (info.reserved || s->reserved(id))
                fail(op, name + " is a relation's component: relations are not replicated");
            if (info.sparse)
                fail(op, name +
                             " is a sparse component (storage_kind::sparse): replication reads "
                             "the tables' change ticks and row logs, which sparse sets don't "
                             "have");
            if (!info.is_tag()) {
                if (!info.track_changes)
                    fail(op, name +
                                 " has track_changes = false: replication reads its change "
                                 "ticks");
                if (info.schema == nullptr && !info.trivially_copyable)
                    fail(op, name +
                                 " is neither trivially copyable nor described with "
                                 "TESSERA_REFLECT");
                if (info.schema != nullptr && !info.schema->flat && !info.constructible())
                    fail(op, name + " is not default constructible");
                if (info.schema != nullptr && has_str(*info.schema))
                    fail(op, name +
                                 " has a ts::StringId (str) field, an id in one world's "
                                 "string table: use a std::string field");
            }
            if (id.value < bit_of.size() && bit_of[id.value] >= 0) continue;
            if (std::find(infos.begin(), infos.end(), &info) != infos.end()) continue;
            infos.push_back(&info);
        }
        if (comps.size() + infos.size() > wire::max_components) {
            throw Error(errc::limit_exceeded, std::string(op) + ": at most " +
                                                  std::to_string(wire::max_components) +
                                                  " replicated components");
        }
        if (infos.empty()) return;
        // Observers first (they may throw); then the state, which can't fail past reserve.
        std::vector<Observer> made;
        for (const ComponentInfo* info : infos) {
            made.push_back(subscribe(tessera::Event::remove, info->id));
            if (info->is_tag()) made.push_back(subscribe(tessera::Event::add, info->id));
        }
        for (const ComponentInfo* info : infos) {
            if (!info->is_tag()) s->track(info->id);
        }
        // Row logs from now (every client gets a full state next: nothing older is needed).
        std::size_t logged = 0;
        try {
            for (; logged < infos.size(); ++logged) {
                if (!infos[logged]->is_tag()) s->log_rows(infos[logged]->id, this, s->tick());
            }
        } catch (...) {
            for (std::size_t k = 0; k < logged; ++k) s->unlog_rows(infos[k]->id, this);
            throw;
        }
        row_epoch = s->tick();
        for (const Replicated& r : comps) {
            if (s->row_log_owner(r.id) == this) s->trim_row_logs(r.id, row_epoch);
        }
        observers.reserve(observers.size() + made.size());
        comps.reserve(comps.size() + infos.size());
        ids.reserve(ids.size() + infos.size());
        for (Observer& o : made) observers.push_back(std::move(o));
        for (const ComponentInfo* info : infos) {
            if (bit_of.size() <= info->id.value) bit_of.resize(info->id.value + 1, -1);
            bit_of[info->id.value] = static_cast<std::int32_t>(comps.size());
            comps.push_back({info->id, info, wire::kind_of(*info), wire::fingerprint(*info)});
            ids.push_back(info->id);
        }
        rebuild_tables();
        force_full_all();  // existing values and tags were never logged
    }

    static bool has_str(const Schema& schema) noexcept {
        for (const FieldInfo& f : schema.fields) {
            if (f.type == Field::str) return true;
            if (f.type == Field::record && has_str(*f.schema)) return true;
        }
        return false;
    }

    Observer subscribe(tessera::Event kind, ComponentId id) {
        tessera::detail::ObserverCallback cb;
        cb.ctx = this;
        cb.invoke = [](void* ctx, World&, Entity e, void*) { static_cast<Impl*>(ctx)->note(e); };
        cb.destroy = [](void*, std::pmr::memory_resource*) noexcept {};
        const std::uint64_t sub = tessera::detail::subscribe(*s, kind, id, cb);
        return Observer(tessera::detail::registry_of(*s), sub);
    }
};

Replicator::Replicator(World& world, ReplicatorOptions options)
    : impl_(std::make_unique<Impl>(world, options)) {
    impl_->epoch = impl_->s->layout_epoch();
}
Replicator::~Replicator() = default;
Replicator::Replicator(Replicator&&) noexcept = default;
Replicator& Replicator::operator=(Replicator&&) noexcept = default;

void Replicator::replicate_ids(std::span<const ComponentId> ids) {
    impl_->replicate(ids);
}

ClientId Replicator::connect() {
    impl_->clients.emplace_back();
    ++impl_->connected;
    return ClientId{static_cast<std::uint32_t>(impl_->clients.size() - 1)};
}

void Replicator::disconnect(ClientId c) {
    Client& cl = impl_->client(c, "Replicator::disconnect");
    cl = Client{};
    cl.connected = false;
    --impl_->connected;
    impl_->trim();
}

std::vector<std::byte> Replicator::delta(ClientId c) {
    std::vector<std::byte> out;
    delta(c, out);
    return out;
}

void Replicator::delta(ClientId c, std::vector<std::byte>& out) {
    constexpr const char* op = "Replicator::delta";
    Impl& m = *impl_;
    Client& cl = m.client(c, op);
    tessera::detail::check_quiet(*m.s, op);
    m.refresh_tables();
    if (m.lost) {
        m.force_full_all();
        m.lost = false;
    }
    m.build(cl, out);
    m.world->advance_tick();
    m.trim();
}

void Replicator::ack(ClientId c, std::uint64_t tick) {
    constexpr const char* op = "Replicator::ack";
    Client& cl = impl_->client(c, op);
    if (tick > cl.last_sent)
        fail(op, "tick " + std::to_string(tick) +
                     " is later than the last message made for "
                     "client " +
                     std::to_string(c.value) + " (tick " + std::to_string(cl.last_sent) + ")");
    if (tick > cl.baseline) cl.baseline = tick;
    impl_->trim();
}

void Replicator::set_visibility(ClientId c, Visibility v) {
    Client& cl = impl_->client(c, "Replicator::set_visibility");
    cl.mode = v;
    cl.listed.clear();
    cl.vis.clear();
    cl.reset = never;
}

namespace {
void change_view(Replicator::Impl& m, Client& cl, Entity e, bool show, const char* op) {
    if (cl.mode == Visibility::all)
        fail(op,
             "the client sees every entity (Visibility::all): set_visibility to whitelist "
             "or blacklist first");
    const bool add = (cl.mode == Visibility::whitelist) == show;
    cl.vis.reserve(cl.vis.size() + 1);
    const bool changed =
        add ? cl.listed.insert(e.to_bits()).second : cl.listed.erase(e.to_bits()) != 0;
    const std::uint64_t t = std::max(m.s->tick(), cl.vis.empty() ? 0 : cl.vis.back().tick);
    if (changed) cl.vis.push_back({t, e});
}
}  // namespace

void Replicator::show(ClientId c, Entity e) {
    change_view(*impl_, impl_->client(c, "Replicator::show"), e, true, "Replicator::show");
}

void Replicator::hide(ClientId c, Entity e) {
    change_view(*impl_, impl_->client(c, "Replicator::hide"), e, false, "Replicator::hide");
}

std::uint64_t Replicator::baseline(ClientId c) const {
    return impl_->client(c, "Replicator::baseline").baseline;
}

std::size_t Replicator::client_count() const noexcept {
    return impl_->connected;
}

std::size_t Replicator::log_size() const noexcept {
    return impl_->log.size();
}

std::size_t Replicator::client_state_size(ClientId c) const {
    const Client& cl = impl_->client(c, "Replicator::client_state_size");
    return cl.vis.size() + cl.listed.size();
}

std::span<const ComponentId> Replicator::components() const noexcept {
    return impl_->ids;
}

}  // namespace tessera::net

// The untyped core: archetype tables and the entity index.
//
// Every mutating function first does everything that can fail (allocation, archetype creation,
// reserving rows and entity slots) and only then changes state with operations that cannot
// throw, which is how the strong guarantee holds, std::bad_alloc included.
#include <tessera/detail/core.hpp>
#include <tessera/error.hpp>

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>
#include <string>

namespace tessera::detail {

[[noreturn]] void throw_not_alive(const char* op, Entity e, ComponentId id);

namespace {

constexpr std::size_t column_alignment = 64;  // cache line: vector loads never split
constexpr std::size_t huge_page = std::size_t{2} << 20;
constexpr std::uint32_t max_rows = 0xFFFFFFFEu;
// What an allocation of no bytes returns (an enableable tag's column has flags, no values): a
// real address, so copies of its zero bytes never see a null pointer; never freed.
alignas(column_alignment) std::byte zero_size_block[column_alignment];

std::uint64_t hash_ids(std::span<const ComponentId> ids) noexcept {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (ComponentId id : ids) h = (h ^ id.value) * 0x100000001b3ull;
    return h;
}

/// The first bucket of hash `h` in a table of `mask + 1` buckets (the high bits folded in: the
/// low bits of an FNV product vary little).
std::size_t first_bucket(std::uint64_t h, std::size_t mask) noexcept {
    return static_cast<std::size_t>(h ^ (h >> 32)) & mask;
}

/// Puts `key` in the first free bucket of its probe sequence (the table has one).
template <class Key>
void put_key(std::pmr::vector<Key>& table, const Key& key) noexcept {
    const std::size_t mask = table.size() - 1;
    std::size_t b = first_bucket(key.hash, mask);
    while (table[b].archetype != no_index) b = (b + 1) & mask;
    table[b] = key;
}

}  // namespace

// ---------------------------------------------------------------------------------- EdgeMap

EdgeMap::Edge& EdgeMap::get(std::uint32_t key) {
    if (const Edge* e = find(key)) return const_cast<Edge&>(*e);
    if ((std::size_t{used_} + 1) * 2 > buckets_.size()) {
        std::pmr::vector<Edge> bigger(std::max<std::size_t>(8, buckets_.size() * 2),
                                      buckets_.get_allocator());
        const std::size_t mask = bigger.size() - 1;
        for (const Edge& e : buckets_) {
            if (e.key == 0xFFFFFFFFu) continue;
            std::size_t i = e.key & mask;
            while (bigger[i].key != 0xFFFFFFFFu) i = (i + 1) & mask;
            bigger[i] = e;
        }
        buckets_.swap(bigger);
        mask_ = static_cast<std::uint32_t>(buckets_.size() - 1);
    }
    const std::size_t mask = buckets_.size() - 1;
    std::size_t i = key & mask;
    while (buckets_[i].key != 0xFFFFFFFFu) i = (i + 1) & mask;
    buckets_[i].key = key;
    ++used_;
    return buckets_[i];
}

// ------------------------------------------------------------------------------------- Core

Core::Core(std::pmr::memory_resource* mr)
    : mr_(mr),
      archetypes_(mr),
      components_(mr),
      set_index_(mr),
      bundles_(mr),
      bundle_columns_(mr),
      permanent_(mr),
      sparse_sets_(mr),
      sparse_by_id_(mr) {
    try {
        create_archetype({});  // dead_archetype: the sentinel of free entity slots
        create_archetype({});  // empty_archetype
        create_archetype({});  // pending_archetype
    } catch (...) {
        for (Archetype* a : archetypes_) release_archetype(*a);
        throw;
    }
}

Core::~Core() {
    for (Archetype* a : archetypes_) release_archetype(*a);
    for (SparseSet* set : sparse_sets_) {
        set->~SparseSet();
        mr_->deallocate(set, sizeof(SparseSet), alignof(SparseSet));
    }
    for (WorldComponent& wc : components_) {
        deallocate(wc.columns, std::size_t{wc.column_capacity} * sizeof(const Column*),
                   alignof(const Column*));
    }
    for (const TableList& t : table_lists_)
        deallocate(t.data, std::size_t{t.capacity} * sizeof(std::uint32_t), alignof(std::uint32_t));
    deallocate(record_data_, std::size_t{record_capacity_} * sizeof(EntityRecord),
               column_alignment);
}

std::byte* Core::allocate(std::size_t bytes, std::size_t align) {
    if (bytes == 0) return zero_size_block;
    auto* p = static_cast<std::byte*>(mr_->allocate(bytes, align));
    // Large columns are touched page by page as they fill; transparent huge pages cut the
    // page faults that dominate creation. Advice only: failure changes nothing.
    if (bytes >= 2 * huge_page) {
        const auto begin = (reinterpret_cast<std::uintptr_t>(p) + huge_page - 1) & ~(huge_page - 1);
        const auto end = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(huge_page - 1);
        if (end > begin)
            madvise(p + (begin - reinterpret_cast<std::uintptr_t>(p)), end - begin, MADV_HUGEPAGE);
    }
    return p;
}

void Core::deallocate(void* p, std::size_t bytes, std::size_t align) noexcept {
    if (p != nullptr && bytes != 0) mr_->deallocate(p, bytes, align);
}

void Core::release_archetype(Archetype& a) noexcept {
    for (Column& c : a.columns) {
        if (c.destroy != nullptr) c.destroy(c.data, a.size);
        deallocate(c.data, std::size_t{a.capacity} * c.size,
                   std::max<std::size_t>(column_alignment, c.info->alignment));
        deallocate(c.added, std::size_t{a.capacity} * sizeof(std::uint64_t), column_alignment);
        deallocate(c.changed, changed_words(a.capacity) * sizeof(std::uint64_t), column_alignment);
        deallocate(c.enabled, a.capacity, column_alignment);
        deallocate(c.log, RowLog::bytes(a.capacity), alignof(RowLog));
    }
    deallocate(a.entities, std::size_t{a.capacity} * sizeof(Entity), column_alignment);
    const std::size_t bytes = Archetype::allocation_size(a.id_table_size);
    a.~Archetype();
    mr_->deallocate(&a, bytes, alignof(Archetype));
}

const ComponentInfo& Core::ensure_component(ComponentId id) {
    if (id.value >= components_.size()) {
        const std::size_t n = std::max<std::size_t>(id.value + 1, components_.size() * 2);
        table_lists_.reserve(n);  // first: a throw below leaves both as they were
        components_.resize(n);
        table_lists_.resize(n);
    }
    WorldComponent& wc = components_[id.value];
    if (wc.info == nullptr) {
        // No existing archetype holds the type yet: its column list starts empty (all null).
        const ComponentInfo& info = component_info(id);
        const std::size_t cap = std::max<std::size_t>(16, archetypes_.capacity());
        auto* const columns = reinterpret_cast<const Column**>(
            allocate(cap * sizeof(const Column*), alignof(const Column*)));
        if (info.sparse) {
            // A sparse component's values live in its set, made now (its column list stays
            // empty: no table ever holds it).
            void* mem = nullptr;
            try {
                sparse_sets_.reserve(sparse_sets_.size() + 1);
                if (id.value >= sparse_by_id_.size()) sparse_by_id_.resize(id.value + 1, nullptr);
                mem = mr_->allocate(sizeof(SparseSet), alignof(SparseSet));
            } catch (...) {
                deallocate(columns, cap * sizeof(const Column*), alignof(const Column*));
                throw;
            }
            sparse_by_id_[id.value] = ::new (mem) SparseSet(mr_, info);
            sparse_sets_.push_back(sparse_by_id_[id.value]);
        }
        wc.columns = columns;
        wc.column_capacity = static_cast<std::uint32_t>(cap);
        wc.column_count = 0;
        wc.hooked = hook_all_;
        // No table has the type yet: nothing to stamp. A sparse set keeps ticks from the start.
        wc.tracked = info.eager_tracking || (info.sparse && info.track_changes);
        wc.info = &info;
    }
    return *wc.info;
}

const ComponentInfo& Core::info(ComponentId id) const noexcept {
    return *components_[id.value].info;
}

Archetype& Core::create_archetype(std::span<const ComponentId> ids) {
    if (archetypes_.size() == archetypes_.capacity()) {
        archetypes_.reserve(std::max<std::size_t>(16, archetypes_.size() * 2));
    }
    if ((set_count_ + 1) * 2 > set_index_.size()) {
        // Rehash into a table twice the size (built aside: nothing changes if it throws).
        std::pmr::vector<SetKey> grown(std::max<std::size_t>(32, set_index_.size() * 2),
                                       SetKey{0, no_index}, mr_);
        for (const SetKey& k : set_index_) {
            if (k.archetype != no_index) put_key(grown, k);
        }
        set_index_.swap(grown);
    }
    const auto index = static_cast<std::uint32_t>(archetypes_.size());
    for (ComponentId id : ids) {
        reserve_columns(components_[id.value], index + 1);
        reserve_tables(table_lists_[id.value], table_lists_[id.value].count + 1);
    }
    const std::uint32_t slots = ids.empty() ? 0 : ids.back().value + 1;
    void* mem = mr_->allocate(Archetype::allocation_size(slots), alignof(Archetype));
    auto* a = ::new (mem) Archetype(mr_, slots);
    std::fill_n(a->id_table(), slots, absent_column);
    try {
        a->ids.assign(ids.begin(), ids.end());
        std::size_t non_tags = 0;
        for (ComponentId id : ids) non_tags += has_column(info(id)) ? 1 : 0;
        a->columns.reserve(non_tags);
    } catch (...) {
        release_archetype(*a);
        throw;
    }
    for (ComponentId id : ids) {
        const ComponentInfo& ci = info(id);
        TESSERA_ASSERT(!ci.sparse, "create_archetype: a sparse component in a table's set");
        a->hooked = a->hooked || components_[id.value].hooked;
        if (!has_column(ci)) {
            a->id_table()[id.value] = tag_column;
            continue;
        }
        a->id_table()[id.value] = static_cast<std::int32_t>(a->columns.size());
        Column col;
        col.relocate = ci.relocate;
        col.destroy = ci.destroy;
        col.info = &ci;
        col.id = id;
        col.size = ci.size;
        a->tracked = a->tracked || components_[id.value].tracked;
        a->enableable = a->enableable || ci.enableable;
        a->bytewise = a->bytewise && ci.relocate == nullptr;
        a->columns.push_back(col);
    }
    a->index = index;
    a->slow_rows = a->tracked || a->enableable || !a->bytewise;
    a->hooked = a->hooked || hook_all_;
    for (ComponentId id : ids) {  // the columns are in place: their addresses stay
        WorldComponent& wc = components_[id.value];
        std::fill(wc.columns + wc.column_count, wc.columns + index + 1, &no_column);
        wc.column_count = index + 1;
        const std::int32_t c = a->column_index(id);
        // An enableable tag's column holds flags only: the typed read path sees no column.
        if (c >= 0 && !info(id).is_tag())
            wc.columns[index] = &a->columns[static_cast<std::uint32_t>(c)];
        TableList& t = table_lists_[id.value];
        t.data[t.count++] = index;  // reserved above
    }
    archetypes_.push_back(a);
    if (a->index == empty_archetype || a->index >= first_user_archetype) {
        put_key(set_index_, SetKey{hash_ids(ids), a->index});
        ++set_count_;
    }
    return *a;
}

void Core::reserve_columns(WorldComponent& wc, std::size_t n) {
    if (n <= wc.column_capacity) return;
    const std::size_t cap = std::max<std::size_t>(n, std::size_t{wc.column_capacity} * 2);
    auto* fresh = reinterpret_cast<const Column**>(
        allocate(cap * sizeof(const Column*), alignof(const Column*)));
    std::copy_n(wc.columns, wc.column_count, fresh);
    deallocate(wc.columns, std::size_t{wc.column_capacity} * sizeof(const Column*),
               alignof(const Column*));
    wc.columns = fresh;
    wc.column_capacity = static_cast<std::uint32_t>(cap);
}

void Core::reserve_tables(TableList& t, std::size_t n) {
    if (n <= t.capacity) return;
    const std::size_t cap = std::max<std::size_t>({n, std::size_t{t.capacity} * 2, 8});
    auto* fresh = reinterpret_cast<std::uint32_t*>(
        allocate(cap * sizeof(std::uint32_t), alignof(std::uint32_t)));
    if (t.count != 0) std::copy_n(t.data, t.count, fresh);
    deallocate(t.data, std::size_t{t.capacity} * sizeof(std::uint32_t), alignof(std::uint32_t));
    t.data = fresh;
    t.capacity = static_cast<std::uint32_t>(cap);
}

Archetype* Core::find_archetype(std::span<const ComponentId> ids) const noexcept {
    if (set_index_.empty()) return nullptr;
    const std::uint64_t h = hash_ids(ids);
    const std::size_t mask = set_index_.size() - 1;
    for (std::size_t b = first_bucket(h, mask);; b = (b + 1) & mask) {
        const SetKey& k = set_index_[b];
        if (k.archetype == no_index) return nullptr;
        if (k.hash != h) continue;
        Archetype* a = archetypes_[k.archetype];
        if (std::equal(a->ids.begin(), a->ids.end(), ids.begin(), ids.end())) return a;
    }
}

Archetype& Core::archetype_for(std::span<const ComponentId> ids) {
    if (Archetype* a = find_archetype(ids)) return *a;
    return create_archetype(ids);
}

Core::Bundle Core::new_bundle(std::uint32_t bundle_id, std::span<const ComponentId> ids) {
    for (ComponentId id : ids) ensure_component(id);
    std::pmr::vector<ComponentId> sorted(ids.begin(), ids.end(), mr_);
    std::sort(sorted.begin(), sorted.end());
    Archetype& a = archetype_for(sorted);
    if (bundle_id >= bundles_.size()) {
        bundles_.resize(std::max<std::size_t>(bundle_id + 1, bundles_.size() * 2));
    }
    const auto offset = static_cast<std::uint32_t>(bundle_columns_.size());
    bundle_columns_.reserve(offset + ids.size());  // nothing below throws
    for (ComponentId id : ids) bundle_columns_.push_back(a.column_index(id));
    bundles_[bundle_id] = {a.index, offset};
    return {&a, bundle_columns_.data() + offset};
}

void Core::track(ComponentId id) {
    ensure_component(id);
    if (components_[id.value].tracked) return;
    if (parallel_) [[unlikely]] {
        // Tracking allocates tick arrays in every table: not from several workers at once.
        throw Error(errc::invalid_argument,
                    std::string("change ticks of ") + std::string(component_info(id).name) +
                        " read or written from inside par_each before change tracking was on "
                        "for it: the first such call turns it on, which changes every table; "
                        "make it once before the loop (e.g. world.changed_tick on any entity)");
    }
    // Allocate every tick array first, so a failure leaves tracking off and nothing leaked.
    std::pmr::vector<std::uint64_t*> arrays(mr_);
    std::size_t needed = 0;
    for (const Archetype* a : archetypes_) {
        if (a->capacity > 0 && a->column_index(id) >= 0) needed += 2;
    }
    arrays.reserve(needed);
    try {
        for (const Archetype* a : archetypes_) {
            if (a->capacity == 0 || a->column_index(id) < 0) continue;
            for (int k = 0; k < 2; ++k) {  // added, changed
                const std::size_t words = k == 0 ? a->capacity : changed_words(a->capacity);
                arrays.push_back(reinterpret_cast<std::uint64_t*>(
                    allocate(words * sizeof(std::uint64_t), column_alignment)));
            }
        }
    } catch (...) {
        std::size_t k = 0;
        for (const Archetype* a : archetypes_) {
            if (a->capacity == 0 || a->column_index(id) < 0) continue;
            for (int j = 0; j < 2 && k < arrays.size(); ++j, ++k) {
                const std::size_t words = j == 0 ? a->capacity : changed_words(a->capacity);
                deallocate(arrays[k], words * sizeof(std::uint64_t), column_alignment);
            }
        }
        throw;
    }
    std::size_t k = 0;
    for (Archetype* a : archetypes_) {
        const std::int32_t c = a->column_index(id);
        if (c < 0) continue;
        Column& col = a->columns[static_cast<std::uint32_t>(c)];
        a->tracked = true;
        a->slow_rows = true;
        if (a->capacity == 0) continue;
        col.added = arrays[k++];
        col.changed = arrays[k++];
        col.changed_max = col.changed + a->capacity;
        std::fill_n(col.added, a->size, tick_);
        std::fill_n(col.changed, a->size, tick_);
        std::fill_n(col.changed_max, tick_blocks(a->capacity), tick_);
        col.changed_last = tick_;
    }
    components_[id.value].tracked = true;
}

void Core::grow(Archetype& a, std::size_t min_capacity) {
    if (min_capacity > max_rows) {
        throw Error(errc::limit_exceeded, "World: an archetype table can't hold more than " +
                                              std::to_string(max_rows) + " rows");
    }
    const std::size_t cap = std::min<std::size_t>(
        max_rows, std::max<std::size_t>({min_capacity, std::size_t{a.capacity} * 2, 8}));
    // Every new array is allocated before anything moves; a failure frees what was taken.
    struct Arrays {
        std::byte* data;
        std::uint64_t* added;
        std::uint64_t* changed;
        std::uint8_t* enabled;
        RowLog* log;  // the row log, for a logged component (RowLog)
    };
    std::pmr::vector<Arrays> fresh(mr_);
    fresh.reserve(a.columns.size());
    Entity* entities = nullptr;
    auto release = [&] {
        for (std::size_t i = 0; i < fresh.size(); ++i) {
            const Column& c = a.columns[i];
            deallocate(fresh[i].data, cap * c.size,
                       std::max<std::size_t>(column_alignment, c.info->alignment));
            deallocate(fresh[i].added, cap * sizeof(std::uint64_t), column_alignment);
            deallocate(fresh[i].changed, changed_words(cap) * sizeof(std::uint64_t),
                       column_alignment);
            deallocate(fresh[i].enabled, cap, column_alignment);
            deallocate(fresh[i].log, RowLog::bytes(cap), alignof(RowLog));
        }
        deallocate(entities, cap * sizeof(Entity), column_alignment);
    };
    try {
        entities = reinterpret_cast<Entity*>(allocate(cap * sizeof(Entity), column_alignment));
        for (const Column& c : a.columns) {
            Arrays& f = fresh.emplace_back(Arrays{nullptr, nullptr, nullptr, nullptr, nullptr});
            f.data =
                allocate(cap * c.size, std::max<std::size_t>(column_alignment, c.info->alignment));
            if (components_[c.id.value].tracked) {
                f.added = reinterpret_cast<std::uint64_t*>(
                    allocate(cap * sizeof(std::uint64_t), column_alignment));
                f.changed = reinterpret_cast<std::uint64_t*>(
                    allocate(changed_words(cap) * sizeof(std::uint64_t), column_alignment));
            }
            if (c.info->enableable)
                f.enabled = reinterpret_cast<std::uint8_t*>(allocate(cap, column_alignment));
            if (f.changed != nullptr && (c.log != nullptr || row_log_owner(c.id) != nullptr))
                f.log = static_cast<RowLog*>(mr_->allocate(RowLog::bytes(cap), alignof(RowLog)));
        }
    } catch (...) {
        release();
        throw;
    }
    const std::size_t old_cap = a.capacity;
    if (a.size > 0) std::memcpy(entities, a.entities, a.size * sizeof(Entity));
    deallocate(a.entities, old_cap * sizeof(Entity), column_alignment);
    a.entities = entities;
    for (std::size_t i = 0; i < a.columns.size(); ++i) {
        Column& c = a.columns[i];
        Arrays& f = fresh[i];
        if (a.size > 0) {
            if (c.relocate == nullptr)
                std::memcpy(f.data, c.data, std::size_t{a.size} * c.size);
            else
                c.relocate(f.data, c.data, a.size);
            if (c.added != nullptr) {
                std::memcpy(f.added, c.added, a.size * sizeof(std::uint64_t));
                std::memcpy(f.changed, c.changed, a.size * sizeof(std::uint64_t));
            }
            if (c.enabled != nullptr) std::memcpy(f.enabled, c.enabled, a.size);
        }
        if (f.changed != nullptr) {
            // The bounds of the rows kept, and nothing changed in the blocks past them.
            std::uint64_t* const bounds = f.changed + cap;
            const std::size_t kept = c.changed != nullptr ? tick_blocks(a.size) : 0;
            if (kept != 0) std::memcpy(bounds, c.changed_max, kept * sizeof(std::uint64_t));
            std::fill(bounds + kept, bounds + tick_blocks(cap), std::uint64_t{0});
        }
        if (f.log != nullptr) grow_log(c, f.log, a.size, cap, f.changed);
        deallocate(c.data, old_cap * c.size,
                   std::max<std::size_t>(column_alignment, c.info->alignment));
        deallocate(c.added, old_cap * sizeof(std::uint64_t), column_alignment);
        deallocate(c.changed, changed_words(old_cap) * sizeof(std::uint64_t), column_alignment);
        deallocate(c.enabled, old_cap, column_alignment);
        deallocate(c.log, RowLog::bytes(old_cap), alignof(RowLog));
        c.log = f.log;
        a.logged = a.logged || f.log != nullptr;
        c.data = f.data;
        c.added = f.added;
        c.changed = f.changed;
        c.changed_max = f.changed != nullptr ? f.changed + cap : nullptr;
        c.enabled = f.enabled;
    }
    a.capacity = static_cast<std::uint32_t>(cap);
}

void Core::reserve_rows(Archetype& a, std::size_t n) {
    if (a.size + n > a.capacity) grow(a, a.size + n);
}

void Core::reserve_records(std::size_t n) {
    if (n <= free_count_) return;
    const std::size_t need = record_count_ + (n - free_count_);
    if (need > max_rows) {
        throw Error(errc::limit_exceeded, "World::spawn: a world can't hold more than " +
                                              std::to_string(max_rows) + " entities");
    }
    if (need > record_capacity_) {
        const std::size_t cap = std::min<std::size_t>(
            max_rows, std::max<std::size_t>({need, std::size_t{record_capacity_} * 2, 64}));
        auto* fresh =
            reinterpret_cast<EntityRecord*>(allocate(cap * sizeof(EntityRecord), column_alignment));
        if (record_count_ > 0)
            std::memcpy(fresh, record_data_, record_count_ * sizeof(EntityRecord));
        deallocate(record_data_, std::size_t{record_capacity_} * sizeof(EntityRecord),
                   column_alignment);
        record_data_ = fresh;
        record_capacity_ = static_cast<std::uint32_t>(cap);
    }
}

void Core::reserve_spawn(Archetype& a, std::size_t n) {
    reserve_rows(a, n);
    reserve_records(n);
}

void Core::stamp_row_added(TableRow at) noexcept {
    if (!at.archetype->tracked) return;
    for (Column& c : at.archetype->columns) {
        if (c.changed != nullptr) c.set_added(at.row, tick_);
    }
}

void Core::init_row(TableRow at) noexcept {
    for (Column& c : at.archetype->columns) {
        if (c.enabled != nullptr) c.enabled[at.row] = 1;
    }
    stamp_row_added(at);
}

std::span<const Entity> Core::commit_spawn_many(Archetype& a, std::size_t n) noexcept {
    const std::uint32_t first = a.size;
    for (std::size_t i = 0; i < n; ++i) {
        const auto row = static_cast<std::uint32_t>(first + i);
        const std::uint32_t index = take_index();
        EntityRecord& r = record_data_[index];
        r.archetype = a.index;
        r.row = row;
        a.entities[row] = Entity{index, r.generation};
    }
    for (Column& c : a.columns) {
        if (c.enabled != nullptr) std::fill_n(c.enabled + first, n, std::uint8_t{1});
        if (c.changed != nullptr) {
            std::fill_n(c.added + first, n, tick_);
            std::fill_n(c.changed + first, n, tick_);
            c.raise_blocks(first, first + n, tick_);
            if (c.log != nullptr) c.log->entered_range(first, n, tick_);
        }
    }
    a.size += static_cast<std::uint32_t>(n);
    alive_ += n;
    return {a.entities + first, n};
}

Entity Core::spawn_empty() {
    return commit_spawn(prepare_spawn(*archetypes_[empty_archetype]));
}

void Core::destroy_rows(Archetype& a, std::uint32_t first, std::size_t n) noexcept {
    for (Column& c : a.columns) {
        if (c.destroy != nullptr) c.destroy(c.data + std::size_t{first} * c.size, n);
    }
}

[[noreturn]] void throw_missing(const char* op, Entity e, ComponentId id);

std::uint8_t& Core::enable_flag(Entity e, ComponentId id, const char* op) const {
    const ComponentInfo& ci = component_info(id);
    if (!ci.enableable) {
        throw Error(errc::not_enableable,
                    std::string(op) + "<" + std::string(ci.name) + ">: " + std::string(ci.name) +
                        " is not enableable (specialise tessera::component_traits with "
                        "enableable = true)");
    }
    const EntityRecord* r = try_record(e);
    if (r == nullptr) throw_not_alive(op, e, id);
    if (const SparseSet* set = sparse(id)) {
        const std::uint32_t row = set->find(e);
        if (row == SparseSet::no_row) throw_missing(op, e, id);
        return set->enabled()[row];
    }
    const Archetype& a = *archetypes_[r->archetype];
    const std::int32_t c = a.column_index(id);
    if (c < 0) throw_missing(op, e, id);
    return a.columns[static_cast<std::uint32_t>(c)].enabled[r->row];
}

void Core::release_pending(IndexMark mark, std::span<const Entity> spawned) noexcept {
    for (auto e = spawned.rbegin(); e != spawned.rend(); ++e) {
        EntityRecord& r = record_data_[e->index];
        TESSERA_ASSERT(r.archetype == pending_archetype && r.generation == e->generation,
                       "release_pending: not a pending entity");
        if (e->index >= mark.record_count) {
            TESSERA_ASSERT(e->index + 1 == record_count_, "release_pending: not the newest index");
            record_count_ = e->index;  // taken past the end: the next spawn takes it again
        } else {
            r.archetype = dead_archetype;  // taken from the free list: back at its head
            r.row = free_head_;
            free_head_ = e->index;
            ++free_count_;
        }
        --alive_;
    }
}

void Core::take_back_spawned(IndexMark mark, std::span<const Entity> spawned) noexcept {
    for (const Entity e : spawned) {
        EntityRecord& r = record_data_[e.index];
        if (r.archetype == pending_archetype) continue;
        Archetype& a = *archetypes_[r.archetype];
        destroy_rows(a, r.row, 1);
        // The table's rows since the call are its last ones: it shrinks by one per row, in
        // any order. Counted as freed, so a row's entity is never assumed unchanged.
        if (a.logged) drop_logged_rows(a, r.row, r.row + 1);
        --a.size;
        ++a.freed;
        r.archetype = pending_archetype;
        r.row = 0;
    }
    release_pending(mark, spawned);
}

Entity Core::spawn_pending() {
    reserve_records(1);
    const std::uint32_t index = take_index();
    EntityRecord& r = record_data_[index];
    r.archetype = pending_archetype;
    r.row = 0;
    ++alive_;
    return Entity{index, r.generation};
}

void Core::set_hooks(bool on, bool all, std::span<const std::uint8_t> by_id) noexcept {
    hooked_ = on;
    hook_all_ = all;
    for (std::size_t i = 0; i < components_.size(); ++i) {
        components_[i].hooked =
            all || components_[i].reserved || (i < by_id.size() && by_id[i] != 0);
    }
    for (Archetype* a : archetypes_) {
        a->hooked = all || std::any_of(a->ids.begin(), a->ids.end(), [this](ComponentId id) {
                        return components_[id.value].hooked;
                    });
    }
}

void Core::reserve_component(ComponentId id) noexcept {
    components_[id.value].reserved = true;
    components_[id.value].hooked = true;
    hooked_ = true;
    for (Archetype* a : archetypes_) {
        if (a->contains(id)) a->hooked = true;
    }
}

void Core::reserve_permanent(std::uint32_t index) {
    if (index / 64 >= permanent_.size()) {
        permanent_.resize(std::max<std::size_t>(index / 64 + 1, permanent_.size() * 2), 0);
    }
}

std::vector<Entity> Core::entities() const {
    std::vector<Entity> out;
    out.reserve(alive_);
    for (const Archetype* a : archetypes_)
        out.insert(out.end(), a->entities, a->entities + a->size);
    return out;
}

}  // namespace tessera::detail

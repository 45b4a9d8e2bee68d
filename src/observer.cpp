// Observers: the registry of subscriptions and the observed forms of structural changes.
#include "observer_hooks.hpp"

#include <tessera/detail/notify.hpp>
#include <tessera/detail/operations.hpp>
#include <tessera/detail/storage.hpp>
#include <tessera/error.hpp>
#include <tessera/event_kind.hpp>
#include <tessera/observer.hpp>
#include <tessera/query_spec.hpp>

#include <algorithm>
#include <iterator>
#include <string>

namespace tessera::detail {

namespace {
constexpr std::size_t event_kinds = 9;
constexpr std::size_t typed_kinds = 5;  // add, remove, set, relate, unrelate: per component

constexpr std::size_t kind_index(Event k) noexcept {
    return static_cast<std::size_t>(k);
}
/// Position among the per-component kinds (add, remove, set, relate, unrelate).
constexpr std::size_t typed_index(Event k) noexcept {
    return k <= Event::set ? kind_index(k) : kind_index(k) - kind_index(Event::relate) + 3;
}
constexpr bool typed(Event k) noexcept {
    return k == Event::add || k == Event::remove || k == Event::set || k == Event::relate ||
           k == Event::unrelate;
}
}  // namespace

/// Every subscription of one world. Lists are delivered by index with the length taken when
/// delivery starts, so callbacks may subscribe (seen from the next event on) and unsubscribe
/// (a dead entry is skipped; its functor is freed once no delivery is running).
class ObserverRegistry {
public:
    struct Entry {
        std::uint64_t id;  ///< 0 once unsubscribed
        ObserverCallback cb;
    };
    using List = std::pmr::vector<Entry>;
    /// A query observer: the terms it matches, with the matcher of `QuerySpec`
    /// (`archetype_matches`).
    struct QueryEntry {
        std::uint64_t id;
        ObserverCallback cb;
        std::pmr::vector<ComponentId> all, any, none;
    };

    ObserverRegistry(Storage& s, std::pmr::memory_resource* mr)
        : storage_(&s),
          mr_(mr),
          spawn_(mr),
          despawn_(mr),
          enter_(mr),
          exit_(mr),
          typed_{std::pmr::vector<List>(mr), std::pmr::vector<List>(mr), std::pmr::vector<List>(mr),
                 std::pmr::vector<List>(mr), std::pmr::vector<List>(mr)},
          type_off_{std::pmr::vector<std::uint8_t>(mr), std::pmr::vector<std::uint8_t>(mr),
                    std::pmr::vector<std::uint8_t>(mr), std::pmr::vector<std::uint8_t>(mr),
                    std::pmr::vector<std::uint8_t>(mr)},
          by_id_(mr) {
        std::fill(std::begin(on_), std::end(on_), true);
    }
    ~ObserverRegistry() {
        auto free_list = [this](auto& list) {
            for (auto& e : list) e.cb.destroy(e.cb.ctx, mr_);
        };
        free_list(spawn_);
        free_list(despawn_);
        free_list(enter_);
        free_list(exit_);
        for (auto& lists : typed_) {
            for (List& l : lists) free_list(l);
        }
    }
    ObserverRegistry(const ObserverRegistry&) = delete;
    ObserverRegistry& operator=(const ObserverRegistry&) = delete;

    std::uint64_t subscribe(Event kind, ComponentId id, ObserverCallback cb, std::uint64_t join) {
        try {
            List* list = nullptr;
            if (typed(kind)) {
                auto& lists = typed_[typed_index(kind)];
                if (id.value >= lists.size()) {
                    // Each List needs the allocator: grow with copies of an empty one.
                    lists.resize(std::max<std::size_t>(id.value + 1, lists.size() * 2), List(mr_));
                }
                list = &lists[id.value];
                by_id_.reserve(lists.size());  // refresh() then needs no allocation
            } else if (kind == Event::spawn) {
                list = &spawn_;
            } else if (kind == Event::despawn) {
                list = &despawn_;
            } else {
                throw Error(errc::invalid_argument,
                            "World::observe: query events (enter, exit) are observed through a "
                            "query's on_enter / on_exit");
            }
            list->push_back(Entry{join != 0 ? join : next_id_, cb});
        } catch (...) {
            cb.destroy(cb.ctx, mr_);
            throw;
        }
        if (join == 0) return added();
        ++live_;  // one more (kind, type) entry of subscription `join`
        refresh();
        return join;
    }

    std::uint64_t subscribe_query(Event kind, const QuerySpec& spec, ObserverCallback cb) {
        try {
            auto& list = kind == Event::enter ? enter_ : exit_;
            QueryEntry q{next_id_, cb,
                         std::pmr::vector<ComponentId>(spec.all.begin(), spec.all.end(), mr_),
                         std::pmr::vector<ComponentId>(spec.any.begin(), spec.any.end(), mr_),
                         std::pmr::vector<ComponentId>(spec.none.begin(), spec.none.end(), mr_)};
            list.push_back(std::move(q));
        } catch (...) {
            cb.destroy(cb.ctx, mr_);
            throw;
        }
        return added();
    }

    /// Ends subscription `id`: every (kind, type) entry it has.
    void unsubscribe(std::uint64_t id) noexcept {
        std::size_t found = 0;
        auto kill = [&](auto& list) {
            for (auto& e : list) {
                if (e.id == id) found += kill_entry(e);
            }
        };
        kill(spawn_);
        kill(despawn_);
        kill(enter_);
        kill(exit_);
        for (auto& lists : typed_) {
            for (List& l : lists) kill(l);
        }
        if (found != 0) settle();
    }

    /// The entity (spawn, despawn) or typed list of `kind` for `id`, or null when none exists.
    [[nodiscard]] const List* list_of(Event kind, ComponentId id) const noexcept {
        if (kind == Event::spawn) return &spawn_;
        if (kind == Event::despawn) return &despawn_;
        if (!typed(kind)) return nullptr;
        const auto& lists = typed_[typed_index(kind)];
        return id.value < lists.size() ? &lists[id.value] : nullptr;
    }
    /// Whether a live subscription observes `kind` for `id` (for spawn and despawn: any).
    [[nodiscard]] bool has(Event kind, ComponentId id) const noexcept {
        const List* list = list_of(kind, id);
        return list != nullptr &&
               std::any_of(list->begin(), list->end(), [](const Entry& e) { return e.id != 0; });
    }
    /// Ends every subscription's entry for `kind` and `id`; returns how many there were.
    std::size_t clear(Event kind, ComponentId id) noexcept {
        List* list = const_cast<List*>(list_of(kind, id));
        if (list == nullptr) return 0;
        std::size_t found = 0;
        for (Entry& e : *list) found += kill_entry(e);
        if (found != 0) settle();
        return found;
    }

    [[nodiscard]] bool alive(std::uint64_t id) const noexcept {
        auto has = [&](const auto& list) {
            return std::any_of(list.begin(), list.end(), [&](const auto& e) { return e.id == id; });
        };
        if (has(spawn_) || has(despawn_) || has(enter_) || has(exit_)) return true;
        for (const auto& lists : typed_) {
            for (const List& l : lists) {
                if (has(l)) return true;
            }
        }
        return false;
    }

    /// The world whose subscriptions these are (`par_each` checks).
    [[nodiscard]] const Storage& storage() const noexcept { return *storage_; }

    // ---- switches ----
    void enable(Event kind, bool on) noexcept { on_[kind_index(kind)] = on; }
    void enable(Event kind, ComponentId id, bool on) {
        if (!typed(kind)) {
            throw Error(errc::invalid_argument,
                        "Observers::enable<" + std::string(component_info(id).name) +
                            ">: only add, remove, set, relate and unrelate observers have "
                            "per-type switches");
        }
        auto& off = type_off_[typed_index(kind)];
        if (id.value >= off.size()) {
            if (on) return;
            off.resize(std::max<std::size_t>(id.value + 1, off.size() * 2), 0);
        }
        off[id.value] = on ? 0 : 1;
    }
    [[nodiscard]] bool enabled(Event kind) const noexcept { return on_[kind_index(kind)]; }
    [[nodiscard]] bool enabled(Event kind, ComponentId id) const noexcept {
        if (!enabled(kind)) return false;
        if (!typed(kind)) return true;
        const auto& off = type_off_[typed_index(kind)];
        return id.value >= off.size() || off[id.value] == 0;
    }
    [[nodiscard]] std::size_t count() const noexcept { return live_; }

    // ---- delivery ----
    /// Delivers a component event of `e`'s `id` (the value looked up for each callback); for a
    /// relation event, `target` is passed along with it.
    void deliver(Event kind, ComponentId id, Entity e, Entity target = {}) {
        const auto& lists = typed_[typed_index(kind)];
        if (id.value >= lists.size() || lists[id.value].empty() || !enabled(kind, id)) return;
        Delivery scope(*this);
        const std::size_t n = lists[id.value].size();
        const bool relation = kind == Event::relate || kind == Event::unrelate;
        for (std::size_t i = 0; i < n; ++i) {
            const Entry entry = typed_[typed_index(kind)][id.value][i];  // lists may grow meanwhile
            if (entry.id == 0) continue;
            RelationEvent event{target, storage_->try_value(e, id)};
            void* value = relation ? static_cast<void*>(&event) : event.data;
            entry.cb.invoke(entry.cb.ctx, storage_->owner(), e, value);
        }
    }

    /// Delivers an entity event (spawn, despawn).
    void deliver(Event kind, Entity e) {
        List& list = kind == Event::spawn ? spawn_ : despawn_;
        if (list.empty() || !enabled(kind)) return;
        Delivery scope(*this);
        const std::size_t n = list.size();
        for (std::size_t i = 0; i < n; ++i) {
            const Entry entry = list[i];
            if (entry.id != 0) entry.cb.invoke(entry.cb.ctx, storage_->owner(), e, nullptr);
        }
    }

    /// Delivers query `kind` (enter or exit) for `e` moving from archetype `from` to `to`
    /// (`no_index` for "none": a spawn's source, a despawn's target).
    void deliver_move(Event kind, Entity e, std::uint32_t from, std::uint32_t to) {
        std::pmr::vector<QueryEntry>& list = kind == Event::enter ? enter_ : exit_;
        if (list.empty() || !enabled(kind)) return;
        Delivery scope(*this);
        const std::size_t n = list.size();
        for (std::size_t i = 0; i < n; ++i) {
            const QueryEntry& q = list[i];
            if (q.id == 0) continue;
            const bool was = matches(q, from);
            const bool is = matches(q, to);
            if (kind == Event::enter ? (!was && is) : (was && !is)) {
                const ObserverCallback cb = q.cb;  // `list` may grow during the call
                cb.invoke(cb.ctx, storage_->owner(), e, nullptr);
            }
        }
    }

    [[nodiscard]] bool has_query_observers() const noexcept {
        return !enter_.empty() || !exit_.empty();
    }

    /// Recomputes which components and archetypes take the observed path.
    void refresh() noexcept {
        auto live = [](const auto& list) {
            return std::any_of(list.begin(), list.end(), [](const auto& e) { return e.id != 0; });
        };
        const bool all = live(spawn_) || live(despawn_) || live(enter_) || live(exit_);
        std::size_t n = 0;
        for (const auto& lists : typed_) n = std::max(n, lists.size());
        by_id_.assign(n, 0);  // capacity kept: no throw after the first subscriptions
        for (const auto& lists : typed_) {
            for (std::size_t i = 0; i < lists.size(); ++i) by_id_[i] |= live(lists[i]) ? 1 : 0;
        }
        storage_->set_subscriptions(live_ != 0, all, by_id_);
    }

private:
    /// Marks a delivery in progress (functors of unsubscribed entries are freed after it).
    class Delivery {
    public:
        explicit Delivery(ObserverRegistry& r) noexcept : r_(r) { ++r_.delivering_; }
        Delivery(const Delivery&) = delete;
        Delivery& operator=(const Delivery&) = delete;
        ~Delivery() {
            if (--r_.delivering_ == 0 && r_.dirty_) r_.compact();
        }

    private:
        ObserverRegistry& r_;
    };

    template <class E>
    std::size_t kill_entry(E& e) noexcept {
        if (e.id == 0) return 0;
        e.id = 0;
        --live_;
        dirty_ = true;
        return 1;
    }
    void settle() noexcept {
        refresh();
        if (delivering_ == 0) compact();
    }

    std::uint64_t added() noexcept {
        ++live_;
        refresh();
        return next_id_++;
    }

    [[nodiscard]] bool matches(const QueryEntry& q, std::uint32_t archetype) const noexcept {
        // Neither the free-slot sentinel nor the table of not-yet-placed entities matches.
        if (archetype == no_index || archetype == dead_archetype ||
            archetype == pending_archetype) {
            return false;
        }
        return archetype_matches(storage_->archetype(archetype), q.all, q.any, q.none);
    }

    void compact() noexcept {
        dirty_ = false;
        auto sweep = [this](auto& list) {
            auto dead = [](const auto& e) { return e.id == 0; };
            for (auto& e : list) {
                if (dead(e)) e.cb.destroy(e.cb.ctx, mr_);
            }
            list.erase(std::remove_if(list.begin(), list.end(), dead), list.end());
        };
        sweep(spawn_);
        sweep(despawn_);
        sweep(enter_);
        sweep(exit_);
        for (auto& lists : typed_) {
            for (List& l : lists) sweep(l);
        }
    }

    Storage* storage_;
    std::pmr::memory_resource* mr_;
    List spawn_;
    List despawn_;
    std::pmr::vector<QueryEntry> enter_;
    std::pmr::vector<QueryEntry> exit_;
    std::pmr::vector<List> typed_[typed_kinds];             ///< by kind, then component id
    std::pmr::vector<std::uint8_t> type_off_[typed_kinds];  ///< 1 = switched off, by id
    std::pmr::vector<std::uint8_t> by_id_;                  ///< refresh()'s scratch
    bool on_[event_kinds];
    std::uint64_t next_id_ = 1;
    std::size_t live_ = 0;
    unsigned delivering_ = 0;
    bool dirty_ = false;
};

// ---------------------------------------------------------------------------------- Storage

namespace {

const ObserverHooks observer_hooks;

}  // namespace

ObserverRegistry& Storage::observer_registry() {
    if (!observers_) {
        observers_ = std::allocate_shared<ObserverRegistry>(
            std::pmr::polymorphic_allocator<ObserverRegistry>(resource()), *this, resource());
        observer_hooks_ = &observer_hooks;
    }
    return *observers_;
}

std::weak_ptr<ObserverRegistry> registry_of(Storage& s) {
    s.observer_registry();
    return s.observer_registry_ptr();
}

namespace {
// The registry, made if needed; `cb` is destroyed when that fails (the caller gave it away).
ObserverRegistry& registry_for(Storage& s, const ObserverCallback& cb) {
    try {
        return s.observer_registry();
    } catch (...) {
        cb.destroy(cb.ctx, s.resource());
        throw;
    }
}
}  // namespace

void check_can_subscribe(const Storage& s, Event kind) {
    if (!s.parallel()) [[likely]]
        return;
    constexpr const char* ops[] = {"World::on_add",   "World::on_remove",  "World::on_set",
                                   "World::on_spawn", "World::on_despawn", "Query::on_enter",
                                   "Query::on_exit",  "World::on_relate",  "World::on_unrelate"};
    const auto k = static_cast<std::size_t>(kind);
    check_not_parallel(s, k < std::size(ops) ? ops[k] : "World::on_*");
}

std::uint64_t subscribe(Storage& s, Event kind, ComponentId id, ObserverCallback cb,
                        std::uint64_t join) {
    return registry_for(s, cb).subscribe(kind, id, cb, join);
}

std::uint64_t subscribe_query(Storage& s, Event kind, const QuerySpec& spec, ObserverCallback cb) {
    return registry_for(s, cb).subscribe_query(kind, spec, cb);
}

// ------------------------------------------------------------------------ observed changes

namespace {

void no_finish() noexcept {}

std::uint32_t archetype_of(const Storage& s, Entity e) noexcept {
    const EntityRecord* r = s.try_record(e);
    return r == nullptr ? no_index : r->archetype;
}

/// Calls `fn(id)` for each component of `e` (alive, in table `table`), ascending: the table's
/// and, in a world with sparse components, those of the sets that hold `e`. Collected before
/// the first call (callbacks' structural changes are deferred, values may change).
template <class F>
void each_component_of(Storage& s, Entity e, std::uint32_t table, F&& fn) {
    const std::span<const ComponentId> ids = s.archetype(table).ids;
    if (s.sparse_sets().empty()) [[likely]] {
        for (const ComponentId id : ids) fn(id);
        return;
    }
    ScratchArray<ComponentId> all(ids.size() + s.sparse_sets().size(), s.resource());
    std::size_t n = 0;
    for (const ComponentId id : ids) all[n++] = id;
    for (const SparseSet* set : s.sparse_sets()) {
        if (set->contains(e)) all[n++] = set->info().id;
    }
    std::sort(all.data(), all.data() + n);
    for (std::size_t i = 0; i < n; ++i) fn(all[i]);
}

}  // namespace

void begin_notify(Storage& s) noexcept {
    s.begin_defer();
}
void end_notify(Storage& s) {
    end_defer(s);
}
void end_notify_noexcept(Storage& s) noexcept {
    end_defer_noexcept(s);
}

void deliver(Storage& s, Event kind, ComponentId id, Entity e) {
    if (ObserverRegistry* reg = s.observers()) reg->deliver(kind, id, e);
}
void deliver(Storage& s, Event kind, Entity e) {
    if (ObserverRegistry* reg = s.observers()) reg->deliver(kind, e);
}
void deliver_relation(Storage& s, Event kind, ComponentId data, Entity e, Entity target) {
    if (ObserverRegistry* reg = s.observers()) reg->deliver(kind, data, e, target);
}
void deliver_move(Storage& s, Entity e, std::uint32_t from, std::uint32_t to) {
    ObserverRegistry* reg = s.observers();
    if (reg == nullptr || from == to || !reg->has_query_observers()) return;
    reg->deliver_move(Event::exit, e, from, to);
    reg->deliver_move(Event::enter, e, from, to);
}

void notify_spawned(Storage& s, Entity e) {
    if (s.observers() == nullptr) return;
    ObserverRegistry& reg = *s.observers();
    notifying(
        s,
        [&] {
            reg.deliver(Event::spawn, e);
            const std::uint32_t to = archetype_of(s, e);
            if (to == no_index) return;
            each_component_of(s, e, to, [&](ComponentId id) { reg.deliver(Event::add, id, e); });
            reg.deliver_move(Event::enter, e, no_index, to);
        },
        no_finish);
}

void notify_added(Storage& s, Entity e, std::uint32_t from, std::span<const ComponentId> ids,
                  const bool* existed) {
    if (s.observers() == nullptr) return;
    ObserverRegistry& reg = *s.observers();
    // Ascending component id within each event kind.
    ScratchArray<std::pair<ComponentId, bool>> buffer(ids.size(), s.resource());
    const std::span<std::pair<ComponentId, bool>> sorted = buffer.span();
    for (std::size_t i = 0; i < ids.size(); ++i) sorted[i] = {ids[i], existed[i]};
    std::sort(sorted.begin(), sorted.end());
    notifying(
        s,
        [&] {
            for (const auto& [id, was] : sorted) {
                if (!was) reg.deliver(Event::add, id, e);
            }
            for (const auto& [id, was] : sorted) {
                if (was) reg.deliver(Event::set, id, e);
            }
            const std::uint32_t to = archetype_of(s, e);
            if (to != from && reg.has_query_observers()) {
                reg.deliver_move(Event::exit, e, from, to);
                reg.deliver_move(Event::enter, e, from, to);
            }
        },
        no_finish);
}

void refresh_subscriptions(Storage& s) noexcept {
    if (ObserverRegistry* r = s.observers())
        r->refresh();
    else
        s.set_subscriptions(false, false, {});
}

void notify_set(Storage& s, Entity e, ComponentId id) {
    if (s.observers() == nullptr) return;
    ObserverRegistry& reg = *s.observers();
    notifying(
        s, [&] { reg.deliver(Event::set, id, e); }, no_finish);
}

bool remove_notifying(Storage& s, Entity e, std::span<const ComponentId> ids, const char* op,
                      Commit commit) {
    s.check_plain(ids, op);
    const EntityRecord* r = s.try_record(e);
    if (r == nullptr) throw_not_alive(op, e, ids[0]);
    Archetype& from = s.archetype(r->archetype);
    ScratchArray<ComponentId> buffer(ids.size(), s.resource());
    std::span<ComponentId> present = buffer.span();
    std::size_t n = 0;
    std::size_t in_table = 0;  // the others are sparse: erased from their sets, no row moves
    for (const ComponentId id : ids) {
        const bool here = from.contains(id);
        const SparseSet* set = here ? nullptr : s.sparse(id);
        if ((here || (set != nullptr && set->contains(e))) &&
            std::find(present.data(), present.data() + n, id) == present.data() + n) {
            present[n++] = id;
            in_table += here ? 1 : 0;
        }
    }
    if (n == 0) {
        commit();
        return false;
    }
    present = present.first(n);
    std::sort(present.begin(), present.end());
    // Everything that can fail happens before the first callback.
    Archetype* to = in_table != 0 ? &s.removal_target(from, present) : nullptr;
    if (to != nullptr) s.reserve_rows(*to, 1);
    commit();
    const std::uint32_t from_index = from.index;
    bool moved = false;
    auto move = [&]() noexcept {
        if (moved) return;
        moved = true;
        // Callbacks can't have moved `e` or changed its sets: their changes are deferred.
        if (to != nullptr) s.move_entity(e, *s.try_record(e), *to);
        if (in_table != n) {
            for (const ComponentId id : present) {
                if (SparseSet* set = s.sparse(id)) set->erase(e);
            }
        }
    };
    if (s.observers() == nullptr) {
        move();
        return true;
    }
    ObserverRegistry& reg = *s.observers();
    notifying(
        s,
        [&] {
            for (const ComponentId id : present) reg.deliver(Event::remove, id, e);
            move();
            if (to != nullptr && reg.has_query_observers()) {
                reg.deliver_move(Event::exit, e, from_index, to->index);
                reg.deliver_move(Event::enter, e, from_index, to->index);
            }
        },
        move);
    return true;
}

bool despawn_notifying(Storage& s, Entity e) {
    const EntityRecord* r = s.try_record(e);
    if (r == nullptr) return false;
    const std::uint32_t from = r->archetype;
    if (s.observers() == nullptr) return s.despawn(e);
    ObserverRegistry& reg = *s.observers();
    auto kill = [&]() noexcept { s.despawn(e); };  // no-op once dead
    notifying(
        s,
        [&] {
            reg.deliver(Event::despawn, e);
            each_component_of(s, e, from,
                              [&](ComponentId id) { reg.deliver(Event::remove, id, e); });
            reg.deliver_move(Event::exit, e, from, no_index);
            kill();
        },
        kill);
    return true;
}

std::size_t despawn_notifying(Storage& s, std::span<const Entity> es, Commit commit) {
    commit();
    std::size_t n = 0;
    const auto hooked = [&s](Entity e) {
        const EntityRecord* r = s.try_record(e);
        return r != nullptr && (s.hooked(*r) || sparse_hooked(s, e));
    };
    if (s.observers() == nullptr || std::none_of(es.begin(), es.end(), hooked)) {
        for (const Entity e : es) n += s.despawn(e) ? 1 : 0;
        return n;
    }
    // Each entity whole, in order, inside one deferral: callbacks' structural changes apply
    // when the call ends, so each entity is still alive at its turn. When a callback throws,
    // the rest still dies, without observers.
    std::size_t next = 0;
    auto run = [&](bool notify) {
        while (next < es.size()) {
            const Entity e = es[next++];
            if (notify && hooked(e)) {
                ++n;
                (void)despawn_notifying(s, e);  // kills e even when a callback throws
            } else {
                n += s.despawn(e) ? 1 : 0;
            }
        }
    };
    notifying(
        s, [&] { run(true); }, [&]() noexcept { run(false); });
    return n;
}

}  // namespace tessera::detail

namespace tessera {

void Observer::reset() {
    if (id_ == 0) return;
    if (const auto r = registry_.lock()) {
        detail::check_not_parallel(r->storage(), "Observer::reset");
        r->unsubscribe(id_);
    }
    registry_.reset();
    id_ = 0;
}

void Observer::release() noexcept {
    if (id_ == 0) return;
    if (const auto r = registry_.lock()) {
        TESSERA_ASSERT(!r->storage().parallel(),
                       "an Observer holding a subscription was destroyed on a par_each worker "
                       "(the subscriptions are shared): destroy or reset it on the world's thread");
        r->unsubscribe(id_);
    }
    registry_.reset();
    id_ = 0;
}

bool Observer::active() const noexcept {
    if (id_ == 0) return false;
    const auto r = registry_.lock();
    return r != nullptr && r->alive(id_);
}

void Observers::enable(Event kind, bool on) {
    detail::check_not_parallel(registry_->storage(), "Observers::enable");
    registry_->enable(kind, on);
}

void Observers::enable(Event kind, ComponentId id, bool on) {
    detail::checked_info(id, "Observers::enable");
    detail::check_not_parallel(registry_->storage(), "Observers::enable");
    registry_->enable(kind, id, on);
}

bool Observers::is_enabled(Event kind) const noexcept {
    return registry_->enabled(kind);
}

bool Observers::is_enabled(Event kind, ComponentId id) const noexcept {
    return find_component_info(id) != nullptr && registry_->enabled(kind, id);
}

bool Observers::has(Event kind, ComponentId id) const noexcept {
    return registry_->has(kind, id);
}

std::size_t Observers::clear(Event kind, ComponentId id) {
    detail::check_not_parallel(registry_->storage(), "Observers::clear");
    return registry_->clear(kind, id);
}

std::size_t Observers::count() const noexcept {
    return registry_->count();
}

Observers World::observers() {
    detail::check_not_parallel(*storage_, "World::observers");  // they switch shared flags
    return Observers(storage_->observer_registry());
}

}  // namespace tessera

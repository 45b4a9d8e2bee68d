// World: the facade. Members forward to the storage in a line or two.
#include <tessera/detail/operations.hpp>
#include <tessera/world.hpp>

#include <algorithm>
#include <sstream>

#ifdef TESSERA_GDB_SCRIPTS
// The gdb pretty-printers, in this object's .debug_gdb_scripts section (cmake/GdbScripts.cmake):
// every program that makes a World links this file.
#include "tessera_gdb_scripts.inc"
#endif

namespace tessera {

namespace {
// What the world holds beside its storage (its resources) goes first, through the function
// its module attached; a moved-from world holds nothing.
void free_resources(detail::Attachment& resources, detail::Storage* s) noexcept {
    if (resources.object != nullptr) resources.reset(s->resource());
}
}  // namespace

namespace detail {
Storage* new_storage(std::pmr::memory_resource* mr) {
    void* mem = mr->allocate(sizeof(Storage), alignof(Storage));
    try {
        return ::new (mem) Storage(mr);
    } catch (...) {
        mr->deallocate(mem, sizeof(Storage), alignof(Storage));
        throw;
    }
}
void delete_storage(Storage* s) noexcept {
    if (s == nullptr) return;
    std::pmr::memory_resource* mr = s->resource();
    s->~Storage();
    mr->deallocate(s, sizeof(Storage), alignof(Storage));
}
}  // namespace detail

World::World() : World(std::pmr::get_default_resource()) {}

World::World(std::pmr::memory_resource* resource)
    : storage_(
          detail::new_storage(resource != nullptr ? resource : std::pmr::get_default_resource())) {
    storage_->set_owner(this);
}

World::~World() {
    free_resources(resources_, storage_);
    detail::delete_storage(storage_);
}

World::World(World&& other) noexcept
    : storage_(std::exchange(other.storage_, nullptr)),
      resources_(std::exchange(other.resources_, {})) {
    if (storage_ != nullptr) storage_->set_owner(this);
}

World& World::operator=(World&& other) noexcept {
    if (this != &other) {
        free_resources(resources_, storage_);
        detail::delete_storage(storage_);
        storage_ = std::exchange(other.storage_, nullptr);
        resources_ = std::exchange(other.resources_, {});
        if (storage_ != nullptr) storage_->set_owner(this);
    }
    return *this;
}

std::pmr::memory_resource* World::memory_resource() const noexcept {
    return storage_->resource();
}

Entity World::spawn() {
    const detail::EntryCheck entry(*storage_);
    if (storage_->deferring()) [[unlikely]]
        return spawn_deferred();
    const Entity e = storage_->spawn_empty();
    if (storage_->hooked_all()) [[unlikely]]
        storage_->hooks().spawned(*storage_, e);
    return e;
}

namespace detail {

void check_despawnable(const Storage& s, const char* op, Entity e) {
    if (s.permanent(e.index) && s.try_record(e) != nullptr) [[unlikely]] {
        std::ostringstream os;
        os << op << ": entity " << e << " is permanent (spawned with spawn_permanent)";
        throw Error(errc::permanent_entity, os.str());
    }
}

void check_not_parallel(const Storage& s, const char* op) {
    if (s.parallel()) [[unlikely]] {
        throw Error(errc::invalid_argument,
                    std::string(op) +
                        ": called from inside par_each; structural changes, deferral, writes "
                        "that fire observers and other changes to what the world shares can't "
                        "run on workers (docs/threading.md lists what can): record them in a "
                        "CommandBuffer per worker and apply it after the loop");
    }
}
}  // namespace detail

Entity World::spawn_deferred(std::uint16_t components) {
    detail::Storage& s = *storage_;
    detail::check_not_parallel(s, "World::spawn");
    s.deferred().reserve(1);
    const Entity e = s.spawn_pending();
    s.deferred().push_place(e, components);
    return e;
}

bool World::despawn(Entity e) {
    const detail::EntryCheck entry(*storage_);
    detail::Storage& s = *storage_;
    if (!s.permanent_words().empty()) [[unlikely]]
        detail::check_despawnable(s, "World::despawn", e);
    if (s.deferring()) [[unlikely]] {
        detail::check_not_parallel(s, "World::despawn");
        if (!is_alive(e) || s.despawn_pending(e)) return false;
        s.deferred().reserve(1);
        s.deferred().push(detail::Command::Kind::despawn, e);
        return true;
    }
    if (!s.hooked()) [[likely]]
        return s.despawn(e);
    return detail::apply_despawn(s, e);
}

std::size_t World::despawn(std::span<const Entity> entities) {
    const detail::EntryCheck entry(*storage_);
    detail::Storage& s = *storage_;
    if (!s.permanent_words().empty()) {
        for (const Entity e : entities) detail::check_despawnable(s, "World::despawn", e);
    }
    if (s.deferring()) [[unlikely]] {
        detail::check_not_parallel(s, "World::despawn");
        return detail::queue_despawns(s, entities);
    }
    return detail::apply_despawns(s, entities);
}

std::size_t World::despawn_tables(std::span<const std::uint32_t> tables) {
    const detail::EntryCheck entry(*storage_);
    detail::Storage& s = *storage_;
    const auto concerned = [&s](std::uint32_t index) {
        const detail::Archetype& a = s.archetype(index);
        // A hooked sparse component's observers: the table's flag doesn't say.
        const bool sparse = s.hooked() && !s.sparse_sets().empty() &&
                            std::any_of(a.entities, a.entities + a.size,
                                        [&s](Entity e) { return detail::sparse_hooked(s, e); });
        return s.hooked(a) || sparse ||
               (!s.permanent_words().empty() &&
                std::any_of(a.entities, a.entities + a.size,
                            [&s](Entity e) { return s.permanent(e.index); }));
    };
    if (s.deferring() || s.relations() != nullptr ||
        std::any_of(tables.begin(), tables.end(), concerned)) [[unlikely]] {
        std::pmr::vector<Entity> all(s.resource());
        for (const std::uint32_t index : tables) {
            const detail::Archetype& a = s.archetype(index);
            all.insert(all.end(), a.entities, a.entities + a.size);
        }
        return despawn(all);
    }
    return s.despawn_tables(tables);
}

ArchetypeInfo World::archetype_info(std::uint32_t index) const noexcept {
    const detail::Archetype& a = storage_->archetype(index);
    std::size_t bytes = sizeof(Entity);
    for (const detail::Column& c : a.columns) {
        bytes += c.size + (c.changed != nullptr ? 2 * sizeof(std::uint64_t) : 0) +
                 (c.enabled != nullptr ? 1 : 0);
    }
    return {detail::shown_archetype(index), a.ids, a.size, a.capacity, bytes};
}

ArchetypeInfo World::archetype_of(Entity e) const {
    const detail::EntityRecord* r = storage_->try_record(e);
    if (r == nullptr || r->archetype == detail::pending_archetype) {
        std::ostringstream os;
        os << "World::archetype_of: entity " << e
           << (r == nullptr ? " is not alive" : " has no table yet (spawned while deferred)");
        throw Error(errc::not_alive, os.str());
    }
    return archetype_info(r->archetype);
}

std::vector<ArchetypeInfo> World::archetypes() const {
    std::vector<ArchetypeInfo> out;
    out.reserve(storage_->archetype_count());
    out.push_back(archetype_info(detail::empty_archetype));
    for (std::size_t i = detail::first_user_archetype; i < storage_->archetype_end(); ++i)
        out.push_back(archetype_info(static_cast<std::uint32_t>(i)));
    return out;
}

void World::reserve_table(std::uint32_t index, std::size_t n) {
    detail::Storage& s = *storage_;
    if (s.deferring() || s.parallel()) {
        throw Error(errc::invalid_argument,
                    "World::reserve: called while the world defers or iterates (a loop, a "
                    "defer_begin): a table in use can't grow; call it outside");
    }
    detail::Archetype& a = s.archetype(index);
    if (n > a.size) s.reserve_spawn(a, n - a.size);
}

void World::defer_begin() {
    detail::Storage& s = *storage_;
    detail::check_not_parallel(s, "World::defer_begin");
    s.begin_defer();
    s.set_user_defers(s.user_defers() + 1);
}

void World::defer_end() {
    detail::Storage& s = *storage_;
    detail::check_not_parallel(s, "World::defer_end");
    if (s.user_defers() == 0) {
        throw Error(errc::invalid_argument,
                    "World::defer_end: no defer_begin is open (each defer_end ends one)");
    }
    s.set_user_defers(s.user_defers() - 1);
    detail::end_defer(s);
}

bool World::flush() {
    detail::Storage& s = *storage_;
    detail::check_not_parallel(s, "World::flush");
    if (s.deferring()) return false;
    const detail::EntryCheck entry(s);
    detail::flush(s);
    return true;
}

bool World::deferring() const noexcept {
    return storage_->deferring();
}

Deferral::~Deferral() {
    if (world_ == nullptr) return;
    detail::Storage& s = world_->storage();
    s.set_user_defers(s.user_defers() - 1);
    detail::end_defer_noexcept(s);
}

bool World::is_permanent(Entity e) const noexcept {
    return is_alive(e) && storage_->permanent(e.index);
}

bool World::despawn_pending(Entity e) const noexcept {
    return storage_->despawn_pending(e);
}

bool World::remove_deferred(Entity e, std::span<const ComponentId> ids) {
    detail::Storage& s = *storage_;
    detail::check_not_parallel(s, "World::remove");
    const detail::EntityRecord* r = s.try_record(e);
    if (r == nullptr) detail::throw_not_alive("World::remove", e, ids[0]);
    s.check_plain(ids, "World::remove");
    s.deferred().reserve(ids.size());
    s.reserve_watch(ids.size());
    bool any = false;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        any = any || s.archetype(r->archetype).contains(ids[i]);
        s.watch(e, ids[i], s.deferred().mark());  // value writes until it applies are refused
        s.deferred().push(detail::Command::Kind::remove, e, ids[i],
                          static_cast<std::uint16_t>(i == 0 ? ids.size() : 0));
    }
    return any;
}

bool World::is_alive(Entity e) const noexcept {
    return storage_->try_record(e) != nullptr;
}

std::size_t World::count() const noexcept {
    return storage_->count();
}

std::vector<Entity> World::entities() const {
    return storage_->entities();
}

std::uint64_t World::tick() const noexcept {
    return storage_->tick();
}

std::uint64_t World::advance_tick() {
    detail::check_not_parallel(*storage_, "World::advance_tick");
    if (storage_->tick() >= max_tick)
        throw Error(errc::limit_exceeded, "World::advance_tick: the tick is at World::max_tick");
    return storage_->advance_tick();
}

std::size_t World::archetype_count() const noexcept {
    return storage_->archetype_count();
}

namespace detail {

namespace {
std::string describe(const char* op, Entity e, ComponentId id, const char* what) {
    std::ostringstream os;
    os << op << '<' << component_info(id).name << ">: entity " << e << what;
    return os.str();
}
}  // namespace

void throw_not_alive(const char* op, Entity e, ComponentId id) {
    throw Error(errc::not_alive, describe(op, e, id, " is not alive"));
}

void throw_missing(const char* op, Entity e, ComponentId id) {
    std::ostringstream os;
    os << " has no " << component_info(id).name;
    throw Error(errc::missing_component, describe(op, e, id, os.str().c_str()));
}

void check_write(Storage& s, const char* op, Entity e, ComponentId id) {
    const Command* c = s.queued_change(e, id);
    if (c == nullptr) return;
    const std::string_view name = component_info(id).name;
    std::ostringstream os;
    if (c->kind == Command::Kind::remove) {
        os << " has a queued remove of " << name
           << " (made while the world defers); a value written now would be lost when it "
              "applies: write it after the flush, or queue the new value with add";
    } else if (c->kind == Command::Kind::unrelate) {
        os << " has a queued unrelate of relation " << name
           << " (made while the world defers), which may remove its data; a value written now "
              "could be lost when it applies: write it after the flush";
    } else if (c->kind == Command::Kind::relate) {
        os << " has a queued relate of relation " << name
           << " (made while the world defers), whose data replaces the value when it applies: "
              "put the value in the relate, or write it after the flush";
    } else {
        os << " has a queued add of " << name
           << " (made while the world defers); a value written now would be overwritten when it "
              "applies: put the value in the add, or write it after the flush";
    }
    throw Error(errc::invalid_argument, describe(op, e, id, os.str().c_str()));
}

void check_enable(Storage& s, const char* op, Entity e, ComponentId id) {
    const Command* c = s.queued_change(e, id);
    if (c == nullptr || c->kind != Command::Kind::remove) return;  // an add keeps the flag
    std::ostringstream os;
    os << " has a queued remove of " << component_info(id).name
       << " (made while the world defers); an enable flag set now would be lost when it "
          "applies: set it after the flush";
    throw Error(errc::invalid_argument, describe(op, e, id, os.str().c_str()));
}

void throw_lookup(const Storage& s, const char* op, Entity e, ComponentId id) {
    if (s.try_record(e) == nullptr) throw_not_alive(op, e, id);
    throw_missing(op, e, id);
}

}  // namespace detail
}  // namespace tessera

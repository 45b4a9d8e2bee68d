/// @file detail/storage.hpp
/// A world's state: the core (detail/core.hpp) plus what the operation layer keeps beside it
/// (deferral, the world's command queue) and what the layers above attach to it (observers,
/// relations, strings) through opaque slots and the hooks of detail/hooks.hpp. Internal, not
/// API.
#pragma once

#include <tessera/assert.hpp>
#include <tessera/detail/attachment.hpp>
#include <tessera/detail/command_queue.hpp>
#include <tessera/detail/core.hpp>
#include <tessera/detail/entity_list.hpp>
#include <tessera/detail/hooks.hpp>
#include <tessera/detail/queued_changes.hpp>

#include <atomic>
#include <memory>
#include <memory_resource>
#include <span>
#include <vector>

namespace tessera {
class World;
class StringTable;
}  // namespace tessera

namespace tessera::detail {

class ObserverRegistry;
class RelationIndex;
struct RelationType;

/// The world's state. Every mutating member has the strong guarantee.
class Storage : public Core {
public:
    explicit Storage(std::pmr::memory_resource* mr);
    ~Storage();

    // ---- deferral: structural changes made while iterating are queued ----
    [[nodiscard]] bool deferring() const noexcept { return defer_depth_ != 0; }
    /// Whether `par_each` runs its rows on the calling thread (a one-worker schedule's run).
    [[nodiscard]] bool serial() const noexcept { return serial_; }
    void set_serial(bool on) noexcept { serial_ = on; }
    void begin_defer() noexcept { ++defer_depth_; }
    /// Leaves one level; true when that was the outermost and commands are queued (the
    /// operation layer then applies them: `detail::end_defer`).
    [[nodiscard]] bool leave_defer() noexcept {
        TESSERA_ASSERT(defer_depth_ != 0, "leave_defer without begin_defer");
        return --defer_depth_ == 0 && !deferred_.empty();
    }
    [[nodiscard]] CommandQueue& deferred() noexcept { return deferred_; }
    /// Deferral levels opened by `World::defer_begin` and not ended yet (part of the depth).
    [[nodiscard]] std::uint32_t user_defers() const noexcept { return user_defers_; }
    void set_user_defers(std::uint32_t n) noexcept { user_defers_ = n; }
    /// Whether a despawn of `e` is queued.
    [[nodiscard]] bool despawn_pending(Entity e) const noexcept;

    // ---- value writes against queued adds and removes (set, get_mut, ... while deferring) ----
    /// Whether the world queued an add or a remove since its queue was last seen empty: value
    /// writes then ask `queued_change`. One load; false in a world that never queues them.
    [[nodiscard]] bool writes_watched() const noexcept { return !queued_changes_.empty(); }
    /// Room to note `n` adds or removes about to be queued (call before pushing them; forgets
    /// the notes of an emptied queue first). @throws std::bad_alloc (nothing changes then).
    void reserve_watch(std::size_t n) {
        if (deferred_.empty()) queued_changes_.clear();
        queued_changes_.reserve(n);
    }
    /// Notes that the command at queue position `position` (`deferred().mark()` when pushed)
    /// adds or removes `id` on `e`. Precondition: `reserve_watch`.
    void watch(Entity e, ComponentId id, std::size_t position) noexcept {
        queued_changes_.note(e, id, position);
    }
    /// The add or remove of `id` on `e` still queued (the last one), or null. O(1) (a scan of
    /// the queue only after a failed call took back what it queued). Not while a `par_each`
    /// runs, forgets every note once the queue is empty.
    const Command* queued_change(Entity e, ComponentId id) noexcept;
    /// Scratch for the entities of a `spawn_many` whose table rows may move before it returns
    /// (observers, deferral): the returned span points here then.
    [[nodiscard]] std::pmr::vector<Entity>& spawned() noexcept { return spawned_; }

    // ---- hooks ----
    /// The hooks of what is attached. Precondition: `hooked()`.
    [[nodiscard]] const Hooks& hooks() const noexcept {
        TESSERA_ASSERT(relations_.hooks != nullptr || observer_hooks_ != nullptr,
                       "Storage::hooks: nothing is attached");
        return relations_.hooks != nullptr ? *relations_.hooks : *observer_hooks_;
    }

    // ---- observers (observer.hpp): null / false until the first subscription ----
    /// The world's observer registry, made on first use (defined in observer.cpp).
    ObserverRegistry& observer_registry();
    [[nodiscard]] ObserverRegistry* observers() const noexcept { return observers_.get(); }
    [[nodiscard]] const std::shared_ptr<ObserverRegistry>& observer_registry_ptr() const noexcept {
        return observers_;
    }
    /// Sets the observers' part of the hook flags: `any` subscription at all; `all` changes
    /// (entity or query observers); `by_id[id]` for components with their own observers.
    void set_subscriptions(bool any, bool all, std::span<const std::uint8_t> by_id) noexcept;

    // ---- relations (relation.hpp): null until the first relate ----
    [[nodiscard]] RelationIndex* relations() const noexcept {
        return static_cast<RelationIndex*>(relations_.object);
    }
    /// The relation index, made on first use (defined in relation.cpp). May throw bad_alloc.
    RelationIndex& relation_index();
    /// Attaches `a` as the relation index (it must be empty) and turns the hooks on.
    void attach_relations(Attachment a) noexcept;
    /// Marks `data` and `targets` as a relation's components: reserved and hooked.
    void mark_relation(ComponentId data, ComponentId targets) noexcept {
        reserve_component(data);
        reserve_component(targets);
    }
    /// Throws invalid_argument (naming `op` and the type) when one of `ids` is a relation's
    /// component: those are kept by relate/unrelate only. That is `ChildOf` and every
    /// `Targets<R>` in any world (`relation_only`), and the data of a relation used here.
    void check_plain(std::span<const ComponentId> ids, const char* op) const {
        for (const ComponentId id : ids) {
            // A type this world has recorded carries its flags here; others need the registry.
            const ComponentInfo* known = known_info(id);
            if (known != nullptr ? known->reserved || reserved(id) : relation_only(id)) [[unlikely]]
                throw_relation_component(id, op);
        }
    }
    /// Whether `id` belongs to a relation in every world, whatever it has seen: the built-in
    /// `ChildOf` and every `Targets<R>` (`ComponentInfo::reserved`). (Another relation's data
    /// `R` is one in a world once related there; before that it may be a plain component, and
    /// then never a relation.)
    [[nodiscard]] static bool relation_only(ComponentId id) noexcept {
        const ComponentInfo* info = find_component_info(id);
        return info != nullptr && info->reserved;
    }

    // ---- strings (dynamic.hpp): null until first used ----
    /// The world's string table, made on first use (`make_strings` is defined in dynamic.cpp).
    /// May throw bad_alloc.
    StringTable& strings() {
        if (strings_.object == nullptr) [[unlikely]]
            make_strings();
        return *static_cast<StringTable*>(strings_.object);
    }
    [[nodiscard]] const StringTable* strings_if() const noexcept {
        return static_cast<const StringTable*>(strings_.object);
    }

    // ---- names (names.hpp): null until the first set_name ----
    /// What the names module (names.cpp) is called on when an entity's first `ChildOf` parent
    /// changes: `check` before a relate makes `parent` the first parent of `child` (throws
    /// invalid_argument when a sibling there has `child`'s name), `moved` after any change of
    /// it (relate, unrelate, a parent's despawn), which never allocates.
    struct NameHooks {
        void (*check)(const Storage& s, Entity child, Entity parent);
        void (*moved)(Storage& s, Entity child) noexcept;
    };
    [[nodiscard]] void* names() const noexcept { return names_.object; }
    /// Attaches `a` (the names index, which must be new) with its hooks.
    void attach_names(Attachment a, const NameHooks* hooks) noexcept {
        names_ = a;
        name_hooks_ = hooks;
    }
    void check_name(Entity child, Entity parent) const {
        if (names_.object != nullptr) [[unlikely]]
            name_hooks_->check(*this, child, parent);
    }
    void name_moved(Entity child) noexcept {
        if (names_.object != nullptr) [[unlikely]]
            name_hooks_->moved(*this, child);
    }

    // ---- one structural change at a time (checked while assertions are on: EntryCheck) ----
    /// Marks the calling thread as inside a structural call; false when it already was (a
    /// nested call: observers, flushes). Asserts when another thread is inside one.
    bool enter() noexcept {
        const void* me = thread_token();
        const void* inside = nullptr;
        if (entered_.compare_exchange_strong(inside, me, std::memory_order_acquire)) return true;
        TESSERA_ASSERT(inside == me,
                       "two threads made structural changes to one world at once: spawn, add, "
                       "remove, despawn, relate and CommandBuffer::apply on a world must come "
                       "from one thread at a time (record them in CommandBuffers instead)");
        return false;
    }
    void leave() noexcept { entered_.store(nullptr, std::memory_order_release); }

    /// The world that owns this storage (observer callbacks receive it).
    [[nodiscard]] World& owner() const noexcept { return *owner_; }
    void set_owner(World* w) noexcept { owner_ = w; }

    // ---- whole-world copies (clone, snapshot, restore, load) ----
    /// `Core::copy_from`, plus copies of the relations, strings and names.
    void copy_from(const Storage& src, const char* op);
    /// `Core::swap_state`, with the relations, strings and names; observers, the owner and the
    /// command queue stay.
    void swap_state(Storage& other) noexcept;

private:
    [[noreturn]] static void throw_relation_component(ComponentId id, const char* op);
    static const void* thread_token() noexcept {
        thread_local const char token = 0;
        return &token;
    }
    void make_strings();
    void refresh_hooked() noexcept { set_hooked(subscribed_any_ || relations_.object != nullptr); }

    CommandQueue deferred_;
    QueuedChanges queued_changes_;
    std::pmr::vector<Entity> spawned_;
    std::shared_ptr<ObserverRegistry> observers_;
    const Hooks* observer_hooks_ = nullptr;
    Attachment relations_;
    Attachment strings_;
    Attachment names_;
    const NameHooks* name_hooks_ = nullptr;
    World* owner_ = nullptr;
    std::atomic<const void*> entered_{nullptr};  ///< the thread inside a structural call
    std::uint32_t defer_depth_ = 0;
    std::uint32_t user_defers_ = 0;
    bool serial_ = false;
    bool subscribed_any_ = false;  ///< the registry has a subscription
};

/// Checks, while assertions are on (TESSERA_ASSERTIONS), that no other thread is making a
/// structural change to the world while this one does: an entry point of every structural call
/// holds one. Calls refused anyway inside `par_each` (which reports them with an Error) and
/// nested calls from the same thread pass. Costs nothing when assertions are off.
class EntryCheck {
public:
#if TESSERA_ASSERTIONS
    explicit EntryCheck(Storage& s) noexcept : s_(!s.parallel() && s.enter() ? &s : nullptr) {}
    ~EntryCheck() {
        if (s_ != nullptr) s_->leave();
    }

private:
    Storage* s_;

public:
#else
    explicit EntryCheck(Storage&) noexcept {}
#endif
    EntryCheck(const EntryCheck&) = delete;
    EntryCheck& operator=(const EntryCheck&) = delete;
};

/// Puts `built` (a complete state made with `target`'s memory resource) in place of `target`'s
/// state, keeping its observers, known and tracked components and a tick that never goes back
/// (restore, load). `built` then holds the old state. Strong guarantee.
void replace_state(Storage& target, Storage& built);

/// Recomputes the storage's observation flags from its observer registry (after its state was
/// replaced: restore, load, a `spawn_many` put back). Defined with the registry (observer.cpp),
/// so the modules below observers can call it without including them.
void refresh_subscriptions(Storage& s) noexcept;

/// A storage allocated from (and allocating from) `mr`; `delete_storage` frees it.
Storage* new_storage(std::pmr::memory_resource* mr);
void delete_storage(Storage* s) noexcept;

/// Owns a storage from `new_storage` until released.
struct StorageGuard {
    Storage* s;
    explicit StorageGuard(Storage* owned) noexcept : s(owned) {}
    StorageGuard(const StorageGuard&) = delete;
    StorageGuard& operator=(const StorageGuard&) = delete;
    ~StorageGuard() { delete_storage(s); }
    Storage* release() noexcept { return std::exchange(s, nullptr); }
};

/// Throws invalid_argument (naming `op`) while `s` is iterating: whole-world copies, restores
/// and loads run outside loops, observers and parallel systems.
void check_quiet(const Storage& s, const char* op);

/// One relation kind of a world, for whole-world readers: its type and its reverse lists (by
/// target entity index; relate order).
struct RelationKindView {
    const RelationType* type;
    std::span<const EntityList> sources;
};
/// The relation kinds of `s`, in the order they were first used.
std::vector<RelationKindView> relation_kinds(const Storage& s);
/// Registers relation `type` in `s` (before any archetype holds its components: load).
void register_relation(Storage& s, const RelationType& type, const char* op);
/// Sets the reverse list of `target` for registered relation `type` (load).
void set_sources(Storage& s, const RelationType& type, std::uint32_t target,
                 std::span<const Entity> sources);

}  // namespace tessera::detail

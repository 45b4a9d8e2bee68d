/// @file commands.hpp
/// `CommandBuffer`: structural changes recorded without touching the world, applied later.
#pragma once

#include <tessera/component.hpp>
#include <tessera/detail/command_queue.hpp>
#include <tessera/entity.hpp>
#include <tessera/world.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera {

/// What `CommandBuffer::apply` does with a command whose entity is dead.
enum class on_dead : std::uint8_t {
    raise,  ///< add/remove throw `not_alive` (despawn of the dead is skipped either way)
    skip,   ///< every such command is skipped and counted in `skipped()`
};

/// Records spawns, despawns, adds and removes without touching any world; `apply` plays them
/// into a world in order. Recording allocates from the buffer's own memory resource, so a
/// buffer can be filled on a worker thread while the world is iterated elsewhere. One buffer
/// belongs to one thread at a time: use one per worker, and apply them in a fixed order for a
/// deterministic result.
///
/// `spawn` returns a *placeholder* entity (generation 0xFFFFFFFF, never a live entity) usable
/// in any later command of the same buffer; `resolved(placeholder)` gives the real entity after
/// `apply`, until the next command is recorded after a complete apply.
///
/// Values are moved into the buffer (stable storage, aligned for their type) and owned by it
/// until applied: `clear()` and the destructor destroy unapplied values exactly once.
class CommandBuffer {
public:
    /// A buffer allocating from the default memory resource.
    CommandBuffer() : CommandBuffer(std::pmr::get_default_resource()) {}
    /// A buffer allocating from `resource` (which must outlive it).
    explicit CommandBuffer(std::pmr::memory_resource* resource)
        : queue_(resource), resolved_(resource) {}
    CommandBuffer(const CommandBuffer&) = delete;
    CommandBuffer& operator=(const CommandBuffer&) = delete;

    /// Records a spawn (with `components`, if any) and returns its placeholder.
    template <class... Ts>
    Entity spawn(Ts&&... components);

    /// Records adding (or replacing) `components` on `e` (an entity or a placeholder).
    template <class... Ts>
    requires(sizeof...(Ts) > 0) void add(Entity e, Ts&&... components);

    /// Records adding (or replacing) a `T` made from `args` on `e`, building it in the buffer's
    /// own storage (no temporary): `apply` moves it into the table once. If `T`'s constructor
    /// throws, nothing is recorded.
    template <class T, class... Args>
    void emplace(Entity e, Args&&... args) {
        static_assert(Component<T>,
                      "tessera: a component type must be an object type that is nothrow move "
                      "constructible and nothrow destructible (mark its move constructor "
                      "noexcept)");
        static_assert(detail::emplaceable_v<T, Args&&...>,
                      "tessera: CommandBuffer::emplace<T>(e, args...) needs a T constructible "
                      "from args (or an aggregate initialisable from them)");
        begin_record();
        queue_.reserve(1);
        const ComponentInfo& info = component_info<T>();
        std::byte* slot = queue_.allocate_value(info);
        detail::emplace_at<T>(slot, std::forward<Args>(args)...);
        queue_.push_add(e, info, slot, 1);
    }

    /// Records adding a value-initialised `T` (tags, default-constructible components).
    template <class T>
    void add(Entity e) {
        add(e, T{});
    }

    /// Records removing `Ts` from `e`. Removing an absent component is skipped at apply.
    template <class... Ts>
    requires(sizeof...(Ts) > 0) void remove(Entity e) {
        begin_record();
        queue_.reserve(sizeof...(Ts));
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (queue_.push(detail::Command::Kind::remove, e, component_id<Ts>(),
                         I == 0 ? sizeof...(Ts) : 0),
             ...);
        }
        (std::index_sequence_for<Ts...>{});
    }

    /// Records adding component `id` value-initialised (runtime components: all fields zero).
    /// @throws Error(not_registered) for an id no component has, Error(invalid_argument) when
    /// the type is not default constructible (both while recording).
    void add(Entity e, ComponentId id);
    /// Records removing component `id` from `e`. @throws Error(not_registered).
    void remove(Entity e, ComponentId id);

    /// Records despawning `e`. Despawning an entity that is dead by then is skipped.
    void despawn(Entity e);

    /// @name Relations
    /// Include `<tessera/relation.hpp>` to call these: their bodies are there.
    ///@{

    /// Records `world.relate(e, data, target)` (relation.hpp); either may be a placeholder. A
    /// `ChildOf` that would close a loop is dropped at apply, which throws `hierarchy_cycle`.
    template <class R>
    void relate(Entity e, R&& data, Entity target);
    /// Records `world.unrelate<R>(e, target)`.
    template <class R>
    void unrelate(Entity e, Entity target);
    /// Records `world.unrelate<R>(e)` (every target).
    template <class R>
    void unrelate(Entity e);
    ///@}

    /// Applies every command in order and returns how many took effect; the buffer empties as
    /// it goes. Commands skipped (despawn of the dead, remove of the absent, and with
    /// `on_dead::skip` any command whose entity died) are counted in `skipped()`.
    /// When a command throws (`not_alive` for add/remove on a dead entity under
    /// `on_dead::raise`, `permanent_entity`, `bad_alloc`), the ones before it have taken effect
    /// and left the buffer; it and the rest stay, still owning their values, and a later
    /// `apply` resumes with them (spawned placeholders keep their entity).
    /// @throws Error(invalid_argument) when `world` is iterating (apply after the loop).
    std::size_t apply(World& world, on_dead policy = on_dead::raise);

    /// The entity a placeholder became. @throws Error(invalid_argument) for a placeholder that
    /// was not applied (or not from this buffer).
    [[nodiscard]] Entity resolved(Entity placeholder) const;

    /// Commands recorded and not yet applied.
    [[nodiscard]] std::size_t size() const noexcept { return queue_.size(); }
    /// Commands the last `apply` skipped.
    [[nodiscard]] std::size_t skipped() const noexcept { return skipped_; }
    /// Drops every command, destroying unapplied values.
    void clear() noexcept;

    /// Whether `e` is a placeholder (of some buffer).
    [[nodiscard]] static constexpr bool is_placeholder(Entity e) noexcept {
        return e.generation == placeholder_generation && e.index != 0xFFFFFFFFu;
    }

private:
    static constexpr std::uint32_t placeholder_generation = 0xFFFFFFFFu;

    // After a complete apply, the next recorded command starts a new batch of placeholders.
    void begin_record() noexcept {
        if (complete_) {
            resolved_.clear();
            placeholders_ = 0;
            complete_ = false;
        }
    }
    Entity next_placeholder() noexcept { return Entity{placeholders_++, placeholder_generation}; }
    template <class... Ts>
    void record_adds(Entity e, Ts&&... components);

    detail::CommandQueue queue_;
    std::pmr::vector<Entity> resolved_;  ///< by placeholder index
    std::uint32_t placeholders_ = 0;
    std::size_t skipped_ = 0;
    bool complete_ = false;
};

template <class... Ts>
void CommandBuffer::record_adds(Entity e, Ts&&... components) {
    static_assert((Component<std::remove_cvref_t<Ts>> && ...),
                  "tessera: a component type must be an object type that is nothrow move "
                  "constructible and nothrow destructible (mark its move constructor noexcept)");
    if constexpr (!((std::is_nothrow_constructible_v<std::remove_cvref_t<Ts>, Ts&&>)&&...)) {
        // Copies may throw: make them before the buffer changes.
        record_adds(e, std::remove_cvref_t<Ts>(std::forward<Ts>(components))...);
    } else {
        const ComponentInfo* infos[] = {&component_info<std::remove_cvref_t<Ts>>()...};
        std::byte* slots[sizeof...(Ts)];
        for (std::size_t i = 0; i < sizeof...(Ts); ++i) slots[i] = queue_.allocate_value(*infos[i]);
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            // construct_at rather than a placement new-expression: nvcc 13's front end cannot
            // parse the latter inside this fold (docs/gpu.md: tessera's headers in .cu files).
            ((std::construct_at(reinterpret_cast<std::remove_cvref_t<Ts>*>(slots[I]),
                                std::forward<Ts>(components)),
              queue_.push_add(e, *infos[I], slots[I], I == 0 ? sizeof...(Ts) : 0)),
             ...);
        }
        (std::index_sequence_for<Ts...>{});
    }
}

template <class... Ts>
Entity CommandBuffer::spawn(Ts&&... components) {
    begin_record();
    queue_.reserve(1 + sizeof...(Ts));
    const std::size_t mark = queue_.mark();
    const Entity p = next_placeholder();
    queue_.push_place(p, sizeof...(Ts));
    if constexpr (sizeof...(Ts) > 0) {
        try {
            record_adds(p, std::forward<Ts>(components)...);
        } catch (...) {
            queue_.truncate(mark);  // never half a spawn
            --placeholders_;
            throw;
        }
    }
    return p;
}

template <class... Ts>
requires(sizeof...(Ts) > 0) void CommandBuffer::add(Entity e, Ts&&... components) {
    begin_record();
    queue_.reserve(sizeof...(Ts));
    record_adds(e, std::forward<Ts>(components)...);
}

}  // namespace tessera

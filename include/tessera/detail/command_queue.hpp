/// @file detail/command_queue.hpp
/// An ordered queue of structural commands with type-erased component values. Internal, not
/// API: the world's deferred changes use it (and `CommandBuffer` builds on the same idea).
#pragma once

#include <tessera/component.hpp>
#include <tessera/entity.hpp>

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <span>
#include <vector>

namespace tessera::detail {

struct RelationType;
class Hooks;

/// One recorded structural change.
struct Command {
    enum class Kind : std::uint8_t { place, despawn, add, remove, relate, unrelate };
    Kind kind;
    /// place: how many `add`s right behind it belong to the spawn; the first add / remove of a
    /// call with several components: how many commands (this one included) the call made;
    /// unrelate: 1 to remove every target.
    std::uint16_t group = 0;
    Entity entity;
    ComponentId id;             ///< add / remove; relate / unrelate: the relation's data id
    const ComponentInfo* info;  ///< add, relate: the value's hooks
    std::byte* value;           ///< add, relate: the value (owned by the queue until applied)
    Entity target{};            ///< relate / unrelate: the target
    const RelationType* relation = nullptr;  ///< relate / unrelate
    const Hooks* hooks = nullptr;            ///< relate / unrelate: who applies it (the relations)
};

/// Commands in order, their values in stable blocks (values never move once constructed, so
/// any component type works, whatever its move constructor does).
class CommandQueue {
public:
    explicit CommandQueue(std::pmr::memory_resource* mr) : commands_(mr), blocks_(mr), mr_(mr) {}
    ~CommandQueue();
    CommandQueue(const CommandQueue&) = delete;
    CommandQueue& operator=(const CommandQueue&) = delete;

    [[nodiscard]] bool empty() const noexcept { return next_ == commands_.size(); }
    [[nodiscard]] std::size_t size() const noexcept { return commands_.size() - next_; }

    /// Room for `n` more commands (call before pushing a group that must go in whole).
    void reserve(std::size_t n);
    /// Records a command without a value. Precondition: room reserved (no throw then).
    void push(Command::Kind kind, Entity e, ComponentId id = {}, std::uint16_t group = 0) noexcept;
    /// Records a spawn whose `group` components follow as `add`s. Precondition: room reserved.
    void push_place(Entity e, std::uint16_t group) noexcept;
    /// Space for an `add` value of `info`'s type, aligned; the caller constructs the value
    /// there and then calls `push_add`. May throw bad_alloc.
    std::byte* allocate_value(const ComponentInfo& info);
    /// Records an add whose value was constructed at `value`. Precondition: room reserved.
    void push_add(Entity e, const ComponentInfo& info, std::byte* value,
                  std::uint16_t group = 0) noexcept;

    /// Records a relate whose `R` value was constructed at `value` (from `allocate_value`), or an
    /// unrelate (`value` null) of `target` or, with `all`, of every target. Precondition: room
    /// reserved.
    /// `hooks` apply it (the relations').
    void push_relation(Command::Kind kind, Entity e, Entity target, const RelationType& relation,
                       const Hooks& hooks, const ComponentInfo& info, std::byte* value,
                       bool all = false) noexcept;

    /// The next command to apply, or null. `pop()` marks it applied (its value, if any, must
    /// have been moved out or destroyed by the caller).
    [[nodiscard]] Command* front() noexcept {
        return next_ < commands_.size() ? &commands_[next_] : nullptr;
    }
    void pop() noexcept;
    /// Commands after `front()` still queued (for `despawn_pending`).
    [[nodiscard]] std::span<const Command> pending() const noexcept {
        return {commands_.data() + next_, commands_.size() - next_};
    }
    /// Destroys every unapplied value and forgets everything.
    void clear() noexcept;
    /// A position in the queue: `truncate(mark())` later drops what was pushed since (while no
    /// command was popped in between).
    [[nodiscard]] std::size_t mark() const noexcept { return commands_.size(); }
    /// Drops the commands pushed since `mark`, destroying their values (a failed call takes back
    /// what it queued). Their value space stays taken until the queue empties.
    void truncate(std::size_t mark) noexcept;
    /// The commands pushed since `mark` (not yet popped).
    [[nodiscard]] std::span<const Command> since(std::size_t mark) const noexcept {
        return {commands_.data() + mark, commands_.size() - mark};
    }

private:
    struct Block {
        std::byte* data;
        std::size_t size;
        std::size_t used;
        std::size_t alignment;
    };
    std::pmr::vector<Command> commands_;
    std::pmr::vector<Block> blocks_;
    std::pmr::memory_resource* mr_;
    std::size_t next_ = 0;
};

}  // namespace tessera::detail

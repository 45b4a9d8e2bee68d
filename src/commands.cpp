// CommandBuffer::apply: plays recorded commands into a world, resumably.
#include <tessera/commands.hpp>
#include <tessera/detail/operations.hpp>
#include <tessera/error.hpp>

#include <sstream>

namespace tessera {

void CommandBuffer::despawn(Entity e) {
    begin_record();
    queue_.reserve(1);
    queue_.push(detail::Command::Kind::despawn, e);
}

void CommandBuffer::clear() noexcept {
    queue_.clear();
    resolved_.clear();
    placeholders_ = 0;
    complete_ = false;
}

Entity CommandBuffer::resolved(Entity placeholder) const {
    if (!is_placeholder(placeholder) || placeholder.index >= resolved_.size() ||
        !resolved_[placeholder.index]) {
        std::ostringstream os;
        os << "CommandBuffer::resolved: " << placeholder
           << " is not an applied placeholder of this buffer";
        throw Error(errc::invalid_argument, os.str());
    }
    return resolved_[placeholder.index];
}

std::size_t CommandBuffer::apply(World& world, on_dead policy) {
    detail::Storage& s = world.storage();
    const detail::EntryCheck entry(s);
    if (s.deferring()) {
        throw Error(errc::invalid_argument,
                    "CommandBuffer::apply: the world is iterating; apply the buffer after the "
                    "loop");
    }
    std::size_t applied = 0;
    skipped_ = 0;
    resolved_.reserve(placeholders_);
    while (detail::Command* c = queue_.front()) {
        // Placeholders always come from an earlier spawn command of this buffer.
        auto resolve = [&](Entity x) {
            if (!is_placeholder(x)) return x;
            return x.index < resolved_.size() ? resolved_[x.index] : Entity::null();
        };
        const Entity e = resolve(c->entity);
        const Entity other = resolve(c->target);
        detail::Applied took;
        switch (c->kind) {
            case detail::Command::Kind::place: {
                const std::uint32_t placeholder = c->entity.index;
                if (resolved_.size() <= placeholder) resolved_.resize(placeholder + 1);
                const detail::Storage::IndexMark mark = s.index_mark();
                const Entity made = s.spawn_pending();
                try {
                    took = detail::apply_front(s, queue_, made);  // places it, in one move
                } catch (...) {
                    if (s.try_record(made) != nullptr &&
                        s.try_record(made)->archetype == detail::pending_archetype) {
                        // Not placed: the command stays for a later apply, and the index the
                        // entity took is free again as if it had never been taken.
                        s.release_pending(mark, {&made, 1});
                        throw;
                    }
                    resolved_[placeholder] = made;  // placed; an observer threw
                    throw;
                }
                resolved_[placeholder] = made;
                applied += took.applied;
                continue;
            }
            case detail::Command::Kind::despawn:
                detail::check_despawnable(s, "CommandBuffer::despawn", e);
                break;
            case detail::Command::Kind::add:
            case detail::Command::Kind::remove:
                if (!world.is_alive(e) && policy == on_dead::raise) {
                    detail::throw_not_alive(c->kind == detail::Command::Kind::add
                                                ? "CommandBuffer::add"
                                                : "CommandBuffer::remove",
                                            e, c->id);
                }
                if (c->kind == detail::Command::Kind::add && world.is_alive(e))
                    s.ensure_component(c->id);  // registers the type in this world
                break;
            case detail::Command::Kind::relate:
            case detail::Command::Kind::unrelate: {
                const char* op = c->kind == detail::Command::Kind::relate
                                     ? "CommandBuffer::relate"
                                     : "CommandBuffer::unrelate";
                if (policy == on_dead::raise) {
                    if (!world.is_alive(e)) detail::throw_not_alive(op, e, c->id);
                    if (c->kind == detail::Command::Kind::relate && !world.is_alive(other))
                        detail::throw_not_alive(op, other, c->id);
                }
                break;
            }
        }
        took = detail::apply_front(s, queue_, e, other);
        applied += took.applied;
        skipped_ += took.skipped;
    }
    complete_ = true;
    return applied;
}

}  // namespace tessera

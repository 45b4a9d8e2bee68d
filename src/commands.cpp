// CommandBuffer::apply: plays recorded commands into a world, resumably.
#include <tessera/commands.hpp>
#include <tessera/detail/storage.hpp>
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
    if (s.deferring()) {
        throw Error(errc::invalid_argument,
                    "CommandBuffer::apply: the world is iterating; apply the buffer after the "
                    "loop");
    }
    std::size_t applied = 0;
    skipped_ = 0;
    resolved_.reserve(placeholders_);
    while (detail::Command* c = queue_.front()) {
        Entity e = c->entity;
        if (is_placeholder(e)) {
            // Placeholders always come from an earlier spawn command of this buffer.
            e = e.index < resolved_.size() ? resolved_[e.index] : Entity::null();
        }
        const bool alive = world.is_alive(e);
        bool took_effect = false;
        switch (c->kind) {
            case detail::Command::Kind::place: {
                const Entity made = world.spawn();
                if (resolved_.size() <= c->entity.index) resolved_.resize(c->entity.index + 1);
                resolved_[c->entity.index] = made;
                took_effect = true;
                break;
            }
            case detail::Command::Kind::despawn: took_effect = alive && world.despawn(e); break;
            case detail::Command::Kind::add:
                if (!alive && policy == on_dead::raise) {
                    detail::throw_not_alive("CommandBuffer::add", e, c->id);
                }
                if (alive) {
                    s.ensure_component(c->id);  // registers the type in this world
                    s.add_value(e, c->id, c->value, "CommandBuffer::add");
                    c->value = nullptr;  // moved into the world
                    took_effect = true;
                }
                break;
            case detail::Command::Kind::remove:
                if (!alive && policy == on_dead::raise) {
                    detail::throw_not_alive("CommandBuffer::remove", e, c->id);
                }
                took_effect = alive && s.remove_one(e, c->id, "CommandBuffer::remove");
                break;
        }
        if (c->value != nullptr && c->info->destroy != nullptr) c->info->destroy(c->value, 1);
        c->value = nullptr;
        queue_.pop();
        if (took_effect)
            ++applied;
        else
            ++skipped_;
    }
    complete_ = true;
    return applied;
}

}  // namespace tessera

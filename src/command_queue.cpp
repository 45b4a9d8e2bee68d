// The world's queue of deferred structural commands.
#include <tessera/detail/command_queue.hpp>

#include <algorithm>

namespace tessera::detail {

namespace {
constexpr std::size_t block_size = 4096;
constexpr std::size_t block_alignment = 64;
}  // namespace

CommandQueue::~CommandQueue() {
    clear();
    for (const Block& b : blocks_) mr_->deallocate(b.data, b.size, b.alignment);
}

void CommandQueue::reserve(std::size_t n) {
    if (commands_.size() + n > commands_.capacity()) {
        commands_.reserve(std::max(commands_.size() + n, commands_.capacity() * 2));
    }
}

void CommandQueue::push(Command::Kind kind, Entity e, ComponentId id,
                        std::uint16_t group) noexcept {
    commands_.push_back(Command{kind, group, e, id, nullptr, nullptr});
}

void CommandQueue::push_place(Entity e, std::uint16_t group) noexcept {
    commands_.push_back(Command{Command::Kind::place, group, e, {}, nullptr, nullptr});
}

std::byte* CommandQueue::allocate_value(const ComponentInfo& info) {
    const std::size_t align = std::max<std::size_t>(info.alignment, 1);
    if (!blocks_.empty()) {
        Block& b = blocks_.back();
        const std::size_t at = (b.used + align - 1) / align * align;
        if (at + info.size <= b.size && align <= block_alignment) {
            b.used = at + info.size;
            return b.data + at;
        }
    }
    if (blocks_.size() == blocks_.capacity())
        blocks_.reserve(std::max<std::size_t>(4, blocks_.size() * 2));
    const std::size_t size = std::max(block_size, info.size + align);
    const std::size_t alignment = std::max(block_alignment, align);
    auto* data = static_cast<std::byte*>(mr_->allocate(size, alignment));
    blocks_.push_back(Block{data, size, info.size, alignment});
    return data;
}

void CommandQueue::push_add(Entity e, const ComponentInfo& info, std::byte* value,
                            std::uint16_t group) noexcept {
    commands_.push_back(Command{Command::Kind::add, group, e, info.id, &info, value});
}

void CommandQueue::push_relation(Command::Kind kind, Entity e, Entity target,
                                 const RelationType& relation, const Hooks& hooks,
                                 const ComponentInfo& info, std::byte* value, bool all) noexcept {
    commands_.push_back(Command{kind, static_cast<std::uint16_t>(all ? 1 : 0), e, info.id, &info,
                                value, target, &relation, &hooks});
}

void CommandQueue::pop() noexcept {
    ++next_;
    if (next_ == commands_.size()) {
        // Everything applied: start over, keeping the capacity and the first block.
        commands_.clear();
        next_ = 0;
        for (std::size_t i = 1; i < blocks_.size(); ++i) {
            mr_->deallocate(blocks_[i].data, blocks_[i].size, blocks_[i].alignment);
        }
        if (!blocks_.empty()) {
            blocks_.resize(1);
            blocks_[0].used = 0;
        }
    }
}

void CommandQueue::truncate(std::size_t mark) noexcept {
    for (std::size_t i = mark; i < commands_.size(); ++i) {
        const Command& c = commands_[i];
        if (c.value != nullptr && c.info->destroy != nullptr) c.info->destroy(c.value, 1);
    }
    commands_.erase(commands_.begin() + static_cast<std::ptrdiff_t>(mark), commands_.end());
}

void CommandQueue::clear() noexcept {
    for (std::size_t i = next_; i < commands_.size(); ++i) {
        const Command& c = commands_[i];
        if (c.value != nullptr && c.info->destroy != nullptr) c.info->destroy(c.value, 1);
    }
    commands_.clear();
    next_ = 0;
    for (Block& b : blocks_) b.used = 0;
}

}  // namespace tessera::detail

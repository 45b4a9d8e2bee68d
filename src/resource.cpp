// The world's resource map: one boxed value per type.
#include <tessera/resource.hpp>

#include <algorithm>
#include <cstddef>
#include <memory_resource>
#include <string>
#include <unordered_map>

namespace tessera::detail {

struct ResourceMap::Boxes {
    explicit Boxes(std::pmr::memory_resource* mr) : map(mr) {}
    std::pmr::unordered_map<std::type_index, Box> map;
};

ResourceMap::~ResourceMap() {
    if (boxes_ == nullptr) return;
    for (auto& [type, box] : boxes_->map) box.destroy(box.value, mr_);
    std::pmr::polymorphic_allocator<>(mr_).delete_object(boxes_);
}

void* ResourceMap::find(std::type_index type) const noexcept {
    if (boxes_ == nullptr) return nullptr;
    const auto it = boxes_->map.find(type);
    return it == boxes_->map.end() ? nullptr : it->second.value;
}

void ResourceMap::put(std::type_index type, Box box) {
    try {
        // Room for the update entry first, so nothing can fail once a value is replaced.
        if (box.update != nullptr && updaters_.size() == updaters_.capacity())
            updaters_.reserve(updaters_.empty() ? 4 : 2 * updaters_.capacity());
        if (boxes_ == nullptr)
            boxes_ = std::pmr::polymorphic_allocator<>(mr_).new_object<Boxes>(mr_);
        const auto [it, inserted] = boxes_->map.try_emplace(type, box);
        if (!inserted) {
            drop_updater(type);
            it->second.destroy(it->second.value, mr_);
            it->second = box;
        }
    } catch (...) {
        box.destroy(box.value, mr_);
        throw;
    }
    if (box.update != nullptr) updaters_.push_back({type, box.value, box.update});
}

bool ResourceMap::erase(std::type_index type) noexcept {
    if (boxes_ == nullptr) return false;
    const auto it = boxes_->map.find(type);
    if (it == boxes_->map.end()) return false;
    drop_updater(type);
    it->second.destroy(it->second.value, mr_);
    boxes_->map.erase(it);
    return true;
}

void ResourceMap::update_events() noexcept {
    // By index: an event's destructor may make a new queue, which appends here.
    for (std::size_t i = 0; i < updaters_.size(); ++i) updaters_[i].update(updaters_[i].value);
}

void ResourceMap::drop_updater(std::type_index type) noexcept {
    const auto it = std::find_if(updaters_.begin(), updaters_.end(),
                                 [&](const Updater& u) { return u.type == type; });
    if (it != updaters_.end()) updaters_.erase(it);
}

void throw_missing_resource(std::string_view type) {
    throw Error(errc::missing_resource, "World::resource<" + std::string(type) +
                                            ">: the world has no " + std::string(type) +
                                            " resource (insert_resource it first)");
}

}  // namespace tessera::detail

namespace tessera {

namespace {
void destroy_map(void* object, std::pmr::memory_resource* mr) noexcept {
    std::pmr::polymorphic_allocator<>(mr).delete_object(static_cast<detail::ResourceMap*>(object));
}
}  // namespace

detail::ResourceMap& World::resources() {
    if (resources_.object == nullptr) {
        std::pmr::memory_resource* mr = storage_->resource();
        // Resources are not part of the world's state: no copy (clone and snapshot leave them),
        // no hooks.
        resources_ = {std::pmr::polymorphic_allocator<>(mr).new_object<detail::ResourceMap>(mr),
                      &destroy_map, nullptr, nullptr};
    }
    return *resource_map();
}

}  // namespace tessera

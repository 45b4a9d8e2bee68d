/// @file detail/attachment.hpp
/// `Attachment`: how a lower module holds state that a higher one made (the storage holds the
/// relation index and the string table, the world its resources) knowing it only by the
/// functions that came with it. Internal, not API.
#pragma once

#include <memory_resource>

namespace tessera::detail {

class Storage;
class Hooks;

/// Something a layer above keeps per world (the relation index, the string table, the
/// resources). The owner (the storage; the world for resources) destroys it, and the storage
/// copies its own with the world's state, knowing it only by these functions, so it calls
/// nothing of the module that made it.
struct Attachment {
    void* object = nullptr;
    /// Destroys `object`, which was allocated from `mr` (the storage's memory resource).
    void (*destroy)(void* object, std::pmr::memory_resource* mr) noexcept = nullptr;
    /// A copy of `object` for `dst` (whose core is already a copy of the source's). May throw.
    void* (*copy)(const void* object, Storage& dst) = nullptr;
    /// The hooks this attachment needs while it exists (null: none).
    const Hooks* hooks = nullptr;
    void reset(std::pmr::memory_resource* mr) noexcept {
        if (object != nullptr) destroy(object, mr);
        *this = {};
    }
};

}  // namespace tessera::detail

// Entity names (names.hpp): a hash map from (first ChildOf parent, name) to entity, and per
// entity index the map entry holding its name. Entries are checked when read (the entity
// alive, its first parent the key's), so a despawn needs no hook; a change of first parent
// re-keys the entry (Storage::NameHooks, called by the relations).
#include "relation_index.hpp"
#include "utf8.hpp"

#include <tessera/names.hpp>

#include <functional>
#include <memory_resource>
#include <string>
#include <unordered_map>

namespace tessera::detail {

namespace {

struct Key {
    std::uint64_t parent;  ///< Entity::to_bits of the first parent (null: a root)
    std::pmr::string name;
};
struct KeyView {
    std::uint64_t parent;
    std::string_view name;
};
struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(const KeyView& k) const noexcept {
        return std::hash<std::string_view>{}(k.name) ^ (k.parent * 0x9E3779B97F4A7C15ull);
    }
    std::size_t operator()(const Key& k) const noexcept {
        return (*this)(KeyView{k.parent, k.name});
    }
};
struct KeyEqual {
    using is_transparent = void;
    static KeyView view(const Key& k) noexcept { return {k.parent, k.name}; }
    static KeyView view(const KeyView& k) noexcept { return k; }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const noexcept {
        const KeyView x = view(a), y = view(b);
        return x.parent == y.parent && x.name == y.name;
    }
};

using Map = std::pmr::unordered_map<Key, Entity, KeyHash, KeyEqual>;
using Entry = Map::value_type;

Entity first_parent(const Storage& s, Entity e) noexcept {
    const EntityList* list = targets_of(s, lookup_id<Targets<ChildOf>>(), e);
    return list == nullptr || list->empty() ? Entity::null() : list->front();
}

}  // namespace

/// The names of a world.
class NameIndex {
public:
    explicit NameIndex(std::pmr::memory_resource* mr) : map_(mr), slots_(mr), mr_(mr) {}

    /// The entry naming `e` (alive), or null.
    [[nodiscard]] Entry* entry_of(const Storage& s, Entity e) const noexcept {
        if (s.try_record(e) == nullptr || e.index >= slots_.size()) return nullptr;
        const Slot& slot = slots_[e.index];
        return slot.generation == e.generation ? slot.entry : nullptr;
    }
    /// Whether `entry` is current: its entity alive, named by it, under the key's parent.
    [[nodiscard]] bool current(const Storage& s, const Entry& entry) const noexcept {
        return entry_of(s, entry.second) == &entry &&
               first_parent(s, entry.second).to_bits() == entry.first.parent;
    }
    [[nodiscard]] const Entry* find(const Storage& s, Entity parent, std::string_view name) const {
        const auto it = map_.find(KeyView{parent.to_bits(), name});
        return it != map_.end() && current(s, *it) ? &*it : nullptr;
    }

    void set(Storage& s, Entity e, std::string_view name) {
        constexpr const char* op = "World::set_name";
        const Entity parent = first_parent(s, e);
        if (const Entry* other = find(s, parent, name); other != nullptr) {
            if (other->second == e) return;
            throw_duplicate(op, e, other->second, name);
        }
        if (slots_.size() <= e.index) slots_.resize(std::size_t{e.index} + 1);
        if (map_.size() >= sweep_at_) sweep(s);
        // A stale entry of the same key is reused; else a new one (may throw: nothing changed).
        Entry* entry = nullptr;
        if (auto it = map_.find(KeyView{parent.to_bits(), name}); it != map_.end()) {
            drop_slot(*it);
            it->second = e;
            entry = &*it;
        } else {
            entry = &*map_.emplace(Key{parent.to_bits(), std::pmr::string(name, mr_)}, e).first;
        }
        if (Entry* old = entry_of(s, e); old != nullptr && old != entry) {
            map_.erase(map_.find(KeyView{old->first.parent, old->first.name}));
        }
        slots_[e.index] = Slot{e.generation, entry};
    }

    /// Re-keys `e`'s entry under its current first parent; when a sibling there has the name,
    /// it stays under the old key. Never allocates (the map's size is unchanged).
    void moved(Storage& s, Entity e) noexcept {
        Entry* entry = entry_of(s, e);
        if (entry == nullptr) return;
        const std::uint64_t parent = first_parent(s, e).to_bits();
        if (entry->first.parent == parent) return;
        if (auto it = map_.find(KeyView{parent, entry->first.name}); it != map_.end()) {
            if (current(s, *it)) return;  // taken: e keeps its name, unreachable by path
            drop_slot(*it);
            map_.erase(it);
        }
        auto node = map_.extract(map_.find(KeyView{entry->first.parent, entry->first.name}));
        node.key().parent = parent;
        map_.insert(std::move(node));  // the node (and `entry`) stays where it was
    }

    /// Calls `fn(Entity, std::string_view)` for every named live entity, by entity index.
    template <class F>
    void each(const Storage& s, F&& fn) const {
        for (std::uint32_t i = 0; i < slots_.size(); ++i) {
            const Slot& slot = slots_[i];
            if (slot.entry == nullptr) continue;
            const Entity e{i, slot.generation};
            if (entry_of(s, e) == slot.entry) fn(e, std::string_view(slot.entry->first.name));
        }
    }

    /// A copy for `dst` (whose core is a copy of this index's world): the same entries
    /// under the same keys.
    NameIndex* copy(Storage& dst) const {
        auto* out = new_index(dst.resource());
        try {
            out->slots_.resize(slots_.size());
            for (std::uint32_t i = 0; i < slots_.size(); ++i) {
                const Slot& slot = slots_[i];
                if (slot.entry == nullptr ||
                    entry_of(dst, Entity{i, slot.generation}) != slot.entry)
                    continue;
                Entry& e = *out->map_
                                .emplace(Key{slot.entry->first.parent,
                                             std::pmr::string(slot.entry->first.name, out->mr_)},
                                         slot.entry->second)
                                .first;
                out->slots_[i] = Slot{slot.generation, &e};
            }
        } catch (...) {
            destroy(out, dst.resource());
            throw;
        }
        return out;
    }

    static NameIndex* new_index(std::pmr::memory_resource* mr) {
        void* p = mr->allocate(sizeof(NameIndex), alignof(NameIndex));
        return ::new (p) NameIndex(mr);
    }
    static void destroy(void* object, std::pmr::memory_resource* mr) noexcept {
        static_cast<NameIndex*>(object)->~NameIndex();
        mr->deallocate(object, sizeof(NameIndex), alignof(NameIndex));
    }

    [[noreturn]] static void throw_duplicate(const char* op, Entity e, Entity other,
                                             std::string_view name) {
        std::ostringstream os;
        os << op << ": entity " << e << " can't be named " << quote(name) << ": its sibling "
           << other << " has that name (names are unique among ChildOf siblings)";
        throw Error(errc::invalid_argument, os.str());
    }

private:
    struct Slot {
        std::uint32_t generation = 0;
        Entry* entry = nullptr;
    };
    /// Forgets the slot that points at `entry` (its entity died or was renamed).
    void drop_slot(const Entry& entry) noexcept {
        const Entity was = entry.second;
        if (was.index < slots_.size() && slots_[was.index].entry == &entry)
            slots_[was.index] = Slot{};
    }
    /// Drops the entries of dead entities (amortised: the map at most doubles between sweeps).
    void sweep(const Storage& s) noexcept {
        for (auto it = map_.begin(); it != map_.end();) {
            if (entry_of(s, it->second) == &*it) {
                ++it;
                continue;
            }
            drop_slot(*it);
            it = map_.erase(it);
        }
        sweep_at_ = map_.size() * 2 + 64;
    }

    Map map_;
    std::pmr::vector<Slot> slots_;
    std::pmr::memory_resource* mr_;
    std::size_t sweep_at_ = 64;
};

namespace {

NameIndex* names_of(const Storage& s) noexcept {
    return static_cast<NameIndex*>(s.names());
}

void check_moved(const Storage& s, Entity child, Entity parent) {
    const NameIndex& index = *names_of(s);
    const Entry* own = index.entry_of(s, child);
    if (own == nullptr) return;
    const Entry* other = index.find(s, parent, own->first.name);
    if (other != nullptr && other->second != child)
        NameIndex::throw_duplicate("World::relate<ChildOf>", child, other->second, own->first.name);
}

void moved(Storage& s, Entity child) noexcept {
    names_of(s)->moved(s, child);
}

constexpr Storage::NameHooks name_hooks{&check_moved, &moved};

void* copy_names(const void* object, Storage& dst) {
    return static_cast<const NameIndex*>(object)->copy(dst);
}

void check_name(std::string_view name, Entity e) {
    const char* why = nullptr;
    if (name.empty())
        why = "is empty";
    else if (name.find('/') != std::string_view::npos)
        why = "holds '/' (the path separator)";
    else if (!valid_utf8(name))
        why = "is not valid UTF-8";
    if (why == nullptr) return;
    std::ostringstream os;
    os << "World::set_name: the name given to entity " << e << ' ' << why;
    throw Error(errc::invalid_argument, os.str());
}

}  // namespace

void set_name(Storage& s, Entity e, std::string_view name) {
    if (s.try_record(e) == nullptr) {
        std::ostringstream os;
        os << "World::set_name: entity " << e << " is not alive";
        throw Error(errc::not_alive, os.str());
    }
    check_name(name, e);
    if (s.names() == nullptr) {
        NameIndex* index = NameIndex::new_index(s.resource());
        s.attach_names(Attachment{index, &NameIndex::destroy, &copy_names, nullptr}, &name_hooks);
    }
    names_of(s)->set(s, e, name);
}

std::string_view name(const Storage& s, Entity e) noexcept {
    const NameIndex* index = names_of(s);
    const Entry* entry = index == nullptr ? nullptr : index->entry_of(s, e);
    return entry == nullptr ? std::string_view{} : std::string_view(entry->first.name);
}

Entity lookup(const Storage& s, std::string_view path) noexcept {
    const NameIndex* index = names_of(s);
    if (index == nullptr || path.empty()) return Entity::null();
    Entity at = Entity::null();
    while (true) {
        const std::size_t slash = path.find('/');
        const Entry* entry = index->find(s, at, path.substr(0, slash));
        if (entry == nullptr) return Entity::null();
        at = entry->second;
        if (slash == std::string_view::npos) return at;
        path.remove_prefix(slash + 1);
    }
}

void each_name(const Storage& s, void (*fn)(void* ctx, Entity e, std::string_view name),
               void* ctx) {
    if (const NameIndex* index = names_of(s))
        index->each(s, [&](Entity e, std::string_view n) { fn(ctx, e, n); });
}

}  // namespace tessera::detail

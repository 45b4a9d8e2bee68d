// The relation index of a world (src/relation.cpp, src/relation_despawn.cpp): the relation
// types it uses, their reverse lists, and the scratch of despawns, loop checks and the
// hierarchy log. Internal to the library.
#pragma once

#include <tessera/detail/attachment.hpp>
#include <tessera/detail/notify.hpp>
#include <tessera/detail/operations.hpp>
#include <tessera/error.hpp>
#include <tessera/relation.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <deque>
#include <memory_resource>
#include <new>
#include <sstream>
#include <string>
#include <tuple>

namespace tessera::detail {

/// The `Targets<R>` of `e` (whose id is `targets`), or null.
inline EntityList* targets_of(const Storage& s, ComponentId targets, Entity e) noexcept {
    // Targets<R> adds no member to EntityList: the two are pointer-interconvertible.
    return reinterpret_cast<EntityList*>(s.try_value(e, targets));
}

inline std::string relation_type_name(const RelationType& type) {
    return std::string(component_info(type.data).name);
}

/// Room for the reverse lists of a relation index (`EntityList`s of a few entities each, on
/// the heap from their second entity): blocks of 16, 32, 64 and 128 bytes kept on free lists
/// and cut from chunks of the world's resource (1 KiB, doubling up to 64 KiB), which the index
/// keeps until it dies; larger lists are the world's resource's. A list that grows (a parent's
/// second child) then pops a block, or cuts one, instead of calling the world's allocator.
/// One thread at a time, as every structural change.
class ListPool final : public std::pmr::memory_resource {
public:
    explicit ListPool(std::pmr::memory_resource* upstream) noexcept : upstream_(upstream) {}
    ListPool(const ListPool&) = delete;
    ListPool& operator=(const ListPool&) = delete;
    ~ListPool() override {
        while (chunks_ != nullptr) {
            Chunk* next = chunks_->next;
            upstream_->deallocate(chunks_, chunks_->size, alignof(std::max_align_t));
            chunks_ = next;
        }
    }

private:
    struct Free {
        Free* next;
    };
    struct alignas(std::max_align_t) Chunk {
        Chunk* next;
        std::size_t size;
    };
    static constexpr std::size_t classes = 4;  ///< 16 << class bytes
    static constexpr std::size_t largest = std::size_t{16} << (classes - 1);
    static constexpr std::size_t most_chunk = std::size_t{64} << 10;
    static constexpr bool pooled(std::size_t bytes, std::size_t align) noexcept {
        return bytes <= largest && align <= alignof(std::max_align_t);
    }
    static constexpr std::size_t class_of(std::size_t bytes) noexcept {
        return bytes <= 16 ? 0 : bytes <= 32 ? 1 : bytes <= 64 ? 2 : 3;
    }

    void* do_allocate(std::size_t bytes, std::size_t align) override {
        if (!pooled(bytes, align)) return upstream_->allocate(bytes, align);
        const std::size_t c = class_of(bytes);
        if (Free* f = free_[c]) {
            free_[c] = f->next;
            return f;
        }
        const std::size_t size = std::size_t{16} << c;
        if (static_cast<std::size_t>(end_ - cur_) < size) refill();
        void* p = cur_;
        cur_ += size;
        return p;
    }
    void do_deallocate(void* p, std::size_t bytes, std::size_t align) override {
        if (!pooled(bytes, align)) {
            upstream_->deallocate(p, bytes, align);
            return;
        }
        const std::size_t c = class_of(bytes);
        free_[c] = ::new (p) Free{free_[c]};
    }
    [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
        return this == &other;
    }
    /// A fresh chunk to cut blocks from (the rest of the current one is left unused).
    /// @throws std::bad_alloc, changing nothing.
    void refill() {
        void* mem = upstream_->allocate(next_chunk_, alignof(std::max_align_t));
        chunks_ = ::new (mem) Chunk{chunks_, next_chunk_};
        cur_ = reinterpret_cast<std::byte*>(chunks_ + 1);
        end_ = static_cast<std::byte*>(mem) + next_chunk_;
        next_chunk_ = std::min(next_chunk_ * 2, most_chunk);
    }

    std::pmr::memory_resource* upstream_;
    Free* free_[classes] = {};
    std::byte* cur_ = nullptr;
    std::byte* end_ = nullptr;
    Chunk* chunks_ = nullptr;
    std::size_t next_chunk_ = std::size_t{1} << 10;
};

/// Every relation type a world uses, with the reverse index (target -> sources) of each, and
/// the scratch lists of despawns, loop checks and the hierarchy log (kept between calls).
class RelationIndex {
public:
    struct Kind {
        RelationType type;
        std::pmr::vector<EntityList> sources;  ///< by target entity index
    };

    explicit RelationIndex(std::pmr::memory_resource* mr)
        : log_(mr),
          mr_(mr),
          lists_(mr),
          kinds_(mr),
          by_id_(mr),
          marks_(mr),
          down_marks_(mr),
          stack_(mr),
          down_(mr),
          doomed_(mr),
          pos_(mr),
          cur_(mr),
          losses_(mr),
          moves_(mr) {}

    RelationIndex(const RelationIndex&) = delete;
    RelationIndex& operator=(const RelationIndex&) = delete;
    ~RelationIndex() { plans.reset(mr_); }

    [[nodiscard]] std::pmr::memory_resource* resource() const noexcept { return mr_; }

    /// What the prefab module (src/prefab.cpp) computes from these lists and the prefabs'
    /// tables, kept here so that it lives exactly as long as the lists: never copied (a
    /// clone, a snapshot or a restore starts without it), freed with the index. Null until
    /// first used; `copy` and `hooks` unused.
    Attachment plans;

    [[nodiscard]] Kind* find(ComponentId data) noexcept {
        if (data.value >= by_id_.size() || by_id_[data.value] < 0) return nullptr;
        return &kinds_[static_cast<std::size_t>(by_id_[data.value])];
    }

    /// The kind of `type`, registered on first use (the world then refuses its components in
    /// add/remove/spawn). @throws invalid_argument when the type is a plain component here.
    Kind& kind_for(Storage& s, const RelationType& type, const char* op) {
        if (Kind* k = find(type.data)) return *k;
        if (component_info(type.data).sparse) {  // relations keep their data in tables
            throw Error(errc::invalid_argument,
                        std::string(op) + '<' + relation_type_name(type) +
                            ">: " + relation_type_name(type) +
                            " has storage_kind::sparse; a relation's data is kept in tables");
        }
        for (std::size_t i = first_user_archetype; i < s.archetype_end(); ++i) {
            const Archetype& a = s.archetype(static_cast<std::uint32_t>(i));
            if (a.contains(type.data) || a.contains(type.targets)) {
                throw Error(errc::invalid_argument,
                            std::string(op) + '<' + relation_type_name(type) +
                                ">: " + relation_type_name(type) +
                                " is already used as a plain component in this world; a type "
                                "is either a component or a relation");
            }
        }
        s.ensure_component(type.data);
        s.ensure_component(type.targets);
        if (type.data.value >= by_id_.size()) by_id_.resize(type.data.value + 1, -1);
        kinds_.push_back(Kind{type, std::pmr::vector<EntityList>(mr_)});  // its lists: lists_
        by_id_[type.data.value] = static_cast<std::int32_t>(kinds_.size() - 1);
        s.mark_relation(type.data, type.targets);
        return kinds_.back();
    }

    /// The sources list of `target` in `k`, made if needed (may throw bad_alloc).
    EntityList& sources_at(Kind& k, std::uint32_t target) {
        if (target >= k.sources.size()) [[unlikely]]
            grow(k, target);
        return k.sources[target];
    }
    [[nodiscard]] EntityList* sources_if(Kind& k, std::uint32_t target) noexcept {
        return target < k.sources.size() ? &k.sources[target] : nullptr;
    }

    // ---- the hierarchy log ----
    /// Room for `n` more entries. A log nobody empties stops at `max_log` entries: it is then
    /// dropped and marked overflowed (its reader recomputes everything instead).
    void reserve_log(std::size_t n) {
        if (!logging_ || overflowed_) return;
        if (log_.size() + n > max_log) {
            overflowed_ = true;
            log_.clear();
            return;
        }
        if (log_.size() + n > log_.capacity())  // geometric: reserve(size + n) alone is O(n^2)
            log_.reserve(std::max(log_.size() + n, log_.capacity() * 2));
    }
    void log(const RelationType& type, Entity e) noexcept {
        if (!type.hierarchy) return;
        // The ring of recent first-parent changes (cascade queries) is always kept: no allocation.
        recent_[recent_count_ % recent_.size()] = e;
        ++recent_count_;
        if (logging_ && !overflowed_) log_.push_back(e);  // reserved
    }
    static constexpr std::size_t max_log = std::size_t{1} << 16;
    bool logging_ = false;
    bool overflowed_ = false;
    std::pmr::vector<Entity> log_;
    /// The last `recent_.size()` entities whose first `ChildOf` target changed, the `n`-th
    /// change (counting from 0) at `recent_[n % size]`; `recent_count_` changes in all.
    std::array<Entity, 256> recent_{};
    std::uint64_t recent_count_ = 0;

    // ---- marks: an epoch per entity index ----
    void new_epoch() {
        if (++epoch_ == 0) {
            std::fill(marks_.begin(), marks_.end(), 0u);
            std::fill(down_marks_.begin(), down_marks_.end(), 0u);
            epoch_ = 1;
        }
    }
    void mark(Entity e) {
        if (e.index >= marks_.size())
            marks_.resize(std::max<std::size_t>(e.index + 1, marks_.size() * 2), 0u);
        marks_[e.index] = epoch_;
    }
    [[nodiscard]] bool marked(Entity e) const noexcept {
        return e.index < marks_.size() && marks_[e.index] == epoch_;
    }
    // A second set of marks (same epoch), for the downward half of the loop check.
    void down_mark(Entity e) {
        if (e.index >= down_marks_.size())
            down_marks_.resize(std::max<std::size_t>(e.index + 1, down_marks_.size() * 2), 0u);
        down_marks_[e.index] = epoch_;
    }
    [[nodiscard]] bool down_marked(Entity e) const noexcept {
        return e.index < down_marks_.size() && down_marks_[e.index] == epoch_;
    }

    /// Throws hierarchy_cycle when relating `child` to `parent` by `k` would close a loop.
    void check_cycle(Storage& s, const Kind& k, Entity child, Entity parent, const char* op) {
        auto fail = [&](const char* how) {
            std::ostringstream os;
            os << op << '<' << relation_type_name(k.type) << ">: relating " << child << " to "
               << parent << how;
            throw Error(errc::hierarchy_cycle, os.str());
        };
        if (child == parent) fail(" would make it its own parent");
        if (child.index >= k.sources.size() || k.sources[child.index].empty()) return;  // a leaf
        // A loop needs `child` among the parent's ancestors, i.e. `parent` among the child's
        // descendants. Both searches run in turns, one entity each, so the cost is bounded by
        // twice the smaller of the two sets (a deep parent or a large subtree alone is cheap).
        new_epoch();
        stack_.clear();
        down_.clear();
        stack_.push_back(parent);
        down_.push_back(child);
        mark(parent);
        down_mark(child);
        while (!stack_.empty() && !down_.empty()) {
            const Entity up = stack_.back();
            stack_.pop_back();
            if (const EntityList* parents = targets_of(s, k.type.targets, up)) {
                for (const Entity p : *parents) {
                    if (p == child) fail(" would close a loop: the target descends from it");
                    if (!marked(p)) {
                        mark(p);
                        stack_.push_back(p);
                    }
                }
            }
            const Entity down = down_.back();
            down_.pop_back();
            if (down.index < k.sources.size()) {
                for (const Entity c : k.sources[down.index]) {
                    if (c == parent) fail(" would close a loop: the target descends from it");
                    if (!down_marked(c)) {
                        down_mark(c);
                        down_.push_back(c);
                    }
                }
            }
        }
    }

    /// Whether despawning `e` touches a relation (its own, or one pointing at it).
    [[nodiscard]] bool involved(const Storage& s, Entity e) const noexcept {
        const Archetype& a = s.archetype(s.try_record(e)->archetype);
        for (const Kind& k : kinds_) {
            if (a.contains(k.type.targets)) return true;
            if (e.index < k.sources.size() && !k.sources[e.index].empty()) return true;
        }
        return false;
    }

    /// Despawns the live `roots` (distinct) and their ChildOf cascades as one call: the plan
    /// first (may throw bad_alloc, nothing changed), then `commit`, then the deaths in order.
    /// Returns how many of `roots` died.
    std::size_t despawn(Storage& s, std::span<const Entity> roots, Commit commit);

    /// Copies `src`'s kinds and reverse lists (not its scratch or its hierarchy log) into this
    /// empty index. May throw bad_alloc.
    void copy_kinds(const RelationIndex& src) {
        for (const Kind& k : src.kinds_) {
            Kind& copy = kinds_.emplace_back(Kind{k.type, std::pmr::vector<EntityList>(mr_)});
            copy.sources.reserve(k.sources.size());
            for (const EntityList& list : k.sources) copy.sources.emplace_back(list, &lists_);
        }
        by_id_.assign(src.by_id_.begin(), src.by_id_.end());
    }
    /// The kinds, for whole-world readers.
    [[nodiscard]] const std::pmr::deque<Kind>& kinds() const noexcept { return kinds_; }

private:
    /// A relation a survivor of a despawn loses: its relation of kind `kind` loses a target,
    /// the doomed entity at position `step` (planning scratch).
    struct Loss {
        Entity source;
        std::uint32_t kind;
        std::uint32_t step;
        std::uint32_t seq;  ///< order found (std::stable_sort would allocate outside the world)
    };
    /// A survivor that loses its whole relation of kind `kind` when the `step`th doomed entity
    /// dies: it moves from archetype `from` to `to` then.
    struct Move {
        Entity source;
        std::uint32_t kind;
        std::uint32_t step;
        std::uint32_t from;
        std::uint32_t to;
    };

    /// Makes the (empty) lists of `k` up to `target`'s. Strong guarantee (bad_alloc).
    [[gnu::noinline]] void grow(Kind& k, std::uint32_t target) {
        if (target >= k.sources.capacity())
            k.sources.reserve(std::max<std::size_t>(target + 1, k.sources.capacity() * 2));
        while (k.sources.size() <= target) k.sources.emplace_back(&lists_);  // noexcept: room made
    }
    /// Returns how many of `roots` are alive.
    std::size_t plan(Storage& s, std::span<const Entity> roots);
    void pre(Storage& s, std::size_t step);
    void mechanics(Storage& s, std::size_t step) noexcept;
    void post(Storage& s, std::size_t step);
    /// The moves made when the `step`th doomed entity dies.
    [[nodiscard]] std::span<const Move> moves_at(std::size_t step) const noexcept {
        auto by_step = [](const Move& m, std::size_t k) { return m.step < k; };
        const auto first = std::lower_bound(moves_.begin(), moves_.end(), step, by_step);
        const auto last = std::lower_bound(first, moves_.end(), step + 1, by_step);
        return {first, last};
    }
    /// The two components of a kind, sorted.
    [[nodiscard]] std::array<ComponentId, 2> ids_of(std::uint32_t kind) const noexcept {
        std::array<ComponentId, 2> ids{kinds_[kind].type.data, kinds_[kind].type.targets};
        if (ids[1] < ids[0]) std::swap(ids[0], ids[1]);
        return ids;
    }
    /// Grows a by-entity-index array to hold `index`.
    static void fit(std::pmr::vector<std::uint32_t>& v, std::uint32_t index) {
        if (index >= v.size()) v.resize(std::max<std::size_t>(index + 1, v.size() * 2), 0u);
    }

    std::pmr::memory_resource* mr_;
    ListPool lists_;  ///< the reverse lists' heap room (before kinds_: it outlives them)
    std::pmr::deque<Kind> kinds_;  ///< a deque: callbacks may add kinds while one is in use
    std::pmr::vector<std::int32_t> by_id_;  ///< data component id -> kind, -1 when none
    std::pmr::vector<std::uint32_t> marks_;
    std::pmr::vector<std::uint32_t> down_marks_;
    std::uint32_t epoch_ = 0;
    std::pmr::vector<Entity> stack_;
    std::pmr::vector<Entity> down_;
    std::pmr::vector<Entity> doomed_;      ///< a despawn's entities, breadth first
    std::pmr::vector<std::uint32_t> pos_;  ///< by entity index: position in doomed_ (if marked)
    std::pmr::vector<std::uint32_t> cur_;  ///< by entity index: a survivor's planned archetype
    std::pmr::vector<Loss> losses_;
    std::pmr::vector<Move> moves_;
};

}  // namespace tessera::detail

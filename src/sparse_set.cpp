// Sparse sets: the paged entity -> row map and the dense arrays of one sparse component
// (detail/sparse_set.hpp).
#include <tessera/detail/sparse_set.hpp>

#include <algorithm>
#include <new>
#include <utility>

namespace tessera::detail {

namespace {
constexpr std::size_t dense_alignment = 64;
}  // namespace

SparseSet::SparseSet(std::pmr::memory_resource* mr, const ComponentInfo& info)
    : mr_(mr), info_(&info), size_bytes_(info.size), tracked_(info.track_changes) {}

SparseSet::~SparseSet() {
    clear();
    release_dense();
    for (std::uint32_t p = 0; p < page_count_; ++p) {
        if (pages_[p] != nullptr)
            mr_->deallocate(pages_[p], page_size * sizeof(std::uint32_t), alignof(std::uint32_t));
    }
    if (pages_ != nullptr)
        mr_->deallocate(pages_, page_count_ * sizeof(std::uint32_t*), alignof(std::uint32_t*));
}

std::size_t SparseSet::value_alignment() const noexcept {
    return std::max<std::size_t>(dense_alignment, info_->alignment);
}

void SparseSet::release_dense() noexcept {
    const std::size_t cap = capacity_;
    if (cap == 0) return;
    mr_->deallocate(entities_, cap * sizeof(Entity), dense_alignment);
    if (size_bytes_ != 0) mr_->deallocate(data_, cap * size_bytes_, value_alignment());
    if (added_ != nullptr) {
        mr_->deallocate(added_, cap * sizeof(std::uint64_t), dense_alignment);
        mr_->deallocate(changed_, cap * sizeof(std::uint64_t), dense_alignment);
    }
    if (enabled_ != nullptr) mr_->deallocate(enabled_, cap, dense_alignment);
    entities_ = nullptr;
    data_ = nullptr;
    added_ = changed_ = nullptr;
    enabled_ = nullptr;
    capacity_ = 0;
}

void SparseSet::grow(std::size_t min_capacity) {
    const std::size_t cap =
        std::max<std::size_t>({min_capacity, std::size_t{capacity_} * 2, std::size_t{16}});
    if (cap > no_row) throw std::bad_alloc();
    // Every array is allocated before anything moves: a bad_alloc frees what was taken.
    struct Block {
        std::pmr::memory_resource* mr;
        void* p = nullptr;
        std::size_t bytes = 0;
        std::size_t align = 0;
        ~Block() {
            if (p != nullptr) mr->deallocate(p, bytes, align);
        }
        void take(std::size_t b, std::size_t a) {
            bytes = b;
            align = a;
            p = mr->allocate(b, a);
        }
    };
    Block ents{mr_}, vals{mr_}, added{mr_}, changed{mr_}, enabled{mr_};
    ents.take(cap * sizeof(Entity), dense_alignment);
    if (size_bytes_ != 0) vals.take(cap * size_bytes_, value_alignment());
    if (tracked_) {
        added.take(cap * sizeof(std::uint64_t), dense_alignment);
        changed.take(cap * sizeof(std::uint64_t), dense_alignment);
    }
    if (info_->enableable) enabled.take(cap, dense_alignment);
    // Nothing below throws.
    if (size_ != 0) {
        std::memcpy(ents.p, entities_, std::size_t{size_} * sizeof(Entity));
        if (size_bytes_ != 0) {
            info_->relocate_values(vals.p, data_, size_);
        }
        if (tracked_) {
            std::memcpy(added.p, added_, std::size_t{size_} * sizeof(std::uint64_t));
            std::memcpy(changed.p, changed_, std::size_t{size_} * sizeof(std::uint64_t));
        }
        if (enabled_ != nullptr) std::memcpy(enabled.p, enabled_, size_);
    }
    const std::uint32_t size = size_;
    size_ = 0;  // the old values were relocated: release_dense must not destroy them
    release_dense();
    size_ = size;
    entities_ = static_cast<Entity*>(std::exchange(ents.p, nullptr));
    data_ = static_cast<std::byte*>(std::exchange(vals.p, nullptr));
    added_ = static_cast<std::uint64_t*>(std::exchange(added.p, nullptr));
    changed_ = static_cast<std::uint64_t*>(std::exchange(changed.p, nullptr));
    enabled_ = static_cast<std::uint8_t*>(std::exchange(enabled.p, nullptr));
    capacity_ = static_cast<std::uint32_t>(cap);
}

void SparseSet::reserve_rows(std::size_t n) {
    if (std::size_t{size_} + n > capacity_) grow(std::size_t{size_} + n);
}

void SparseSet::reserve(std::uint32_t index, std::size_t n) {
    const std::uint32_t p = index >> page_bits;
    if (p >= page_count_) {
        const std::uint32_t count = std::max(p + 1, page_count_ * 2);
        auto** fresh = static_cast<std::uint32_t**>(
            mr_->allocate(count * sizeof(std::uint32_t*), alignof(std::uint32_t*)));
        std::fill_n(fresh, count, nullptr);
        if (pages_ != nullptr) {
            std::copy_n(pages_, page_count_, fresh);
            mr_->deallocate(pages_, page_count_ * sizeof(std::uint32_t*), alignof(std::uint32_t*));
        }
        pages_ = fresh;
        page_count_ = count;
    }
    if (pages_[p] == nullptr) {
        auto* page = static_cast<std::uint32_t*>(
            mr_->allocate(page_size * sizeof(std::uint32_t), alignof(std::uint32_t)));
        std::fill_n(page, page_size, no_row);
        pages_[p] = page;
    }
    // A grown page table or a new page stay (empty entries): no visible change if this throws.
    reserve_rows(n);
}

std::byte* SparseSet::insert(Entity e, std::uint64_t tick) noexcept {
    if (tick < stamped_) [[unlikely]] {
        // An older tick than the floor (a schedule's system tick): the floor goes into the
        // rows, so the new row reads its own tick.
        for (std::uint32_t r = 0; r < size_; ++r) changed_[r] = changed_at(r);
        stamped_ = 0;
    }
    const std::uint32_t row = size_++;
    pages_[e.index >> page_bits][e.index & (page_size - 1)] = row;
    entities_[row] = e;
    if (tracked_) {
        added_[row] = tick;
        changed_[row] = tick;
    }
    if (enabled_ != nullptr) enabled_[row] = 1;
    return value(row);
}

void SparseSet::erase_row(std::uint32_t row) noexcept {
    const Entity gone = entities_[row];
    if (info_->destroy != nullptr && size_bytes_ != 0) info_->destroy(value(row), 1);
    const std::uint32_t last = size_ - 1;
    if (row != last) {
        const Entity moved = entities_[last];
        entities_[row] = moved;
        if (size_bytes_ != 0) {
            info_->relocate_values(value(row), value(last), 1);
        }
        if (tracked_) {
            added_[row] = added_[last];
            changed_[row] = changed_[last];
        }
        if (enabled_ != nullptr) enabled_[row] = enabled_[last];
        pages_[moved.index >> page_bits][moved.index & (page_size - 1)] = row;
    }
    pages_[gone.index >> page_bits][gone.index & (page_size - 1)] = no_row;
    size_ = last;
}

void SparseSet::clear() noexcept {
    for (std::uint32_t row = 0; row < size_; ++row) {
        const Entity e = entities_[row];
        pages_[e.index >> page_bits][e.index & (page_size - 1)] = no_row;
    }
    if (info_->destroy != nullptr && size_bytes_ != 0 && size_ != 0) info_->destroy(data_, size_);
    size_ = 0;
    stamped_ = 0;
}

void SparseSet::copy_from(const SparseSet& src) {
    clear();
    if (src.size_ == 0) return;
    reserve_rows(src.size_);
    for (std::uint32_t row = 0; row < src.size_; ++row) reserve(src.entities_[row].index, 0);
    // Values first (a copy may throw: the ones made are destroyed, the set stays empty).
    if (size_bytes_ != 0) info_->copy_values(data_, src.data_, src.size_);
    std::memcpy(entities_, src.entities_, std::size_t{src.size_} * sizeof(Entity));
    if (tracked_) {
        std::memcpy(added_, src.added_, std::size_t{src.size_} * sizeof(std::uint64_t));
        std::memcpy(changed_, src.changed_, std::size_t{src.size_} * sizeof(std::uint64_t));
    }
    if (enabled_ != nullptr) std::memcpy(enabled_, src.enabled_, src.size_);
    size_ = src.size_;
    stamped_ = src.stamped_;
    for (std::uint32_t row = 0; row < size_; ++row) {
        const Entity e = entities_[row];
        pages_[e.index >> page_bits][e.index & (page_size - 1)] = row;
    }
}

void SparseSet::swap(SparseSet& other) noexcept {
    std::swap(pages_, other.pages_);
    std::swap(page_count_, other.page_count_);
    std::swap(entities_, other.entities_);
    std::swap(data_, other.data_);
    std::swap(added_, other.added_);
    std::swap(changed_, other.changed_);
    std::swap(enabled_, other.enabled_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
    std::swap(stamped_, other.stamped_);
}

}  // namespace tessera::detail

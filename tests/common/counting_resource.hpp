// A memory resource that counts what passes through it, for tests that check where a world's
// memory comes from and that all of it is returned.
#pragma once

#include <cstddef>
#include <memory_resource>
#include <new>

namespace tessera::test {

class CountingResource : public std::pmr::memory_resource {
public:
    std::size_t allocations = 0;
    std::size_t deallocations = 0;
    std::size_t outstanding = 0;  // bytes currently allocated

private:
    void* do_allocate(std::size_t bytes, std::size_t align) override {
        void* p = std::pmr::new_delete_resource()->allocate(bytes, align);
        ++allocations;
        outstanding += bytes;
        return p;
    }
    void do_deallocate(void* p, std::size_t bytes, std::size_t align) override {
        ++deallocations;
        outstanding -= bytes;
        std::pmr::new_delete_resource()->deallocate(p, bytes, align);
    }
    bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
        return this == &other;
    }
};

// Fails every allocation while `fail` is set (else allocates from new_delete_resource()).
class FailingResource final : public std::pmr::memory_resource {
public:
    bool fail = false;

private:
    void* do_allocate(std::size_t bytes, std::size_t align) override {
        if (fail) throw std::bad_alloc();
        return std::pmr::new_delete_resource()->allocate(bytes, align);
    }
    void do_deallocate(void* p, std::size_t bytes, std::size_t align) override {
        std::pmr::new_delete_resource()->deallocate(p, bytes, align);
    }
    bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
        return this == &other;
    }
};

// Counts live instances of a component, to prove values are destroyed exactly once.
struct Tracked {
    static inline int live = 0;
    static inline int constructed = 0;
    int value = 0;
    Tracked() noexcept {
        ++live;
        ++constructed;
    }
    explicit Tracked(int v) noexcept : value(v) {
        ++live;
        ++constructed;
    }
    Tracked(const Tracked& o) noexcept : value(o.value) {
        ++live;
        ++constructed;
    }
    Tracked(Tracked&& o) noexcept : value(o.value) {
        ++live;
        ++constructed;
        o.value = -1;
    }
    Tracked& operator=(const Tracked&) = default;
    Tracked& operator=(Tracked&&) = default;
    ~Tracked() { --live; }
};

}  // namespace tessera::test

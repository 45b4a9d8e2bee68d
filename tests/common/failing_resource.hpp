// A memory resource for fault injection: forwards to new_delete_resource(), checks every
// deallocation against its allocation, and fails allocations on demand, either once (the k-th
// from now) or from the k-th on (every allocation after it too, until disarmed).
#pragma once

#include "common/global_new_counter.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <memory_resource>
#include <new>
#include <unordered_map>

namespace tessera::test {

class FaultResource final : public std::pmr::memory_resource {
public:
    /// How an armed resource fails.
    enum class Mode {
        once,  ///< the k-th allocation from now throws; later ones succeed
        from,  ///< the k-th allocation from now and every one after it throw
    };

    /// Arms the resource: the k-th allocation from now (k >= 1) throws std::bad_alloc, and with
    /// `Mode::from` every later one too, until `disarm`.
    void arm(std::size_t k, Mode mode = Mode::once) {
        countdown_ = k;
        mode_ = mode;
        armed_ = true;
        fired_ = false;
    }
    void disarm() { armed_ = false; }
    bool armed() const { return armed_; }
    /// Whether an allocation failed since the last `arm`.
    bool fired() const { return fired_; }

    std::size_t allocations() const { return allocations_; }
    std::size_t deallocations() const { return deallocations_; }
    std::size_t bytes_outstanding() const { return bytes_outstanding_; }
    std::size_t blocks_outstanding() const { return blocks_.size(); }
    std::size_t bad_deallocations() const { return bad_deallocations_; }

private:
    void* do_allocate(std::size_t bytes, std::size_t align) override {
        const Uncounted guard;
        if (armed_) {
            if (countdown_ > 1) {
                --countdown_;
            } else {
                if (mode_ == Mode::once) armed_ = false;
                fired_ = true;
                throw std::bad_alloc();
            }
        }
        void* p = std::pmr::new_delete_resource()->allocate(bytes, align);
        ++allocations_;
        bytes_outstanding_ += bytes;
        blocks_[p] = Block{bytes, align};
        return p;
    }

    void do_deallocate(void* p, std::size_t bytes, std::size_t align) override {
        const Uncounted guard;
        auto it = blocks_.find(p);
        if (it == blocks_.end() || it->second.bytes != bytes || it->second.align != align) {
            // Unknown pointer, double free, or size/alignment that differ from the allocation.
            ++bad_deallocations_;
            ADD_FAILURE() << "bad deallocate(" << p << ", " << bytes << ", " << align << ")";
            return;
        }
        blocks_.erase(it);
        ++deallocations_;
        bytes_outstanding_ -= bytes;
        std::pmr::new_delete_resource()->deallocate(p, bytes, align);
    }

    bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
        return this == &other;
    }

    struct Block {
        std::size_t bytes;
        std::size_t align;
    };
    std::unordered_map<void*, Block> blocks_;
    std::size_t allocations_ = 0;
    std::size_t deallocations_ = 0;
    std::size_t bytes_outstanding_ = 0;
    std::size_t bad_deallocations_ = 0;
    std::size_t countdown_ = 0;
    Mode mode_ = Mode::once;
    bool armed_ = false;
    bool fired_ = false;
};

}  // namespace tessera::test

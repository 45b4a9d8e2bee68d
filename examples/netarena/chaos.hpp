// netarena: the --chaos shim, between the program and ENet on the receiving side. ENet's
// unreliable channels may lose a message but never duplicate or reorder one; over loopback
// they lose none. The shim makes the network bad on purpose: of the messages it is fed, it
// drops 20%, delivers 10% twice (the copy later) and holds back 15% until one to three later
// messages have gone by, so the replication sees loss, duplicates and reordering.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace netarena {

class Chaos {
public:
    struct Counts {
        std::uint64_t fed = 0;
        std::uint64_t dropped = 0;
        std::uint64_t duplicated = 0;
        std::uint64_t reordered = 0;
    };

    /// `on` false: every message is delivered at once, as it came.
    Chaos(bool on, std::uint64_t seed) : on_(on), state_(seed * 0x9E3779B97F4A7C15ull + 1) {}

    /// Feeds one received message from sender `from`; calls `deliver(from, bytes)` for what
    /// comes out now: none, it, and/or earlier messages (with their own senders) whose turn
    /// came.
    template <class F>
    void feed(std::uint32_t from, std::span<const std::byte> bytes, F&& deliver) {
        ++counts_.fed;
        if (!on_) {
            deliver(from, bytes);
            return;
        }
        const std::uint32_t roll = next() % 100;
        bool keep = false;
        if (roll < 20) {
            ++counts_.dropped;
        } else if (roll < 30) {
            ++counts_.duplicated;
            deliver(from, bytes);
            keep = true;
        } else if (roll < 45) {
            ++counts_.reordered;
            keep = true;
        } else {
            deliver(from, bytes);
        }
        // The held messages whose turn came, after the newer one: out of order.
        for (std::size_t i = 0; i < held_.size();) {
            if (--held_[i].wait == 0) {
                const Held h = std::move(held_[i]);
                held_[i] = std::move(held_.back());
                held_.pop_back();
                deliver(h.from, std::span<const std::byte>(h.bytes));
            } else {
                ++i;
            }
        }
        if (keep)
            held_.push_back(
                Held{from, std::vector<std::byte>(bytes.begin(), bytes.end()), 1 + next() % 3});
    }

    [[nodiscard]] const Counts& counts() const noexcept { return counts_; }

private:
    struct Held {
        std::uint32_t from = 0;
        std::vector<std::byte> bytes;
        std::uint32_t wait = 0;  ///< messages to go by first
    };

    std::uint32_t next() noexcept {  // xorshift64*
        state_ ^= state_ >> 12;
        state_ ^= state_ << 25;
        state_ ^= state_ >> 27;
        return static_cast<std::uint32_t>((state_ * 0x2545F4914F6CDD1Dull) >> 32);
    }

    bool on_;
    std::uint64_t state_;
    Counts counts_;
    std::vector<Held> held_;
};

}  // namespace netarena

// Component types for the emplace tests (world.hpp, commands.hpp).
#pragma once

#include <stdexcept>

namespace tessera::test {

/// Remembers where it was built; counts the moves made of it.
struct Pinned {
    static inline int moves = 0;
    const Pinned* self;
    int v;
    explicit Pinned(int value) noexcept : self(this), v(value) {}
    Pinned(Pinned&& o) noexcept : self(this), v(o.v) { ++moves; }
    Pinned& operator=(Pinned&&) = delete;
    ~Pinned() = default;
};

/// Its constructor throws for negative values.
struct Picky {
    int v;
    explicit Picky(int value) : v(value) {
        if (value < 0) throw std::invalid_argument("negative");
    }
};

}  // namespace tessera::test

// Must not compile: a Rollback input whose move may throw (a correction moves the kept input
// into place after the replay, where nothing may fail any more).
// expect: Input must have a noexcept move constructor
#include <tessera/net/rollback.hpp>

struct Risky {
    Risky() = default;
    Risky(const Risky&) = default;
    Risky& operator=(const Risky&) = default;
    Risky(Risky&&) noexcept(false) {}
    Risky& operator=(Risky&&) noexcept(false) { return *this; }
};

int main() {
    tessera::World world;
    tessera::Schedule schedule;
    tessera::net::Rollback<Risky> rb(world, schedule);
    rb.advance(0.0f, Risky{});
}

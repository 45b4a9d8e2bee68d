/// @file error.hpp
/// `tessera::Error` and its error codes.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tessera {

/// Stable error codes; docs/errors.md explains each one's cause and fix.
enum class errc : std::uint8_t {
    not_alive,          ///< the entity is dead, null or was never spawned
    missing_component,  ///< the entity lacks the component the call needs
    not_registered,     ///< a runtime component id unknown to this world
    type_conflict,      ///< one component name with two different layouts or schemas
    not_enableable,     ///< enable/is_enabled on a component that is not enableable
    permanent_entity,   ///< despawn of an entity spawned permanent
    missing_resource,   ///< a resource that was never inserted
    ambiguous_order,    ///< a strict schedule with two unordered conflicting systems
    schedule_cycle,     ///< before/after constraints that form a loop
    unknown_system,     ///< a system name the schedule does not have
    system_failed,      ///< a system threw; the original exception is nested
    hierarchy_cycle,    ///< a ChildOf relation that would close a loop
    limit_exceeded,     ///< a built-in limit (entity count, component count, ...) is reached
    invalid_argument,   ///< any other bad argument
    network,            ///< a transport failed: a socket can't be bound, a peer does not
                        ///< answer in time, or the connection is closed
};

/// The stable name of a code, e.g. "not_alive".
[[nodiscard]] std::string_view to_string(errc code) noexcept;

/// The exception every checked tessera call throws on misuse.
///
/// The message names the operation, the entity (`index:generation`), the component and the
/// reason, e.g. `"World::get<Position>: entity 42:3 is not alive"`. Tests and programs should
/// branch on `code()`, never on the text. A call that throws changes nothing.
class Error : public std::runtime_error {
public:
    /// An error with `code` and `message` (what `what()` returns).
    Error(errc code, const std::string& message) : std::runtime_error(message), code_(code) {}

    /// The error's code.
    [[nodiscard]] errc code() const noexcept { return code_; }

private:
    errc code_;
};

}  // namespace tessera

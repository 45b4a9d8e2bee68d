/// @file fwd.hpp
/// Forward declarations of tessera's public types, for headers that only name them.
#pragma once

#include <cstdint>

/// tessera's public API. Internals live in `tessera::detail` (and `include/tessera/detail/`):
/// they are not API and may change without notice.
namespace tessera {

struct Entity;
struct ComponentId;
struct ComponentInfo;
class Error;
enum class errc : std::uint8_t;
class World;
class EventCursor;
template <class T>
class Events;
class Observer;
class Observers;
template <class... Terms>
class Query;
struct QuerySpec;
class Chunk;
template <class T>
class Accessor;
class DynamicQuery;
class Snapshot;
class StringTable;
struct FieldDef;
struct ComponentOptions;
template <class T>
struct component_traits;
struct ChildOf;
template <class R>
class Targets;

}  // namespace tessera

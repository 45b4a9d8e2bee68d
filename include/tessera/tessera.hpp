/// @file tessera.hpp
/// Includes every public header of tessera except those that bring a third-party library's
/// headers: transform.hpp (glm: `LocalTransform`, `WorldTransform`, `propagate_transforms`),
/// serialize.hpp (nlohmann-json: `to_json`, `from_json`) and inspect.hpp (cpp-httplib, target
/// `tessera::inspect`). Include those where you use them. What it includes pulls in no oneTBB,
/// glm or nlohmann-json header, and none of `<chrono>`, `<map>`, `<sstream>`, `<functional>`
/// or `<unordered_map>` (the `header_budget` test holds it to a preprocessed line budget).
#pragma once

#include <tessera/accessor.hpp>
#include <tessera/assert.hpp>
#include <tessera/chunk.hpp>
#include <tessera/commands.hpp>
#include <tessera/component.hpp>
#include <tessera/dynamic.hpp>
#include <tessera/entity.hpp>
#include <tessera/error.hpp>
#include <tessera/events.hpp>
#include <tessera/fwd.hpp>
#include <tessera/module.hpp>
#include <tessera/mut.hpp>
#include <tessera/names.hpp>
#include <tessera/observer.hpp>
#include <tessera/prefab.hpp>
#include <tessera/query.hpp>
#include <tessera/reflect.hpp>
#include <tessera/relation.hpp>
#include <tessera/resource.hpp>
#include <tessera/schedule.hpp>
#include <tessera/snapshot.hpp>
#include <tessera/system.hpp>
#include <tessera/world.hpp>

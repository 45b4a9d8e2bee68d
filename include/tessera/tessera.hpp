/// @file tessera.hpp
/// Includes every public header of tessera.
#pragma once

#include <tessera/assert.hpp>
#include <tessera/chunk.hpp>
#include <tessera/commands.hpp>
#include <tessera/component.hpp>
#include <tessera/dynamic.hpp>
#include <tessera/entity.hpp>
#include <tessera/error.hpp>
#include <tessera/events.hpp>
#include <tessera/fwd.hpp>
#include <tessera/observer.hpp>
#include <tessera/query.hpp>
#include <tessera/reflect.hpp>
#include <tessera/relation.hpp>
#include <tessera/resource.hpp>
#include <tessera/schedule.hpp>
#include <tessera/serialize.hpp>
#include <tessera/system.hpp>
#include <tessera/transform.hpp>
#include <tessera/world.hpp>

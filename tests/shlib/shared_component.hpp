// Declarations shared by the shared-library test's host (test_shlib.cpp) and its two plugins.
#pragma once

#include <cstdint>

#include <tessera/tessera.hpp>

/// A component with external linkage, defined identically in every shared object that uses it:
/// its id is keyed by its name, so all of them must agree on it.
struct SharedPos {
    float x;
    float y;
};

// The plugins' entry points, looked up with dlsym (hence C linkage). Each returns a raw
// ComponentId::value.
extern "C" {
/// Plugin A: adds SharedPos{x, y} to `e`; returns component_id<SharedPos>().
using PluginAddFn = std::uint32_t (*)(tessera::World* world, tessera::Entity e, float x, float y);
/// Plugin B: copies `e`'s SharedPos into `*out`; returns component_id<SharedPos>().
using PluginReadFn = std::uint32_t (*)(const tessera::World* world, tessera::Entity e,
                                       SharedPos* out);
/// Both plugins: returns component_id<Label>() of the plugin's own anonymous-namespace Label.
using PluginLabelFn = std::uint32_t (*)();
/// Plugin C: the lookups of its own `Conflicting` (which failed to register) on `e`, as bits:
/// has 1, try_get 2, targets 4, related 8, sources 16, relation 32; 64 when component_id
/// did not throw, 128 when it threw something other than type_conflict. 0 is the answer.
using PluginProbeFn = std::uint32_t (*)(const tessera::World* world, tessera::Entity e);
}

#define TESSERA_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

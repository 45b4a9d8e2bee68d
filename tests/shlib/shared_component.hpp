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
}

#define TESSERA_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

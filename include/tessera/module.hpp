/// @file module.hpp
/// Modules: a type `M` with `void build(ts::World&, ts::Schedule&)` that adds a group of
/// components, resources, observers and systems to a world and its schedule.
/// `world.import<M>(schedule)` default-constructs `M` and calls `build` once per world: a
/// second import of `M` does nothing, a module may import others inside `build`, an import
/// cycle is `invalid_argument` naming the modules, and when `build` throws, `M` is not
/// recorded (what `build` did before throwing stays). `world.modules()` lists the imported
/// modules in the order their imports completed (a module after the ones its `build`
/// imported), by name: `M::name` when `M` has a `static constexpr std::string_view name`,
/// else its type name as the registry names components. The record is the world's own, like
/// its resources: clones and snapshots start without it.
#pragma once

#include <tessera/component.hpp>
#include <tessera/world.hpp>

#include <concepts>
#include <string_view>

namespace tessera {

/// What `World::import` takes: default constructible, with `void build(World&, Schedule&)`.
template <class M>
concept Module = std::default_initializable<M> && requires(M& m, World& w, Schedule& s) {
    { m.build(w, s) } -> std::same_as<void>;
};

namespace detail {

/// A module's name: `M::name`, or its type name.
template <class M>
constexpr std::string_view module_name() noexcept {
    if constexpr (requires { std::string_view(M::name); })
        return std::string_view(M::name);
    else
        return raw_type_name<M>();
}

/// `import`'s untyped body (src/module.cpp): runs `build` unless `name` was imported.
void import_module(World& w, Schedule& schedule, std::string_view name,
                   void (*build)(World&, Schedule&));

}  // namespace detail

template <class M>
void World::import(Schedule& schedule) {
    static_assert(Module<M>,
                  "tessera: World::import<M> needs a module: a default-constructible type with "
                  "`void build(tessera::World&, tessera::Schedule&)`");
    detail::import_module(*this, schedule, detail::module_name<M>(), [](World& w, Schedule& s) {
        M built{};  // not `module`: a C++20 keyword in some positions (nvcc warns)
        built.build(w, s);
    });
}

}  // namespace tessera

// propagate_transforms (transform.hpp): its entry, a call's outline and phase 0 (adding the
// missing WorldTransforms). transform_plan.hpp describes the state and the plan; the plan is
// built in transform_plan.cpp, world matrices are computed in transform_pass.cpp.
#include "transform_plan.hpp"

#include <tessera/resource.hpp>

#include <algorithm>
#include <limits>
#include <utility>

namespace tessera {
namespace detail {

std::size_t Propagation::run() {
    begin_epoch();
    add_missing();
    // Nothing below moves a row: observers of WorldTransform writes get their structural
    // changes queued until the end.
    DeferScope defer(s_);
    hooked_ = s_.hooked(world_id_);
    tick_ = s_.tick();
    // After an exception the plan may have been rebuilt (forgetting what moved) without
    // computing those steps, and after a whole-world swap (restore, load) entities may hold
    // anything: everything is computed then.
    const bool resumed = !std::exchange(st_.complete, false) || st_.layout != s_.layout_epoch();
    if (plan_matches()) {
        std::fill(st_.dirty.begin(), st_.dirty.end(), 0);
        moved_ = 0;
    } else {
        build_plan();  // marks the steps whose parent changed
    }
    mark_forced();
    general_ = forced_ != nullptr || hooked_ || !st_.spare.empty();
    if (resumed || !st_.primed || st_.mode == PropagationMode::full || !collect_dirty())
        written_ = compute_all();
    else
        run_incremental();
    if (written_ != 0) {
        // The passes write WorldTransform ticks directly: raise each table's column bound
        // (Column::changed_last) once, so readers of changes see the column as written.
        for (const PlanTable& t : st_.tables) {
            if (const Column* c = column_of(s_.archetype(t.index), world_id_);
                c != nullptr && c->changed != nullptr) {
                raise_bound(c->changed_last, tick_);
                if (c->log != nullptr) c->log->distrust();  // its readers rebuild it
            }
        }
    }
    clear_hierarchy_changes(s_);
    st_.since = s_.tick();
    s_.advance_tick();
    st_.primed = true;
    st_.complete = true;
    defer.close();
    return written_;
}

void Propagation::begin_epoch() {
    if (st_.epoch == std::numeric_limits<std::uint32_t>::max()) {
        for (PlanNode& node : st_.nodes) node.seen = 0;
        st_.epoch = 0;
    }
    ep_ = ++st_.epoch;
}

void Propagation::add_missing() {
    st_.missing.clear();
    for (const std::uint32_t index : st_.local_without_world.update()) {
        const Archetype& a = s_.archetype(index);
        st_.missing.insert(st_.missing.end(), a.entities, a.entities + a.size);
    }
    for (const Entity e : st_.missing) {
        // An observer of an earlier add may have changed the entity meanwhile.
        if (!world_.is_alive(e) || world_.has<WorldTransform>(e)) continue;
        world_.add(e, WorldTransform{});
    }
}

namespace {

/// The world's state, made (with change tracking and the hierarchy log turned on) on first use.
TransformState& transform_state(World& world) {
    if (TransformState* st = world.try_resource<TransformState>()) return *st;
    Storage& s = world.storage();
    s.ensure_component(component_id<LocalTransform>());
    s.ensure_component(component_id<WorldTransform>());
    s.track(component_id<LocalTransform>());
    s.track(component_id<WorldTransform>());
    track_hierarchy(s);
    return world.insert_resource(TransformState(s));
}

}  // namespace
}  // namespace detail

void detail::set_propagation_mode(World& world, PropagationMode mode) {
    detail::transform_state(world).mode = mode;
}

std::size_t propagate_transforms(World& world) {
    // It writes every transform row and its plan is the world's: not from par_each workers.
    detail::check_not_parallel(world.storage(), "propagate_transforms");
    // The call ends by advancing the tick: refuse it, before anything changes, at the top.
    if (world.tick() >= World::max_tick)
        throw Error(errc::limit_exceeded,
                    "propagate_transforms: the world tick is at World::max_tick");
    detail::TransformState& state = detail::transform_state(world);
    return detail::Propagation(world, state).run();
}

}  // namespace tessera

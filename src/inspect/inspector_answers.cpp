// The inspector's answers (inspector.cpp): built on the world's thread by Inspector::update,
// one request each (stats, archetypes, systems, entities, one entity, an edit).
#include "inspector_impl.hpp"

namespace tessera {

json Inspector::Impl::answer(Pending& p, World& world, Schedule* schedule) {
    switch (p.kind) {
        case Pending::Kind::stats: return stats(world);
        case Pending::Kind::archetypes: return archetypes(world, p);
        case Pending::Kind::systems: return systems(schedule);
        case Pending::Kind::entities: return entities(world, p);
        case Pending::Kind::entity: return entity(world, p.entity);
        case Pending::Kind::edit: return edit(world, p);
        case Pending::Kind::points:
            // Only the columns are read here; serve() writes the text on the server thread.
            p.points =
                detail::inspector::collect_points(world.storage(), p.points_request, frames.load());
            return nullptr;
        case Pending::Kind::fields: return detail::inspector::numeric_fields(world.storage());
        case Pending::Kind::history:
            history.watch(std::chrono::steady_clock::now());
            return history.to_json();
    }
    return nullptr;
}

json Inspector::Impl::stats(const World& world) const {
    std::vector<double> sorted = frame_ms;
    std::sort(sorted.begin(), sorted.end());
    const auto at = [&](double q) {
        if (sorted.empty()) return 0.0;
        const auto i =
            static_cast<std::size_t>(std::lround(q * static_cast<double>(sorted.size() - 1)));
        return sorted[i];
    };
    std::size_t components = 0;
    world.storage().for_each_component([&](ComponentId) { ++components; });
    json modules = json::array();
    for (const std::string_view m : world.modules()) modules.push_back(std::string(m));
    return {
        {"modules", std::move(modules)},
        {"frame", frames.load()},
        {"tick", world.tick()},
        {"entities", world.count()},
        {"archetypes", world.archetype_count()},
        {"components", components},
        {"frame_ms",
         {{"last", last_frame_ms},
          {"median", at(0.5)},
          {"p99", at(0.99)},
          {"samples", sorted.size()}}},
        {"uptime_s",
         std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()},
    };
}

json Inspector::Impl::archetypes(const World& world, const Pending& p) {
    json list = json::array();
    const std::vector<ArchetypeInfo> all = world.archetypes();
    for (std::size_t i = p.offset; i < all.size() && i < p.offset + p.limit; ++i) {
        const ArchetypeInfo& a = all[i];
        json names = json::array();
        for (const ComponentId id : a.components)
            names.push_back(std::string(component_info(id).name));
        list.push_back({{"index", a.index},
                        {"components", std::move(names)},
                        {"rows", a.size},
                        {"capacity", a.capacity},
                        {"row_bytes", a.bytes_per_row},
                        {"bytes", a.bytes_per_row * a.capacity}});
    }
    const std::size_t total = all.size();
    return {{"total", total},
            {"offset", p.offset},
            {"limit", p.limit},
            {"archetypes", std::move(list)}};
}

json Inspector::Impl::systems(Schedule* schedule) {
    json list = json::array();
    if (schedule == nullptr) return {{"profiling", false}, {"systems", std::move(list)}};
    for (const SystemStats& st : schedule->stats()) {
        list.push_back({{"name", st.name},
                        {"phase", phase_name(st.phase)},
                        {"position", st.position},
                        {"enabled", st.enabled},
                        {"exclusive", st.exclusive},
                        {"reads", st.reads},
                        {"writes", st.writes},
                        {"runs", st.runs},
                        {"last_ns", st.last.count()},
                        {"median_ns", st.median.count()},
                        {"p99_ns", st.p99.count()}});
    }
    return {{"profiling", schedule->profiling()}, {"systems", std::move(list)}};
}

json Inspector::Impl::entities(const World& world, const Pending& p) {
    const Storage& s = world.storage();
    std::vector<ComponentId> with = detail::inspector::ids_by_name(s, p.with);
    std::vector<ComponentId> without = detail::inspector::ids_by_name(s, p.without);
    // Sparse components are in their sets, not the tables: checked entity by entity.
    std::vector<const detail::SparseSet*> sparse_with;
    std::vector<const detail::SparseSet*> sparse_without;
    const auto split = [&](std::vector<ComponentId>& ids,
                           std::vector<const detail::SparseSet*>& sets) {
        std::erase_if(ids, [&](ComponentId id) {
            const detail::SparseSet* set = s.sparse(id);
            if (set != nullptr) sets.push_back(set);
            return set != nullptr;
        });
    };
    split(with, sparse_with);
    split(without, sparse_without);
    const auto wanted = [&](Entity e) {
        for (const detail::SparseSet* set : sparse_with)
            if (!set->contains(e)) return false;
        for (const detail::SparseSet* set : sparse_without)
            if (set->contains(e)) return false;
        return p.name.empty() || world.name(e).find(p.name) != std::string_view::npos;
    };
    json list = json::array();
    json names = json::object();
    std::size_t total = 0;
    const auto listed = [&](Entity e, std::uint32_t shown) {
        json item = {{"id", entity_text(e)}, {"archetype", shown}};
        if (const std::string_view n = world.name(e); !n.empty()) item["name"] = std::string(n);
        return item;
    };
    if (!p.name.empty() || !sparse_with.empty() || !sparse_without.empty()) {
        // A name search or sparse filters: entity by entity (neither is per table).
        each_archetype(s, [&](const Archetype& a) {
            if (a.size == 0 || !detail::inspector::matches(a, with, without)) return;
            const std::uint32_t shown = detail::shown_archetype(a.index);
            for (std::uint32_t row = 0; row < a.size; ++row) {
                const Entity e = a.entities[row];
                if (!wanted(e)) continue;
                if (total >= p.offset && total < p.offset + p.limit) {
                    names[std::to_string(shown)] = names_of(a);
                    list.push_back(listed(e, shown));
                }
                ++total;
            }
        });
        return {{"total", total},
                {"offset", p.offset},
                {"limit", p.limit},
                {"entities", std::move(list)},
                {"archetypes", std::move(names)}};
    }
    each_archetype(s, [&](const Archetype& a) {
        if (a.size == 0 || !detail::inspector::matches(a, with, without)) return;
        const std::size_t first = total;
        total += a.size;
        // The rows of this table that fall in [offset, offset + limit).
        const std::size_t lo = std::max(first, p.offset);
        const std::size_t hi = std::min(total, p.offset + p.limit);
        if (lo >= hi) return;
        const std::uint32_t shown = detail::shown_archetype(a.index);
        names[std::to_string(shown)] = names_of(a);
        for (std::size_t i = lo; i < hi; ++i) list.push_back(listed(a.entities[i - first], shown));
    });
    return {{"total", total},
            {"offset", p.offset},
            {"limit", p.limit},
            {"entities", std::move(list)},
            {"archetypes", std::move(names)}};
}

json Inspector::Impl::entity(const World& world, Entity e) {
    check_alive(world, e);
    const Storage& s = world.storage();
    const detail::EntityRecord& r = *s.try_record(e);
    const Archetype& a = s.archetype(r.archetype);
    json components = json::array();
    json relations = json::array();
    // A component's entry: its description, enable flag and fields (table or sparse).
    const auto component = [&](ComponentId id, const std::byte* value, bool sparse) {
        const ComponentInfo& info = component_info(id);
        json c = {{"name", std::string(info.name)},
                  {"id", id.value},
                  {"size", info.size},
                  {"tag", info.is_tag()},
                  {"reflected", info.schema != nullptr},
                  {"enableable", info.enableable}};
        if (sparse) c["sparse"] = true;
        if (info.enableable) c["enabled"] = world.is_enabled(e, id);
        json fields = json::array();
        bool truncated = false;
        if (info.schema != nullptr && value != nullptr) {
            for (const FieldInfo& f : info.schema->fields)
                add_leaves(s, f, value, "", fields, truncated);
        }
        c["fields"] = std::move(fields);
        if (truncated) c["truncated"] = true;
        components.push_back(std::move(c));
    };
    for (const ComponentId id : a.ids) {
        const ComponentInfo& info = component_info(id);
        const std::byte* value = s.try_value(e, id);
        if (info.relation != nullptr) {
            // Targets<R>: the targets of e's R relation.
            const auto* targets = reinterpret_cast<const detail::EntityList*>(value);
            json list = json::array();
            for (const Entity t :
                 targets->span().first(std::min(targets->size(), max_relation_listed)))
                list.push_back(entity_text(t));
            relations.push_back(
                {{"relation", std::string(component_info(info.relation().data).name)},
                 {"targets", std::move(list)},
                 {"count", targets->size()}});
            continue;
        }
        component(id, value, false);
    }
    // Sparse components (detail/sparse_set.hpp): in their sets, not the table; marked so.
    for (const detail::SparseSet* set : s.sparse_sets()) {
        const std::uint32_t row = set->find(e);
        if (row == detail::SparseSet::no_row) continue;
        component(set->info().id, set->info().is_tag() ? nullptr : set->value(row), true);
    }
    json incoming = json::array();
    for (const detail::RelationKindView& k : detail::relation_kinds(s)) {
        if (e.index >= k.sources.size() || k.sources[e.index].empty()) continue;
        const detail::EntityList& from = k.sources[e.index];
        json list = json::array();
        for (const Entity src : from.span().first(std::min(from.size(), max_relation_listed)))
            list.push_back(entity_text(src));
        incoming.push_back({{"relation", std::string(component_info(k.type->data).name)},
                            {"sources", std::move(list)},
                            {"count", from.size()}});
    }
    return {{"id", entity_text(e)},
            {"name", std::string(world.name(e))},
            {"prefab", world.prefab_of(e) ? json(entity_text(world.prefab_of(e))) : json(nullptr)},
            {"index", e.index},
            {"generation", e.generation},
            {"archetype", world.archetype_of(e).index},
            {"permanent", s.permanent(e.index)},
            {"components", std::move(components)},
            {"relations", std::move(relations)},
            {"related_by", std::move(incoming)}};
}

json Inspector::Impl::edit(World& world, const Pending& p) {
    const Entity e = p.entity;
    check_alive(world, e);
    const ComponentId id = component_of(world, e, p.component);
    const ComponentInfo& info = component_info(id);
    if (info.schema == nullptr)
        fail(400, "component '" + std::string(info.name) + "' has no reflected fields");
    // A struct or a whole array is not one value: say which elements to edit.
    if (const FieldInfo* top = info.schema->find(p.field)) {
        if (top->type == Field::record)
            fail(400, "field " + quote(p.field) + " is a struct: edit one of its fields (" +
                          quote(p.field + "." + std::string(top->schema->fields.front().name)) +
                          ")");
        if (top->count > 1)
            fail(400, "field " + quote(p.field) + " is an array: edit one element (" +
                          quote(p.field + "[0]") + ")");
    }
    detail::FieldRef ref;
    try {
        ref = detail::resolve_field(id, p.field, "Inspector");
    } catch (const Error&) {
        fail(404, "component '" + std::string(info.name) + "' has no field " + quote(p.field));
    }
    if (ref.info->type == Field::record) fail(400, "field " + quote(p.field) + " is a struct");
    try {
        const json& v = p.value;
        if (v.is_boolean())
            world.set_field(e, id, p.field, v.get<bool>());
        else if (v.is_number_unsigned())
            world.set_field(e, id, p.field, v.get<std::uint64_t>());
        else if (v.is_number_integer())
            world.set_field(e, id, p.field, v.get<std::int64_t>());
        else if (v.is_number_float())
            world.set_field(e, id, p.field, v.get<double>());
        else
            world.set_field(e, id, p.field, v.get_ref<const std::string&>());
    } catch (const Error& err) {
        fail(400, err.what());
    }
    // The write fired on_set observers, which may have despawned the entity or removed the
    // component (structural changes from callbacks are applied before set_field returns):
    // answer with what is true now.
    if (!world.is_alive(e))
        fail(404, "entity " + entity_text(e) + " was written, then despawned by an observer");
    json answer = {{"id", entity_text(e)},
                   {"component", std::string(info.name)},
                   {"field", p.field},
                   {"value", nullptr}};
    if (const std::byte* value = world.storage().try_value(e, id))
        answer["value"] = leaf_value(world.storage(), ref.info->type, value + ref.offset);
    else
        answer["removed"] = true;
    return answer;
}

}  // namespace tessera

// Query matching and the "since the last run" bookkeeping of change filters.
#include <tessera/query.hpp>

#include <algorithm>

using tessera::detail::empty_archetype;
using tessera::detail::pending_archetype;

namespace tessera {

void World::collect_chunks(const QuerySpec& spec, std::vector<Chunk>& out) {
    detail::check_spec(spec, "World::collect_chunks");
    out.clear();
    detail::Storage& s = *storage_;
    // Index 0 is the sentinel of free entity slots: never a match.
    for (std::size_t i = empty_archetype; i < s.archetype_end(); ++i) {
        detail::Archetype& a = s.archetype(static_cast<std::uint32_t>(i));
        if (a.size != 0 && spec.matches(a)) out.emplace_back(s, a);  // the pending table is empty
    }
}

namespace detail {

void check_spec(const QuerySpec& spec, const char* op) {
    for (const auto* list : {&spec.all, &spec.any, &spec.none}) {
        for (const ComponentId id : *list) checked_info(id, op);
    }
}

void throw_empty_query(const char* op) {
    throw Error(errc::invalid_argument,
                std::string(op) +
                    ": the query is empty (default-constructed) and belongs to no world; assign "
                    "it from world.query<...>() first");
}

std::size_t despawn_run(World& world, QueryState& state, std::span<const Entity> doomed) {
    try {
        const std::size_t n = world.despawn(doomed);
        state.end_run();
        return n;
    } catch (...) {
        // Strong: a failure leaves every one alive; an observer's exception comes after all died.
        if (!doomed.empty() && !world.is_alive(doomed.front())) state.end_run();
        throw;
    }
}

void throw_sparse_query(const char* op) {
    throw Error(errc::invalid_argument,
                std::string(op) +
                    ": the query names a sparse component (storage_kind::sparse), which chunks "
                    "and query observers don't see; iterate it with each, or observe the sparse "
                    "component with on_add / on_remove");
}

void throw_foreign_query(const char* op) {
    throw Error(
        errc::invalid_argument,
        std::string(op) +
            ": the query belongs to another world (make it with this world's query<...>())");
}

std::span<const std::uint32_t> QueryState::match_new() {
    if (storage_ == nullptr) return {};        // an empty query
    if (epoch_ != storage_->layout_epoch()) {  // the world was restored or loaded: re-match
        matched_.clear();
        columns_.clear();
        seen_ = 0;
        epoch_ = storage_->layout_epoch();
    }
    // An optional `const Prefab*` term lets prefabs in, as naming Prefab does.
    const ComponentId prefab = lookup_id<Prefab>();
    const std::span<const ComponentId> named(&prefab, names_prefab ? 1 : 0);
    const std::size_t total = storage_->archetype_end();
    if (seen_ == 0) seen_ = 1;  // skip the sentinel
    const auto visit = [&](std::uint32_t index) {
        const Archetype& a = storage_->archetype(index);
        if (!archetype_matches(a, spec.all, spec.any, spec.none, named)) return;
        // May throw: nothing changed then, seen_ not advanced past `index`.
        columns_.reserve(columns_.size() + term_ids_.size());
        matched_.push_back(a.index);
        for (const ComponentId id : term_ids_) {
            const std::int32_t c = a.column_index(id);
            columns_.push_back(c >= 0 ? &a.columns[static_cast<std::uint32_t>(c)] : &no_column);
        }
    };
    // Every match has each of `spec.all`: the candidates are the tables of the rarest one
    // (O(those tables), however many archetypes there are). A component this world never saw
    // is in no table yet. Sparse ones are in no table at all: they don't drive the match.
    std::span<const std::uint32_t> rarest;
    bool driven = false;
    bool none_yet = false;
    for (const ComponentId id : spec.all) {
        if (storage_->known_info(id) == nullptr) {
            none_yet = true;
            break;
        }
        if (storage_->sparse(id) != nullptr) continue;
        const std::span<const std::uint32_t> tables = storage_->tables_of(id);
        if (!driven || tables.size() < rarest.size()) rarest = tables;
        driven = true;
    }
    if (none_yet) {
        seen_ = total;
    } else if (driven) {
        for (auto t = std::lower_bound(rarest.begin(), rarest.end(), seen_);
             t != rarest.end() && *t < total; ++t) {
            visit(*t);
            seen_ = std::size_t{*t} + 1;
        }
        seen_ = total;
    } else {
        for (; seen_ < total; ++seen_) {
            if (seen_ == pending_archetype) continue;  // entities spawned while deferred
            visit(static_cast<std::uint32_t>(seen_));
        }
    }
    return matched_;
}

void QueryState::add_filter(ChangeFilter f) {
    if (storage_ == nullptr) throw_empty_query("Query: a change filter");
    storage_->track(f.id);
    filters_.push_back(f);
    since_last_run_ = since_last_run_ || f.since_last_run;
}

bool QueryState::passes(const Archetype& a, std::uint32_t row) const noexcept {
    for (const ChangeFilter& f : filters_) {
        if (f.sparse) continue;  // checked by the sparse run
        const Column& c = a.columns[static_cast<std::uint32_t>(a.column_index(f.id))];
        const std::uint64_t t = f.added ? c.added[row] : c.changed_at(row);
        if (t <= (f.since_last_run ? run_since_ : f.tick)) return false;
    }
    return true;
}

bool QueryState::block_passes(const Archetype& a, std::size_t block) const noexcept {
    for (const ChangeFilter& f : filters_) {
        if (f.added || f.sparse) continue;  // added ticks have no block bounds
        const Column& c = a.columns[static_cast<std::uint32_t>(a.column_index(f.id))];
        const std::uint64_t since = f.since_last_run ? run_since_ : f.tick;
        if (load_bound(c.changed_max[block]) <= since && c.stamped <= since) return false;
    }
    return true;
}

void QueryState::set_terms(std::span<const ComponentId> ids) {
    term_ids_.assign(ids.begin(), ids.end());
    columns_.clear();
    matched_.clear();
    seen_ = 0;
}

void QueryState::add_gate(ComponentId id) {
    if (std::find(gates_.begin(), gates_.end(), id) == gates_.end()) gates_.push_back(id);
}

bool QueryState::gated(const Archetype& a) const noexcept {
    if (!a.enableable) return false;
    return std::any_of(gates_.begin(), gates_.end(), [&a](ComponentId id) {
        const std::int32_t c = a.column_index(id);
        return c >= 0 && a.columns[static_cast<std::uint32_t>(c)].enabled != nullptr;
    });
}

bool QueryState::gates_pass(const Archetype& a, std::uint32_t row) const noexcept {
    for (const ComponentId id : gates_) {
        const std::int32_t c = a.column_index(id);
        if (c < 0) continue;
        const std::uint8_t* flags = a.columns[static_cast<std::uint32_t>(c)].enabled;
        if (flags != nullptr && flags[row] == 0) return false;
    }
    return true;
}

void QueryState::check_tick_room() const {
    if (storage_->tick() >= World::max_tick) {
        throw Error(errc::limit_exceeded,
                    "Query: a run with a change filter advances the world tick, which is at "
                    "World::max_tick");
    }
}

void QueryState::finish_run() noexcept {
    // Everything written so far is stamped with at most the current tick; moving past it makes
    // the next run see exactly the writes that come after this one.
    last_run_ = storage_->tick();
    storage_->advance_tick();
}

}  // namespace detail
}  // namespace tessera

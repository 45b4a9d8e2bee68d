// Required components (ComponentInfo::required): the ones a structural call brings along.
#pragma once

#include <tessera/detail/storage.hpp>

#include <algorithm>
#include <span>

namespace tessera::detail {

/// The components a call's `ids` bring along (`ComponentInfo::required`) that the entity, in
/// `from`, lacks and `ids` don't name, with value-initialised values; `ids()` and `values()`
/// give the call's lists with them appended (the call's own when none, allocating nothing).
/// Until `consumed()`, the destructor destroys the values it made.
class Required {
public:
    Required(Storage& s, std::span<const ComponentId> ids, std::byte* const* values)
        : s_(s), call_ids_(ids), call_values_(values), ids_(s.resource()), values_(s.resource()) {}
    /// Finds and makes them (not in the constructor: a bad_alloc here must reach the
    /// destructor, which destroys the values made so far). @throws std::bad_alloc,
    /// Error(invalid_argument) when one is kept by a layer above (a relation's component).
    /// `holder`, when not null, is the entity whose sparse components count as present (a
    /// sparse component is in a set, not in `from`).
    void bring(const Archetype& from, const char* op, Entity holder = Entity::null()) {
        Storage& s = s_;
        const std::span<const ComponentId> ids = call_ids_;
        std::byte* const* values = call_values_;
        if (!list(s, from, ids, holder, ids_)) [[likely]]
            return;
        s.check_plain(std::span(ids_).subspan(ids.size()), op);
        values_.reserve(ids_.size());
        values_.assign(values, values + ids.size());
        for (std::size_t k = ids.size(); k < ids_.size(); ++k) {
            const ComponentInfo& info = component_info(ids_[k]);
            s.ensure_component(ids_[k]);
            std::byte* v = nullptr;
            if (!info.is_tag()) {
                v = static_cast<std::byte*>(s.resource()->allocate(info.size, info.alignment));
                try {
                    info.construct_value(v);
                } catch (...) {
                    s.resource()->deallocate(v, info.size, info.alignment);
                    throw;
                }
            }
            values_.push_back(v);
        }
    }
    /// Whether `ids` bring any: then `out` is `ids` with the ones `from` (and `holder`'s sparse
    /// components) lack appended, transitively (each `required` list is closed already).
    /// @throws std::bad_alloc.
    static bool list(const Storage& s, const Archetype& from, std::span<const ComponentId> ids,
                     Entity holder, std::pmr::vector<ComponentId>& out) {
        bool brings = false;
        for (const ComponentId id : ids) brings |= component_info(id).required_count != 0;
        if (!brings) [[likely]]
            return false;
        const auto named = [&](ComponentId id) {
            if (from.contains(id) || std::find(out.begin(), out.end(), id) != out.end())
                return true;
            const SparseSet* set = s.sparse(id);
            return set != nullptr && set->contains(holder);
        };
        out.assign(ids.begin(), ids.end());
        for (const ComponentId id : ids) {
            const ComponentInfo& info = component_info(id);
            for (std::uint32_t k = 0; k < info.required_count; ++k)
                if (!named(info.required[k])) out.push_back(info.required[k]);
        }
        return out.size() > ids.size();
    }
    Required(const Required&) = delete;
    Required& operator=(const Required&) = delete;
    ~Required() {
        for (std::size_t k = call_ids_.size(); k < values_.size(); ++k) {
            if (values_[k] == nullptr) continue;
            const ComponentInfo& info = component_info(ids_[k]);
            if (!consumed_ && info.destroy != nullptr) info.destroy(values_[k], 1);
            s_.resource()->deallocate(values_[k], info.size, info.alignment);
        }
    }
    [[nodiscard]] std::span<const ComponentId> ids() const noexcept {
        return ids_.size() > call_ids_.size() ? std::span<const ComponentId>(ids_) : call_ids_;
    }
    [[nodiscard]] std::byte* const* values() const noexcept {
        return ids_.size() > call_ids_.size() ? values_.data() : call_values_;
    }
    /// The values are in the table (relocated from their buffers, which are only freed now).
    void consumed() noexcept { consumed_ = true; }

private:
    Storage& s_;
    std::span<const ComponentId> call_ids_;
    std::byte* const* call_values_;
    std::pmr::vector<ComponentId> ids_;
    std::pmr::vector<std::byte*> values_;
    bool consumed_ = false;
};

}  // namespace tessera::detail

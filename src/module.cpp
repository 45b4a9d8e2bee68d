// Modules (module.hpp): the world's record of imported modules, kept as a resource.
#include <tessera/module.hpp>
#include <tessera/resource.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace tessera {

namespace detail {

/// The modules a world imported (in the order their imports completed) and the ones whose
/// `build` is running (innermost last).
struct ModuleRecord {
    std::vector<std::string_view> done;
    std::vector<std::string_view> running;
};

void import_module(World& w, Schedule& schedule, std::string_view name,
                   void (*build)(World&, Schedule&)) {
    ModuleRecord* record = w.try_resource<ModuleRecord>();
    if (record == nullptr) record = &w.insert_resource(ModuleRecord{});
    if (std::find(record->done.begin(), record->done.end(), name) != record->done.end()) return;
    const auto cycle = std::find(record->running.begin(), record->running.end(), name);
    if (cycle != record->running.end()) {
        std::string chain;
        for (auto it = cycle; it != record->running.end(); ++it) chain += std::string(*it) + " -> ";
        throw Error(errc::invalid_argument, "World::import<" + std::string(name) +
                                                ">: import cycle: " + chain + std::string(name));
    }
    record->done.reserve(record->done.size() + 1);  // recording it can't fail after build
    record->running.push_back(name);
    try {
        build(w, schedule);
    } catch (...) {
        // The record may have been replaced by build (remove_resource): look it up again.
        if (ModuleRecord* r = w.try_resource<ModuleRecord>(); r != nullptr && !r->running.empty())
            r->running.pop_back();
        throw;
    }
    record = w.try_resource<ModuleRecord>();
    if (record == nullptr) return;  // build removed it
    record->running.pop_back();
    record->done.push_back(name);
}

}  // namespace detail

std::span<const std::string_view> World::modules() const noexcept {
    const detail::ModuleRecord* record = try_resource<detail::ModuleRecord>();
    return record == nullptr ? std::span<const std::string_view>{}
                             : std::span<const std::string_view>(record->done);
}

}  // namespace tessera

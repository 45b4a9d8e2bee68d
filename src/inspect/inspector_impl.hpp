// The inspector's shared parts (inspector.cpp: the server side; inspector_answers.cpp: the
// world thread's answers): the request record, Inspector::Impl and the helpers both use.
#pragma once

#include <tessera/detail/field_value.hpp>
#include <tessera/dynamic.hpp>
#include <tessera/inspect.hpp>
#include <tessera/module.hpp>
#include <tessera/names.hpp>
#include <tessera/prefab.hpp>
#include <tessera/relation.hpp>
#include <tessera/schedule.hpp>
#include <tessera/system_stats.hpp>
#include <tessera/world.hpp>

#include "../utf8.hpp"
#include "history.hpp"
#include "points.hpp"
#include "server.hpp"
#include "world_json.hpp"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iostream>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace tessera {

namespace detail {
/// The inspector's web page (page.html, embedded at build time by src/inspect/CMakeLists.txt).
std::string_view inspector_page() noexcept;
}  // namespace detail

namespace inspector_shared {

using json = nlohmann::json;
using detail::Archetype;
using detail::quote;
using detail::Storage;
using detail::inspector::add_leaves;
using detail::inspector::each_archetype;
using detail::inspector::entity_text;
using detail::inspector::fail;
using detail::inspector::find_by_name;
using detail::inspector::leaf_value;
using detail::inspector::names_of;
using detail::inspector::split_names;
using Failure = detail::inspector::RequestError;

constexpr std::size_t max_limit = 1000;            ///< entities / archetypes per page
constexpr std::size_t default_limit = 100;         ///< when `limit` is not given
constexpr std::size_t max_relation_listed = 1000;  ///< targets / sources listed per relation
constexpr std::size_t frame_samples = 128;         ///< frame times kept for the median

/// A request for the world thread, and its answer.
struct Pending {
    enum class Kind : std::uint8_t {
        stats,
        archetypes,
        systems,
        entities,
        entity,
        edit,
        points,
        fields,
        history
    };
    Kind kind = Kind::stats;
    // Arguments, validated on the server thread.
    Entity entity;
    std::vector<std::string> with, without;
    std::string name;  ///< entities: only those whose name contains it
    std::size_t offset = 0;
    std::size_t limit = default_limit;
    std::string component, field;
    json value;
    detail::inspector::PointsRequest points_request;
    detail::inspector::Points points;  ///< the answer to a points request, written by serve()
    // Answer, written by the world thread under the inspector's mutex.
    bool taken = false;
    bool done = false;
    int status = 500;
    std::string body;
};

inline std::string dump(const json& j) {
    // std::string fields may hold any bytes: invalid UTF-8 is replaced, never an exception.
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

inline std::string error_body(const std::string& message) {
    return dump(json{{"error", message}});
}

template <class T>
std::optional<T> parse_number(std::string_view s) {
    T value{};
    if (s.empty() || s.size() > 20) return std::nullopt;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
    return value;
}

/// "index:generation", both decimal.
inline std::optional<Entity> parse_entity(std::string_view s) {
    const std::size_t colon = s.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    const auto index = parse_number<std::uint32_t>(s.substr(0, colon));
    const auto generation = parse_number<std::uint32_t>(s.substr(colon + 1));
    if (!index || !generation) return std::nullopt;
    return Entity{*index, *generation};
}

}  // namespace inspector_shared

// Both files (and Inspector::Impl below) use these parts unqualified.
using namespace inspector_shared;

// ----- the inspector ------------------------------------------------------------------------

struct Inspector::Impl {
    explicit Impl(InspectorOptions o)
        : options(std::move(o)),
          server(std::max(options.request_timeout, std::chrono::milliseconds(1))) {}

    InspectorOptions options;
    detail::InspectorServer server;
    std::thread thread;
    std::atomic<bool> finished{false};
    int port = 0;

    std::mutex mutex;
    std::condition_variable answered;
    std::deque<std::shared_ptr<Pending>> queue;  // guarded by mutex
    bool stopping = false;                       // guarded by mutex

    // World thread only.
    std::atomic<std::uint64_t> frames{0};
    std::optional<std::chrono::steady_clock::time_point> last_update;
    std::vector<double> frame_ms;             ///< ring of the last `frame_samples` frame times
    detail::inspector::FrameHistory history;  ///< the charts' frames
    std::size_t frame_next = 0;
    double last_frame_ms = 0;
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

    void routes();
    /// Why `req`'s Host header is refused (400 or 403, and the message), or nothing.
    std::optional<Failure> host_problem(const httplib::Request& req) const;
    /// Queues `p` and waits for its answer (or the timeout, or shutdown).
    void serve(const std::shared_ptr<Pending>& p, httplib::Response& res);
    static void reply(httplib::Response& res, int status, const std::string& body) {
        res.status = status;
        res.set_content(body, "application/json");
    }

    // World thread: one request each.
    /// The answer to `p` (200). @throws Failure for a bad request.
    json answer(Pending& p, World& world, Schedule* schedule);
    json stats(const World& world) const;
    static json archetypes(const World& world, const Pending& p);
    static json systems(Schedule* schedule);
    static json entities(const World& world, const Pending& p);
    static json entity(const World& world, Entity e);
    static json edit(World& world, const Pending& p);
};

namespace inspector_shared {
inline void check_alive(const World& world, Entity e) {
    const Storage& s = world.storage();
    if (world.is_alive(e)) return;
    if (e.index < s.record_count() && s.records()[e.index].archetype != detail::dead_archetype)
        fail(404, "entity " + entity_text(e) + " is not alive (a newer generation " +
                      std::to_string(s.records()[e.index].generation) + " lives at index " +
                      std::to_string(e.index) + ")");
    if (e.index < s.record_count()) fail(404, "entity " + entity_text(e) + " is not alive");
    fail(404, "unknown entity " + entity_text(e));
}

/// The component `name` of live `e`: an exact name or a unique "::"-suffix among `e`'s own.
inline ComponentId component_of(const World& world, Entity e, const std::string& name) {
    const Storage& s = world.storage();
    const Archetype& a = s.archetype(s.try_record(e)->archetype);
    std::optional<ComponentId> found;
    std::size_t suffix_matches = 0;
    const auto match = [&](ComponentId id) {
        const std::string_view n = component_info(id).name;
        if (n == name) return true;
        if (n.size() > name.size() + 2 && n.ends_with(name) &&
            n.substr(n.size() - name.size() - 2, 2) == "::") {
            found = id;
            ++suffix_matches;
        }
        return false;
    };
    for (const ComponentId id : a.ids) {
        if (match(id)) return id;
    }
    for (const detail::SparseSet* set : s.sparse_sets()) {  // e's sparse components too
        if (set->contains(e) && match(set->info().id)) return set->info().id;
    }
    if (suffix_matches == 1) return *found;
    if (suffix_matches > 1)
        fail(400, "component name " + quote(name) + " is ambiguous: qualify it");
    std::string problem;
    if (!find_by_name(s, name, &problem)) fail(404, problem);
    fail(404, "entity " + entity_text(e) + " has no component " + quote(name));
}
}  // namespace inspector_shared

}  // namespace tessera

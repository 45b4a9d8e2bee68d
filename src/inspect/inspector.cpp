// The world inspector (inspect.hpp): an HTTP server whose threads never touch the world.
//
// Every API request becomes a `Pending` in a queue; its server thread waits on a condition
// variable until `Inspector::update`, on the world's thread, takes the queue, answers each
// request from the world (or applies its edit) and wakes the waiters. Requests are validated
// as far as possible before they are queued (ids, paging, the body), so malformed ones are
// answered at once, even when no update runs. A waiter that times out removes its request from
// the queue if the world thread has not taken it yet, so a timed-out edit is never applied
// later; once taken, it is answered within that update, so the waiter keeps waiting for it.
// The transport (server.hpp) bounds how long a client may take to send a request and gives
// each connection a thread, so slow clients can't hold the server threads.
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
#include <sys/socket.h>
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

#if defined(__SANITIZE_THREAD__)
// Debian's libcpp-httplib.so is not built with -fsanitize=thread: TSan sees the heap calls its
// worker threads make (new, memcmp) but not the locking around them, and reports races inside
// the library between its own threads. Those are suppressed in every program that links the
// inspector; our side of the boundary (the request queue below, its mutex and condition
// variable) stays instrumented and checked.
extern "C" const char* __tsan_default_suppressions() {
    return "called_from_lib:libcpp-httplib.so\n"
           "race:libcpp-httplib.so\n";
}
#endif

namespace tessera {

namespace detail {
/// The inspector's web page (page.html, embedded at build time by src/inspect/CMakeLists.txt).
std::string_view inspector_page() noexcept;
}  // namespace detail

namespace {

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

std::string dump(const json& j) {
    // std::string fields may hold any bytes: invalid UTF-8 is replaced, never an exception.
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string error_body(const std::string& message) {
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
std::optional<Entity> parse_entity(std::string_view s) {
    const std::size_t colon = s.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    const auto index = parse_number<std::uint32_t>(s.substr(0, colon));
    const auto generation = parse_number<std::uint32_t>(s.substr(colon + 1));
    if (!index || !generation) return std::nullopt;
    return Entity{*index, *generation};
}

}  // namespace

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

namespace {
void check_alive(const World& world, Entity e) {
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
ComponentId component_of(const World& world, Entity e, const std::string& name) {
    const Storage& s = world.storage();
    const Archetype& a = s.archetype(s.try_record(e)->archetype);
    std::optional<ComponentId> found;
    std::size_t suffix_matches = 0;
    for (const ComponentId id : a.ids) {
        const std::string_view n = component_info(id).name;
        if (n == name) return id;
        if (n.size() > name.size() + 2 && n.ends_with(name) &&
            n.substr(n.size() - name.size() - 2, 2) == "::") {
            found = id;
            ++suffix_matches;
        }
    }
    if (suffix_matches == 1) return *found;
    if (suffix_matches > 1)
        fail(400, "component name " + quote(name) + " is ambiguous: qualify it");
    std::string problem;
    if (!find_by_name(s, name, &problem)) fail(404, problem);
    fail(404, "entity " + entity_text(e) + " has no component " + quote(name));
}
}  // namespace

Inspector::Inspector(std::uint16_t port, InspectorOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {
    Impl& m = *impl_;
    if (!detail::is_loopback_host(m.options.host)) {
        if (!m.options.allow_remote)
            throw Error(errc::invalid_argument,
                        "Inspector: host " + quote(m.options.host) +
                            " is not a loopback address; set InspectorOptions::allow_remote to "
                            "serve it (the API can change the world and has no authentication)");
        std::cerr << "tessera::Inspector: warning: serving on " << m.options.host
                  << ", reachable from other machines; the API can change the world and has "
                     "no authentication\n";
    }
    m.frame_ms.reserve(frame_samples);
    // A thread per connection, started when none is idle: slow clients don't hold up others
    // (each is cut off at its request_timeout) until `threads` connections are open at once.
    const int threads = std::max(1, m.options.threads);
    m.server.new_task_queue = [threads] {
        return new detail::ConnectionPool(static_cast<std::size_t>(threads));
    };
    m.server.set_payload_max_length(m.options.max_body);
    m.server.set_write_timeout(2);
    // httplib's default also sets SO_REUSEPORT, which would let a second server share a taken
    // port silently: only SO_REUSEADDR here (restarting on a port in TIME_WAIT still works).
    m.server.set_socket_options([](socket_t sock) {
        const int yes = 1;
        ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    m.routes();
    if (port == 0) {
        m.port = m.server.bind_to_any_port(m.options.host);
    } else {
        m.port = m.server.bind_to_port(m.options.host, port) ? port : -1;
    }
    if (m.port <= 0)
        throw Error(errc::invalid_argument, "Inspector: cannot listen on " + m.options.host + ":" +
                                                std::to_string(port) +
                                                " (port taken, or not a local address?)");
    m.server.widen_backlog();
    m.thread = std::thread([&m] {
        m.server.listen_after_bind();
        m.finished.store(true);
    });
}

Inspector::~Inspector() {
    Impl& m = *impl_;
    {
        std::lock_guard lock(m.mutex);
        m.stopping = true;
    }
    m.answered.notify_all();
    // `stop` does nothing until the server loop has started: repeat it until the loop ends.
    while (!m.finished.load()) {
        m.server.stop();
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    m.thread.join();
}

std::uint16_t Inspector::port() const noexcept {
    return static_cast<std::uint16_t>(impl_->port);
}

std::string Inspector::url() const {
    const std::string& h = impl_->options.host;
    const bool v6 = h.find(':') != std::string::npos;
    return "http://" + (v6 ? "[" + h + "]" : h) + ":" + std::to_string(impl_->port) + "/";
}

std::uint64_t Inspector::frames() const noexcept {
    return impl_->frames.load();
}

std::optional<Failure> Inspector::Impl::host_problem(const httplib::Request& req) const {
    // HTTP/1.1 (RFC 9112, 3.2): a request without exactly one Host header is a bad request.
    const std::size_t hosts = req.get_header_value_count("Host");
    if (hosts != 1)
        return Failure{400, hosts == 0 ? "the request has no Host header"
                                       : "the request has " + std::to_string(hosts) +
                                             " Host headers (exactly one is allowed)"};
    const std::string host = req.get_header_value("Host");
    if (host.empty()) return Failure{400, "the request's Host header is empty"};
    // A page on another site can't reach the API through DNS rebinding: on loopback, only
    // requests addressed to a loopback name are served.
    if (options.allow_remote) return std::nullopt;
    const std::string p = ":" + std::to_string(port);
    const bool v6 = options.host.find(':') != std::string::npos;
    const std::string own = (v6 ? "[" + options.host + "]" : options.host) + p;
    if (host == "127.0.0.1" + p || host == "localhost" + p || host == "[::1]" + p || host == own)
        return std::nullopt;
    return Failure{403, "Host " + quote(host) + " is not served"};
}

void Inspector::Impl::serve(const std::shared_ptr<Pending>& p, httplib::Response& res) {
    std::unique_lock lock(mutex);
    if (stopping) return reply(res, 503, error_body("the inspector is shutting down"));
    queue.push_back(p);
    const auto deadline = std::chrono::steady_clock::now() + options.reply_timeout;
    while (!p->done && !stopping) {
        if (p->taken) {
            answered.wait(lock);  // being answered by the update running now: it ends soon
            continue;
        }
        if (answered.wait_until(lock, deadline) == std::cv_status::timeout && !p->done &&
            !p->taken) {
            queue.erase(std::find(queue.begin(), queue.end(), p));
            return reply(res, 503,
                         error_body("no Inspector::update within " +
                                    std::to_string(options.reply_timeout.count()) +
                                    " ms: is the program running its frame loop?"));
        }
    }
    if (!p->done) {
        if (!p->taken) queue.erase(std::find(queue.begin(), queue.end(), p));
        return reply(res, 503, error_body("the inspector is shutting down"));
    }
    if (p->kind == Pending::Kind::points && p->status == 200) {
        lock.unlock();  // written here, off the world's thread
        return reply(res, 200, detail::inspector::write_points(p->points));
    }
    reply(res, p->status, p->body);
}

void Inspector::Impl::routes() {
    server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        const std::optional<Failure> problem = host_problem(req);
        if (!problem) return httplib::Server::HandlerResponse::Unhandled;
        reply(res, problem->status, error_body(problem->message));
        return httplib::Server::HandlerResponse::Handled;
    });
    server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;  // ours: already a JSON error
        std::string message;
        if (res.status == 413)
            message = "request body too large";
        else if (res.status == 404)
            message = "no such endpoint: " + req.method + " " + req.path;
        else
            message = "bad request";
        res.set_content(error_body(message), "application/json");
    });
    server.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, const std::exception_ptr&) {
            reply(res, 500, error_body("internal error"));
        });

    server.Get("/", [](const httplib::Request&, httplib::Response& res) {
        res.set_header("Content-Security-Policy",
                       "default-src 'self'; script-src 'unsafe-inline'; style-src "
                       "'unsafe-inline'; connect-src 'self'");
        res.set_header("X-Content-Type-Options", "nosniff");
        const std::string_view page = detail::inspector_page();
        res.set_content(page.data(), page.size(), "text/html; charset=utf-8");
    });

    auto simple = [this](Pending::Kind kind) {
        return [this, kind](const httplib::Request&, httplib::Response& res) {
            auto p = std::make_shared<Pending>();
            p->kind = kind;
            serve(p, res);
        };
    };
    server.Get("/api/stats", simple(Pending::Kind::stats));
    server.Get("/api/systems", simple(Pending::Kind::systems));
    server.Get("/api/fields", simple(Pending::Kind::fields));
    server.Get("/api/history", simple(Pending::Kind::history));
    server.Get("/api/points", [this](const httplib::Request& req, httplib::Response& res) {
        auto p = std::make_shared<Pending>();
        p->kind = Pending::Kind::points;
        detail::inspector::PointsRequest& q = p->points_request;
        q.x = req.get_param_value("x");
        q.y = req.get_param_value("y");
        if (req.has_param("color")) q.color = req.get_param_value("color");
        for (const auto& [what, spec] : {std::pair{"x", q.x}, {"y", q.y}, {"color", q.color}}) {
            if (spec == "archetype" && std::string_view(what) == "color") continue;
            if (auto problem = detail::inspector::spec_problem(what, spec); !problem.empty())
                return reply(res, 400, error_body(problem));
        }
        if (req.has_param("limit")) {
            const auto n = parse_number<std::size_t>(req.get_param_value("limit"));
            if (!n || *n == 0 || *n > detail::inspector::max_points)
                return reply(res, 400,
                             error_body("limit must be an integer from 1 to " +
                                        std::to_string(detail::inspector::max_points)));
            q.limit = *n;
        }
        if (req.has_param("with")) q.with = split_names(req.get_param_value("with"));
        if (req.has_param("without")) q.without = split_names(req.get_param_value("without"));
        if (q.with.size() + q.without.size() > 64)
            return reply(res, 400, error_body("at most 64 components in with and without"));
        serve(p, res);
    });

    // offset/limit: decimal, limit 1..1000.
    auto paging = [](const httplib::Request& req, Pending& p) -> std::optional<std::string> {
        if (req.has_param("offset")) {
            const auto n = parse_number<std::size_t>(req.get_param_value("offset"));
            if (!n) return "offset must be a non-negative integer";
            p.offset = *n;
        }
        if (req.has_param("limit")) {
            const auto n = parse_number<std::size_t>(req.get_param_value("limit"));
            if (!n || *n == 0 || *n > max_limit)
                return "limit must be an integer from 1 to " + std::to_string(max_limit);
            p.limit = *n;
        }
        return std::nullopt;
    };
    server.Get("/api/archetypes",
               [this, paging](const httplib::Request& req, httplib::Response& res) {
                   auto p = std::make_shared<Pending>();
                   p->kind = Pending::Kind::archetypes;
                   p->limit = max_limit;
                   if (auto problem = paging(req, *p)) return reply(res, 400, error_body(*problem));
                   serve(p, res);
               });
    server.Get(
        "/api/entities", [this, paging](const httplib::Request& req, httplib::Response& res) {
            auto p = std::make_shared<Pending>();
            p->kind = Pending::Kind::entities;
            if (auto problem = paging(req, *p)) return reply(res, 400, error_body(*problem));
            if (req.has_param("with")) p->with = split_names(req.get_param_value("with"));
            if (req.has_param("without")) p->without = split_names(req.get_param_value("without"));
            if (req.has_param("name")) p->name = req.get_param_value("name");
            if (p->name.size() > 256)
                return reply(res, 400, error_body("a name search of at most 256 bytes"));
            if (p->with.size() + p->without.size() > 64)
                return reply(res, 400, error_body("at most 64 components in with and without"));
            serve(p, res);
        });
    server.Get(R"(/api/entity/([^/]+))",
               [this](const httplib::Request& req, httplib::Response& res) {
                   const std::optional<Entity> e = parse_entity(req.matches[1].str());
                   if (!e)
                       return reply(res, 400,
                                    error_body("bad entity id " + quote(req.matches[1].str()) +
                                               ": expected index:generation, e.g. 12:1"));
                   auto p = std::make_shared<Pending>();
                   p->kind = Pending::Kind::entity;
                   p->entity = *e;
                   serve(p, res);
               });
    server.Put(R"(/api/entity/([^/]+)/([^/]+)/([^/]+))", [this](const httplib::Request& req,
                                                                httplib::Response& res) {
        const std::optional<Entity> e = parse_entity(req.matches[1].str());
        if (!e)
            return reply(res, 400,
                         error_body("bad entity id " + quote(req.matches[1].str()) +
                                    ": expected index:generation, e.g. 12:1"));
        json body = json::parse(req.body, nullptr, false);
        if (body.is_discarded())
            return reply(res, 400,
                         error_body("the body is not JSON (send the new value, e.g. 42)"));
        if (body.is_object() && body.size() == 1 && body.contains("value"))
            body = json(body["value"]);
        if (!body.is_number() && !body.is_boolean() && !body.is_string())
            return reply(res, 400, error_body("the value must be a number, a bool or a string"));
        auto p = std::make_shared<Pending>();
        p->kind = Pending::Kind::edit;
        p->entity = *e;
        p->component = req.matches[2].str();
        p->field = req.matches[3].str();
        p->value = std::move(body);
        serve(p, res);
    });
}

void Inspector::update(World& world, Schedule* schedule) {
    Impl& m = *impl_;
    const auto now = std::chrono::steady_clock::now();
    if (m.last_update) {
        const double ms = std::chrono::duration<double, std::milli>(now - *m.last_update).count();
        if (m.frame_ms.size() < frame_samples)
            m.frame_ms.push_back(ms);
        else
            m.frame_ms[m.frame_next] = ms;
        m.frame_next = (m.frame_next + 1) % frame_samples;
        m.last_frame_ms = ms;
        m.history.record(m.frames.load() + 1, ms, world.count(), world.archetype_count(), schedule,
                         now);
    }
    m.last_update = now;
    m.frames.fetch_add(1);
    if (schedule != nullptr && !schedule->profiling()) schedule->set_profiling(true);

    std::deque<std::shared_ptr<Pending>> work;
    {
        std::lock_guard lock(m.mutex);
        if (m.queue.empty()) return;
        work.swap(m.queue);
        for (const auto& p : work) p->taken = true;
    }
    for (const auto& p : work) {
        // Answered outside the lock (a taken request's arguments no longer change), published
        // under it.
        int status = 200;
        std::string body;
        try {
            json answer = m.answer(*p, world, schedule);
            if (p->kind != Pending::Kind::points) body = dump(answer);
        } catch (const Failure& f) {
            status = f.status;
            body = error_body(f.message);
        } catch (const std::exception& e) {
            status = 500;
            body = error_body(std::string("internal error: ") + e.what());
        }
        std::lock_guard lock(m.mutex);
        p->status = status;
        p->body = std::move(body);
        p->done = true;
    }
    m.answered.notify_all();
}

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
    const std::vector<ComponentId> with = detail::inspector::ids_by_name(s, p.with);
    const std::vector<ComponentId> without = detail::inspector::ids_by_name(s, p.without);
    json list = json::array();
    json names = json::object();
    std::size_t total = 0;
    const auto listed = [&](Entity e, std::uint32_t shown) {
        json item = {{"id", entity_text(e)}, {"archetype", shown}};
        if (const std::string_view n = world.name(e); !n.empty()) item["name"] = std::string(n);
        return item;
    };
    if (!p.name.empty()) {
        // A name search: entity by entity (names are not per table).
        each_archetype(s, [&](const Archetype& a) {
            if (a.size == 0 || !detail::inspector::matches(a, with, without)) return;
            const std::uint32_t shown = detail::shown_archetype(a.index);
            for (std::uint32_t row = 0; row < a.size; ++row) {
                const Entity e = a.entities[row];
                if (world.name(e).find(p.name) == std::string_view::npos) continue;
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
        json c = {{"name", std::string(info.name)},
                  {"id", id.value},
                  {"size", info.size},
                  {"tag", info.is_tag()},
                  {"reflected", info.schema != nullptr},
                  {"enableable", info.enableable}};
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

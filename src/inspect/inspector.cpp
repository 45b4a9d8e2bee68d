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
#include "inspector_impl.hpp"

#include <sys/socket.h>

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

}  // namespace tessera

/// @file inspect.hpp
/// `Inspector`: a small HTTP server inside the program that serves a JSON API and a web page
/// to look into a running world and its schedule, and to edit reflected fields live.
/// Target `tessera::inspect` (built when cpp-httplib is installed); the core library has no
/// networking. docs/inspector.md documents the API.
///
/// @code
/// ts::Inspector inspector(8080);            // http://127.0.0.1:8080/
/// for (;;) {                                // the program's frame loop, on the world's thread
///     schedule.run(world);
///     inspector.update(world, &schedule);   // answers the requests queued since the last call
/// }
/// @endcode
///
/// **Threads.** The server's threads never touch the world. Each API request is queued and
/// waits (up to `InspectorOptions::reply_timeout`) for the next `update`, which runs on the
/// world's thread, reads (or, for a field edit, writes) the world and answers it. With nobody
/// asking, `update` costs a mutex lock, a clock read and one frame sample for the charts
/// (while the charts are watched, also a `Schedule::stats()` call). A request that no `update`
/// answers in time gets 503 and changes nothing.
#pragma once

#include <tessera/fwd.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tessera {

class Schedule;

/// How an `Inspector` serves.
struct InspectorOptions {
    /// The address to listen on. Anything but a numeric loopback address (IPv4 127.0.0.0/8,
    /// IPv6 "::1") or "localhost" also needs `allow_remote`, and prints a warning to stderr:
    /// the API can change the world and has no authentication. A name is never taken for
    /// loopback by its spelling ("127.example.com" is remote).
    std::string host = "127.0.0.1";
    /// Required to bind a non-loopback `host`.
    bool allow_remote = false;
    /// How long a request waits for `update` before it gets 503.
    std::chrono::milliseconds reply_timeout{1000};
    /// Largest request body accepted (a field edit's JSON value); larger ones get 413.
    std::size_t max_body = 4096;
    /// How long a client has to send a whole request (head and body), counted from its
    /// connection (or its previous answer on a keep-alive connection); a connection that has
    /// not sent one in time is closed, so slow or stalled clients don't hold the server.
    std::chrono::milliseconds request_timeout{2000};
    /// Connections served at once: a thread each, started when none is idle and kept for later
    /// connections. Beyond that many, a new connection waits until one closes.
    int threads = 64;
};

/// A world inspector served over HTTP (see the file comment). Not copyable or movable.
class Inspector {
public:
    /// Starts serving on `port` (0: a free port the system picks; see `port()`) at
    /// `options.host`. @throws Error(invalid_argument) when the host is not loopback and
    /// `allow_remote` is false, or when the address can't be bound (port taken, bad host).
    explicit Inspector(std::uint16_t port, InspectorOptions options = {});
    /// Stops the server: waiting requests get 503; joins its threads.
    ~Inspector();
    Inspector(const Inspector&) = delete;
    Inspector& operator=(const Inspector&) = delete;

    /// The port it listens on.
    [[nodiscard]] std::uint16_t port() const noexcept;
    /// "http://<host>:<port>/".
    [[nodiscard]] std::string url() const;

    /// Answers every request queued since the last call, reading and writing `world` (and
    /// reading `schedule`, whose profiling it turns on) on the calling thread, which must be
    /// the world's; call it once per frame, outside queries and schedule runs. Also records the
    /// frame time (the time since the previous call). Never throws for a bad request (it gets
    /// a 4xx answer); O(work asked for: at most 1,000 entities per request).
    void update(World& world, Schedule* schedule = nullptr);

    /// Frames `update` has seen.
    [[nodiscard]] std::uint64_t frames() const noexcept;

    /// The server and the request queue (src/inspect/inspector.cpp).
    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace tessera

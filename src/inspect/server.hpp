// The inspector's HTTP transport (internal, not API): cpp-httplib's server with a deadline on
// every request and a connection pool that grows on demand, and the loopback check.
//
// cpp-httplib's own read timeout bounds each read, not a request: a client trickling its
// request head a byte at a time keeps a server thread forever, and a fixed pool of such
// threads is soon all taken (forty trickling connections stopped the inspector for ~12 s).
// `InspectorServer` reads each request through a stream that fails once the request's
// deadline passes, and closes the connection then; `ConnectionPool` starts a thread per
// connection (kept for the next one) up to a bound, so slow connections never queue a normal
// request behind them until that bound is reached.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

namespace tessera::detail {

/// True when `host` is a loopback address written as a number (IPv4 127.0.0.0/8, IPv6 ::1 or
/// ::ffff:127.x.y.z, as `inet_pton` reads them) or is exactly "localhost". A name that merely
/// starts with "127." ("127.attacker.example") is not.
[[nodiscard]] bool is_loopback_host(std::string_view host);

/// cpp-httplib's server, with each request (head and body) bounded by `request_timeout` from
/// the moment the server starts waiting for it (the connection's accept, or the previous
/// answer): a request not complete by then ends its connection. Between requests of a
/// keep-alive connection the same bound applies. Shutdown (`stop()`) ends every wait within
/// `poll_slice`.
class InspectorServer : public httplib::Server {
public:
    explicit InspectorServer(std::chrono::milliseconds request_timeout)
        : request_timeout_(request_timeout) {}

    static constexpr std::chrono::milliseconds poll_slice{50};

    /// After binding: raises the listening socket's backlog from httplib's 5 to SOMAXCONN, so a
    /// burst of connections (a browser opens six at once; a client flood more) is queued by
    /// the kernel instead of dropped and retried a second or more later.
    void widen_backlog();

private:
    bool process_and_close_socket(socket_t sock) override;

    std::chrono::milliseconds request_timeout_;
};

/// A task queue for httplib: runs each connection on a thread of its own, starting a thread
/// when none is idle, up to `max_threads` (later connections wait for one); threads are kept
/// until `shutdown`, which runs the connections still queued (the server has stopped by then,
/// so each just closes) and joins them.
class ConnectionPool final : public httplib::TaskQueue {
public:
    explicit ConnectionPool(std::size_t max_threads) : max_threads_(max_threads) {}
    ~ConnectionPool() override;
    ConnectionPool(const ConnectionPool&) = delete;
    ConnectionPool& operator=(const ConnectionPool&) = delete;

    void enqueue(std::function<void()> fn) override;
    void shutdown() override;

private:
    void work();

    const std::size_t max_threads_;
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::function<void()>> jobs_;  // guarded by mutex_
    std::size_t idle_ = 0;                    // guarded by mutex_
    bool shutdown_ = false;                   // guarded by mutex_
    std::vector<std::thread> threads_;        // guarded by mutex_ (joined in shutdown)
};

}  // namespace tessera::detail

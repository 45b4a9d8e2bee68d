// The inspector's HTTP transport (server.hpp): a request deadline on top of cpp-httplib, a
// connection pool that grows on demand, and the numeric loopback check.
#include "server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

namespace tessera::detail {

namespace {

using Clock = std::chrono::steady_clock;

/// "ip", port of a connected socket's peer (`peer`) or own end, as httplib reports them.
void address_of(socket_t sock, bool peer, std::string& ip, int& port) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    const int rc = peer ? ::getpeername(sock, reinterpret_cast<sockaddr*>(&addr), &len)
                        : ::getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len);
    if (rc != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (addr.ss_family == AF_INET) {
        const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
        ::inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
        port = ntohs(a.sin_port);
    } else if (addr.ss_family == AF_INET6) {
        const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
        ::inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof text);
        port = ntohs(a.sin6_port);
    }
    ip = text;
}

/// A connected socket read through a deadline: every read fails once `deadline` has passed
/// (or the server stopped), however slowly the bytes trickle in. Reads are buffered (httplib
/// reads the request head a byte at a time). Writes are bounded by the server's write timeout.
class DeadlineStream final : public httplib::Stream {
public:
    DeadlineStream(socket_t sock, Clock::time_point deadline, Clock::duration write_timeout,
                   const std::atomic<socket_t>& listening)
        : sock_(sock), deadline_(deadline), write_timeout_(write_timeout), listening_(listening) {}

    /// True once a read failed because the deadline passed.
    [[nodiscard]] bool expired() const { return expired_; }

    bool is_readable() const override { return pos_ < len_ || wait(POLLIN, deadline_, true); }
    bool is_writable() const override { return wait(POLLOUT, Clock::now() + write_timeout_); }

    ssize_t read(char* ptr, std::size_t size) override {
        if (pos_ == len_) {
            if (!wait(POLLIN, deadline_, true)) return -1;
            ssize_t n;
            do {
                n = ::recv(sock_, buffer_, sizeof buffer_, 0);
            } while (n < 0 && errno == EINTR);
            if (n <= 0) return n;
            pos_ = 0;
            len_ = static_cast<std::size_t>(n);
        }
        const std::size_t n = std::min(size, len_ - pos_);
        std::memcpy(ptr, buffer_ + pos_, n);
        pos_ += n;
        return static_cast<ssize_t>(n);
    }

    ssize_t write(const char* ptr, std::size_t size) override {
        if (!is_writable()) return -1;
        ssize_t n;
        do {
            n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
        } while (n < 0 && errno == EINTR);
        return n;
    }

    void get_remote_ip_and_port(std::string& ip, int& port) const override {
        address_of(sock_, true, ip, port);
    }
    void get_local_ip_and_port(std::string& ip, int& port) const override {
        address_of(sock_, false, ip, port);
    }
    socket_t socket() const override { return sock_; }

private:
    /// Waits until `events` are possible on the socket (or it hung up: the next call reports
    /// it), in slices, so a stopped server ends the wait soon. False at `until` or on stop.
    bool wait(short events, Clock::time_point until, bool reading = false) const {
        for (;;) {
            if (listening_.load() == INVALID_SOCKET) return false;
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
            if (left.count() <= 0) {
                if (reading) expired_ = true;
                return false;
            }
            pollfd p{sock_, events, 0};
            const int slice = static_cast<int>(
                std::min<std::chrono::milliseconds>(left, InspectorServer::poll_slice).count());
            const int rc = ::poll(&p, 1, slice);
            if (rc > 0) return true;
            if (rc < 0 && errno != EINTR) return false;
        }
    }

    socket_t sock_;
    Clock::time_point deadline_;
    Clock::duration write_timeout_;
    const std::atomic<socket_t>& listening_;
    mutable bool expired_ = false;
    char buffer_[4096];
    std::size_t pos_ = 0;
    std::size_t len_ = 0;
};

}  // namespace

bool is_loopback_host(std::string_view host) {
    if (host == "localhost") return true;
    const std::string text(host);
    in_addr v4{};
    if (::inet_pton(AF_INET, text.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
    in6_addr v6{};
    if (::inet_pton(AF_INET6, text.c_str(), &v6) != 1) return false;
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    // ::ffff:127.x.y.z, an IPv4 loopback address mapped into IPv6.
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
}

bool InspectorServer::process_and_close_socket(socket_t sock) {
    // httplib's keep-alive loop (process_server_socket), with a deadline per request.
    const auto write_timeout =
        std::chrono::seconds(write_timeout_sec_) + std::chrono::microseconds(write_timeout_usec_);
    bool ret = false;
    for (std::size_t left = std::max<std::size_t>(keep_alive_max_count_, 1); left > 0; --left) {
        DeadlineStream stream(sock, Clock::now() + request_timeout_,
                              std::chrono::duration_cast<Clock::duration>(write_timeout),
                              svr_sock_);
        bool closed = false;
        ret = process_request(stream, left == 1, closed, nullptr);
        // A request cut off by its deadline may still have been answered (400): either way
        // the connection ends, so a trickling client gets no second deadline.
        if (!ret || closed || stream.expired()) break;
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ret;
}

void InspectorServer::widen_backlog() {
    // Linux takes a second listen() on a listening socket as a new backlog.
    const socket_t sock = svr_sock_.load();
    if (sock != INVALID_SOCKET) ::listen(sock, SOMAXCONN);
}

ConnectionPool::~ConnectionPool() {
    shutdown();
}

void ConnectionPool::enqueue(std::function<void()> fn) {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(fn));
    if (idle_ < jobs_.size() && threads_.size() < max_threads_ && !shutdown_) {
        try {
            threads_.emplace_back([this] { work(); });
        } catch (const std::system_error&) {
            // No thread to be had now: the connection waits for a running one (or shutdown).
        }
    }
    ready_.notify_one();
}

void ConnectionPool::shutdown() {
    std::vector<std::thread> threads;
    {
        std::lock_guard lock(mutex_);
        shutdown_ = true;
        threads.swap(threads_);
    }
    ready_.notify_all();
    for (std::thread& t : threads) t.join();
    // Only when no thread could ever be started: run what is left here (each job closes its
    // connection, the server having stopped).
    std::unique_lock lock(mutex_);
    while (!jobs_.empty()) {
        std::function<void()> fn = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        fn();
        lock.lock();
    }
}

void ConnectionPool::work() {
    std::unique_lock lock(mutex_);
    for (;;) {
        ++idle_;
        ready_.wait(lock, [this] { return !jobs_.empty() || shutdown_; });
        --idle_;
        if (jobs_.empty()) return;  // shut down, nothing left to run
        std::function<void()> fn = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        try {
            fn();
        } catch (...) {
            // httplib answers a handler's exception itself; a failure in the transport only
            // loses that connection, never the thread.
        }
        lock.lock();
    }
}

}  // namespace tessera::detail

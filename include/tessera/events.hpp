/// @file events.hpp
/// Events: double-buffered queues of messages between systems, read through cursors.
#pragma once

#include <tessera/resource.hpp>
#include <tessera/world.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory_resource>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera {

/// A reader's position in an `Events` queue: the id of the next event it will read.
///
/// Events are numbered by a 64-bit running id that never repeats within a queue, so a cursor
/// is a plain value: copy it, store it in a system, keep one per reader. It is not tied to a
/// queue object; a cursor used with a queue it does not come from is not detected (it reads
/// from whatever position its id names, or nothing when it is ahead of that queue).
///
/// A default-constructed cursor stands before the first event ever sent: it reads every event
/// still held and counts every dropped one as missed. Take `Events::cursor()` to start at the
/// oldest event held without counting earlier ones.
class EventCursor {
public:
    constexpr EventCursor() noexcept = default;
    /// The id of the next event this cursor reads.
    [[nodiscard]] constexpr std::uint64_t next_id() const noexcept { return next_; }
    /// Whether both stand at the same id.
    friend constexpr bool operator==(EventCursor, EventCursor) noexcept = default;

private:
    template <class T>
    friend class Events;
    constexpr explicit EventCursor(std::uint64_t next) noexcept : next_(next) {}

    std::uint64_t next_ = 0;
};

/// A queue of events of type `T`, double-buffered: events sent since the last `update()` sit in
/// the newer buffer; `update()` drops the older buffer and the newer one takes its place. An
/// event thus lives for two `update()`s: sent before update N, it survives update N and is
/// dropped by update N+1.
///
/// Readers keep an `EventCursor` each and call `read(cursor)` to get the events they have not
/// read yet, oldest first; a reader never sees the same event twice, and a reader that reads at
/// least once between two `update()`s never misses one. A reader that falls behind (two or more
/// `update()`s without reading) skips the events dropped meanwhile: `missed(cursor)` and
/// `Range::missed()` say how many.
///
/// In a world, the queue of `T` is the resource `Events<T>`, made by `World::events<T>()` or
/// `World::send_event` on first use and updated by `World::update_events()`. It can also be
/// used on its own (then the program calls `update()`).
///
/// **Invalidation.** References and iterators obtained from `read` (and the reference `emplace`
/// returns) stay valid until the next `send`, `emplace`, `update` or `clear` on the queue.
/// Cursors never become invalid.
///
/// **Memory.** Both buffers are `std::pmr::vector<T>`s allocating from the memory resource given
/// at construction (the world's for a world's queue). `update()` keeps the capacity of both
/// buffers, so once they have grown to the largest number of events sent between two updates,
/// sending, updating and reading allocate nothing.
///
/// **Errors.** `send`/`emplace` give the strong guarantee when they throw `std::bad_alloc` or
/// when `T`'s constructor throws (the queue is unchanged), like `std::vector::push_back`. The
/// rest never throws.
///
/// **Threads.** A queue belongs to one thread at a time.
template <class T>
class Events {
    static_assert(std::is_object_v<T> && !std::is_const_v<T> && !std::is_volatile_v<T>,
                  "tessera: Events<T>: T must be a non-const, non-volatile object type (not a "
                  "reference or array): use Events<std::remove_cvref_t<T>>");
    static_assert(std::is_move_constructible_v<T>,
                  "tessera: Events<T>: T is not move constructible; events are stored in a "
                  "std::vector, so give the event type a move (or copy) constructor");

public:
    using value_type = T;  ///< the event type

    /// The events one `read` returns: the unread part of the older buffer, then the unread part
    /// of the newer one, oldest first. A view: it owns nothing and is invalidated like the
    /// references of the queue (next `send`, `emplace`, `update` or `clear`).
    class Range {
    public:
        /// A forward iterator over `const T`.
        class iterator {
        public:
            using iterator_concept = std::forward_iterator_tag;   ///< a forward iterator
            using iterator_category = std::forward_iterator_tag;  ///< a forward iterator
            using value_type = T;                                 ///< the event type
            using difference_type = std::ptrdiff_t;               ///< a distance in events
            using pointer = const T*;                             ///< events are read-only
            using reference = const T&;                           ///< events are read-only

            /// A singular iterator.
            iterator() = default;
            /// The current event.
            const T& operator*() const noexcept { return *p_; }
            /// The current event's members.
            const T* operator->() const noexcept { return p_; }
            /// Moves to the next event (from the older buffer into the newer one).
            iterator& operator++() noexcept {
                ++p_;
                // Pointers of the two buffers are never compared: positions are counted.
                if (++i_ == first_n_) p_ = second_;
                return *this;
            }
            /// Moves to the next event; returns the previous position.
            iterator operator++(int) noexcept {
                iterator old = *this;
                ++*this;
                return old;
            }
            /// Whether both are at the same position (of the same range).
            friend bool operator==(const iterator& a, const iterator& b) noexcept {
                return a.i_ == b.i_;
            }

        private:
            friend class Range;
            iterator(const T* p, std::size_t first_n, const T* second, std::size_t i) noexcept
                : p_(p), second_(second), first_n_(first_n), i_(i) {}

            const T* p_ = nullptr;
            const T* second_ = nullptr;
            std::size_t first_n_ = 0;
            std::size_t i_ = 0;
        };
        using const_iterator = iterator;  ///< the same: events are read-only

        /// An empty range.
        Range() = default;

        /// The oldest event of the range.
        iterator begin() const noexcept {
            return iterator(first_n_ != 0 ? first_ : second_, first_n_, second_, 0);
        }
        /// Past the newest event of the range.
        iterator end() const noexcept {
            return iterator(nullptr, first_n_, second_, first_n_ + second_n_);
        }
        /// Number of events in the range.
        [[nodiscard]] std::size_t size() const noexcept { return first_n_ + second_n_; }
        /// Whether the range holds no event.
        [[nodiscard]] bool empty() const noexcept { return size() == 0; }
        /// How many events the reader missed before this range: events sent after its previous
        /// read that were dropped (by `update` or `clear`) before this one. 0 for a reader that
        /// keeps up.
        [[nodiscard]] std::uint64_t missed() const noexcept { return missed_; }

    private:
        friend class Events;
        Range(const T* first, std::size_t first_n, const T* second, std::size_t second_n,
              std::uint64_t missed) noexcept
            : first_(first),
              second_(second),
              first_n_(first_n),
              second_n_(second_n),
              missed_(missed) {}

        const T* first_ = nullptr;
        const T* second_ = nullptr;
        std::size_t first_n_ = 0;
        std::size_t second_n_ = 0;
        std::uint64_t missed_ = 0;
    };

    /// An empty queue allocating from `resource` (which must outlive it). Allocates nothing.
    explicit Events(std::pmr::memory_resource* resource = std::pmr::get_default_resource())
        : older_(resource), newer_(resource) {}
    /// Moves the events, ids and memory resource; `other` is left empty. Cursors of `other`
    /// read from the new queue as they did before.
    Events(Events&& other) noexcept = default;
    /// Move assignment: this queue keeps its memory resource (polymorphic allocators don't
    /// propagate), so events are moved one by one when the two resources differ.
    Events& operator=(Events&& other) = default;
    Events(const Events&) = delete;
    Events& operator=(const Events&) = delete;
    ~Events() = default;

    /// Appends `event` (copied / moved) after every event held. Amortised O(1); allocates only
    /// when the newer buffer is full. Invalidates references and ranges from `read`. Strong
    /// guarantee.
    void send(const T& event) { newer_.push_back(event); }
    /// Appends `event`, moved (like `send(const T&)`).
    void send(T&& event) { newer_.push_back(std::move(event)); }

    /// Constructs an event from `args` in place after every event held and returns it (valid
    /// until the next `send`, `emplace`, `update` or `clear`). Amortised O(1). Strong guarantee.
    template <class... Args>
    T& emplace(Args&&... args) {
        if constexpr (std::is_constructible_v<T, Args&&...>) {
            return newer_.emplace_back(std::forward<Args>(args)...);
        } else {  // an aggregate: brace it (compilers without parenthesised aggregate init)
            return newer_.emplace_back(T{std::forward<Args>(args)...});
        }
    }

    /// Drops the older buffer (destroying its events) and makes the newer one the older; the
    /// new newer buffer is empty and keeps its capacity. O(events dropped); allocates nothing.
    /// Invalidates references and ranges from `read`.
    void update() noexcept {
        older_.clear();
        older_.swap(newer_);
        older_first_ = newer_first_;
        newer_first_ = older_first_ + older_.size();
    }

    /// A cursor at the oldest event still held: `read` with it returns every event held.
    [[nodiscard]] EventCursor cursor() const noexcept { return EventCursor(older_first_); }

    /// A cursor after the newest event: `read` with it returns only events sent from now on.
    [[nodiscard]] EventCursor cursor_at_end() const noexcept { return EventCursor(next_id()); }

    /// The events `cursor` has not read yet, oldest first, and moves `cursor` past the newest
    /// event held, so no event is returned twice. Events dropped before the cursor reached them
    /// are skipped and counted in the range's `missed()`. A cursor ahead of the queue (one from
    /// another queue) reads nothing and is set to the end of this queue. O(1).
    [[nodiscard]] Range read(EventCursor& cursor) const noexcept {
        const std::uint64_t start = cursor.next_ > older_first_ ? cursor.next_ : older_first_;
        const std::uint64_t missed = start - cursor.next_;
        cursor.next_ = next_id();
        if (start >= cursor.next_) return Range({}, 0, {}, 0, missed);
        if (start < newer_first_) {
            const auto skip = static_cast<std::size_t>(start - older_first_);
            return Range(older_.data() + skip, older_.size() - skip, newer_.data(), newer_.size(),
                         missed);
        }
        const auto skip = static_cast<std::size_t>(start - newer_first_);
        return Range(nullptr, 0, newer_.data() + skip, newer_.size() - skip, missed);
    }

    /// How many events `cursor` has missed so far: events it never read that are no longer
    /// held. Does not move the cursor (the next `read` reports the same number). O(1).
    [[nodiscard]] std::uint64_t missed(EventCursor cursor) const noexcept {
        return cursor.next_ < older_first_ ? older_first_ - cursor.next_ : 0;
    }

    /// How many events `cursor` would read now. O(1).
    [[nodiscard]] std::size_t unread(EventCursor cursor) const noexcept {
        const std::uint64_t start = cursor.next_ > older_first_ ? cursor.next_ : older_first_;
        return start < next_id() ? static_cast<std::size_t>(next_id() - start) : 0;
    }

    /// Destroys every event held; ids keep counting, so cursors stay usable (readers that had
    /// not read the cleared events count them as missed). Keeps the capacity. O(events).
    /// Invalidates references and ranges from `read`.
    void clear() noexcept {
        const std::uint64_t next = next_id();
        older_.clear();
        newer_.clear();
        older_first_ = newer_first_ = next;
    }

    /// Number of events held (both buffers).
    [[nodiscard]] std::size_t size() const noexcept { return older_.size() + newer_.size(); }
    /// Whether no event is held.
    [[nodiscard]] bool empty() const noexcept { return older_.empty() && newer_.empty(); }
    /// The id the next event sent will get (= the number of events ever sent, cleared included).
    [[nodiscard]] std::uint64_t next_id() const noexcept { return newer_first_ + newer_.size(); }
    /// The memory resource both buffers allocate from.
    [[nodiscard]] std::pmr::memory_resource* memory_resource() const noexcept {
        return newer_.get_allocator().resource();
    }

private:
    std::pmr::vector<T> older_;  ///< sent before the last update; ids from older_first_
    std::pmr::vector<T> newer_;  ///< sent since the last update; ids from newer_first_
    std::uint64_t older_first_ = 0;
    std::uint64_t newer_first_ = 0;
};

namespace detail {
/// `World::update_events` reaches a world's queues through this (see resource.hpp).
template <class T>
struct resource_update<Events<T>> {
    static void call(void* queue) noexcept { static_cast<Events<T>*>(queue)->update(); }
    static constexpr ResourceMap::UpdateFn fn = &call;
};
}  // namespace detail

template <class T>
Events<T>& World::events() {
    static_assert(std::is_same_v<T, std::remove_cvref_t<T>>,
                  "tessera: World::events<T>: T must be a plain type (no const, volatile or "
                  "reference): use events<std::remove_cvref_t<T>>()");
    if (Events<T>* queue = try_resource<Events<T>>()) return *queue;
    detail::check_not_parallel(storage(), "World::events");  // making the queue
    return detail::emplace_resource<Events<T>>(resources(), memory_resource());
}

template <class T>
void World::send_event(T&& event) {
    using U = std::remove_cvref_t<T>;
    static_assert(std::is_move_constructible_v<U>,
                  "tessera: World::send_event: the event type is not move constructible; "
                  "events are stored in a std::vector, so give it a move (or copy) constructor");
    static_assert(!std::is_move_constructible_v<U> || std::is_constructible_v<U, T&&>,
                  "tessera: World::send_event: the event type is not copy constructible; pass "
                  "the event as an rvalue (std::move(event))");
    detail::check_not_parallel(storage(), "World::send_event");  // the queue is shared
    events<U>().send(std::forward<T>(event));
}

}  // namespace tessera

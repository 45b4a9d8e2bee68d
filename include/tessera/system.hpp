/// @file system.hpp
/// System parameters: what a system function asks for (`View`, `Res`, `ResMut`, `Commands`,
/// `EventWriter`, `EventReader`, `World&`, `float dt`) and the access each one declares. A
/// `Schedule` (schedule.hpp) deduces a system's access from its parameter types.
///
/// **Access.** `View` terms `T&`/`T*`/`Mut<T>` write `T`, `const T&`/`const T*` read it, `Added<T>`
/// and `Changed<T>` read it (its ticks); `With`/`Without`/`Any` read nothing (structural changes
/// wait for the sync point). `Res<T>` reads resource `T`, `ResMut<T>` writes it, `EventReader<T>`
/// reads the resource `Events<T>`; `Commands` and `EventWriter<T>` record into the system's own
/// buffers and declare nothing; `World&` is exclusive.
#pragma once

#include <tessera/commands.hpp>
#include <tessera/events.hpp>
#include <tessera/query.hpp>
#include <tessera/resource.hpp>
#include <tessera/world.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

namespace tessera {

/// What a system may return instead of `void`: success (the default), or a failure with a
/// message. A failed status is reported exactly like an exception thrown
/// by the system: `Schedule::run` (or `run_system`) throws `Error(system_failed)` naming the
/// system, with `Error(code, message)` nested; the system's commands and events are dropped and
/// the systems that depend on it are skipped that frame. A system returning anything other than
/// `void` or `Status` does not compile.
class [[nodiscard]] Status {
public:
    /// Success.
    Status() noexcept = default;
    /// Success.
    [[nodiscard]] static Status ok() noexcept { return {}; }
    /// A failure described by `message`; the nested error's code is `code` (default
    /// `system_failed`). May throw bad_alloc (copying the message).
    [[nodiscard]] static Status error(std::string message, errc code = errc::system_failed) {
        Status s;
        s.failed_ = true;
        s.code_ = code;
        s.message_ = std::move(message);
        return s;
    }
    /// Whether it is a success.
    [[nodiscard]] bool is_ok() const noexcept { return !failed_; }
    /// Whether it is a success.
    explicit operator bool() const noexcept { return !failed_; }
    /// The failure's code (`system_failed` unless given; meaningless for a success).
    [[nodiscard]] errc code() const noexcept { return code_; }
    /// The failure's message (empty for a success).
    [[nodiscard]] const std::string& message() const noexcept { return message_; }

private:
    std::string message_;
    errc code_ = errc::system_failed;
    bool failed_ = false;
};

/// View filters: entities that have every one of `Ts`.
template <class... Ts>
struct With {};
/// View filters: entities that have none of `Ts`.
template <class... Ts>
struct Without {};
/// View filters: entities that have at least one of `Ts`.
template <class... Ts>
struct Any {};
/// View filters: rows whose `T` was added since this system last ran (every row the first time).
template <class T>
struct Added {};
/// View filters: rows whose `T` was written since this system last ran (every row the first time).
template <class T>
struct Changed {};
/// View filters: visit the rows in depth order, parents before children (`Query::cascade`).
struct Cascade {};

namespace detail {

/// A resource a system uses: its type, its name for messages, and a presence test.
struct ResourceAccess {
    std::type_index type;
    std::string_view name;
    bool (*present)(const World&) noexcept;
    bool write;
};

/// What a system touches. Two systems conflict when one writes what the other reads or
/// writes, or either is exclusive.
struct Access {
    std::vector<ComponentId> reads;
    std::vector<ComponentId> writes;
    std::vector<ResourceAccess> resources;
    bool exclusive = false;
};

/// One run of a system: the world, its tick and the tick of its previous run.
struct SystemRun {
    World* world;
    CommandBuffer* commands;  ///< the system's own buffer
    float dt;
    std::uint64_t tick;   ///< this run's writes are stamped with it
    std::uint64_t since;  ///< the tick of the previous run (0 before the first)
    bool exclusive;       ///< it runs alone (World&)
};

/// The parameter protocol. Each parameter type `P` has a `param<P>` with:
/// `State` (kept per system), `access(Access&)`, `prepare(State&, World&)` (main thread, at
/// the start of each phase the system is in), `get(State&, const SystemRun&)`, `done(State&)`
/// (after the call, even when it threw), `sync(State&, World&)` (at the sync point) and
/// `drop(State&)` (the system failed: discard what it recorded); `prepare_always` (false: a
/// `prepare` for the world the system was last prepared for does nothing, so the schedule may
/// skip it) and `syncs` (false: `sync` does nothing).
template <class P>
struct param {
    static_assert(sizeof(P) == 0,
                  "tessera: a system parameter is View<...>, Res<T>, ResMut<T>, Commands, "
                  "EventWriter<T>, EventReader<T>, World& or float (dt)");
};

/// Defaults for parameters without state or sync work.
struct stateless_param {
    static constexpr bool prepare_always = false;
    static constexpr bool syncs = false;
    struct State {};
    static void prepare(State&, World&) {}
    static void done(State&) noexcept {}
    static void sync(State&, World&) {}
    static void drop(State&) noexcept {}
};

template <class T>
bool has_resource_fn(const World& w) noexcept {
    return w.has_resource<T>();
}

template <class T>
void add_resource(Access& a, bool write) {
    a.resources.push_back(
        {std::type_index(typeid(T)), raw_type_name<T>(), &has_resource_fn<T>, write});
}

// View argument classification.
template <class A>
struct view_filter : std::false_type {};
template <class... Ts>
struct view_filter<With<Ts...>> : std::true_type {};
template <class... Ts>
struct view_filter<Without<Ts...>> : std::true_type {};
template <class... Ts>
struct view_filter<Any<Ts...>> : std::true_type {};
template <class T>
struct view_filter<Added<T>> : std::true_type {};
template <class T>
struct view_filter<Changed<T>> : std::true_type {};
template <>
struct view_filter<Cascade> : std::true_type {};

template <class L, class A>
struct push_back;
template <class... Ts, class A>
struct push_back<type_list<Ts...>, A> {
    using type = type_list<Ts..., A>;
};
/// Splits `View` arguments into terms and filters (order kept in each).
template <class Terms, class Filters, class... A>
struct split_view {
    using terms = Terms;
    using filters = Filters;
};
template <class Terms, class Filters, class A, class... Rest>
struct split_view<Terms, Filters, A, Rest...>
    : std::conditional_t<view_filter<A>::value,
                         split_view<Terms, typename push_back<Filters, A>::type, Rest...>,
                         split_view<typename push_back<Terms, A>::type, Filters, Rest...>> {};

template <class L>
struct query_of;
template <class... Ts>
struct query_of<type_list<Ts...>> {
    using type = Query<Ts...>;
};

// Filters applied to a query, and their access.
template <class F>
struct filter_traits;
template <class... Ts>
struct filter_traits<With<Ts...>> {
    template <class Q>
    static void apply(Q& q) {
        q.template with<Ts...>();
    }
    static void access(Access&) {}
};
template <class... Ts>
struct filter_traits<Without<Ts...>> {
    template <class Q>
    static void apply(Q& q) {
        q.template without<Ts...>();
    }
    static void access(Access&) {}
};
template <class... Ts>
struct filter_traits<Any<Ts...>> {
    template <class Q>
    static void apply(Q& q) {
        q.template any<Ts...>();
    }
    static void access(Access&) {}
};
template <class T>
struct filter_traits<Added<T>> {
    template <class Q>
    static void apply(Q& q) {
        q.template added<T>();
    }
    static void access(Access& a) { a.reads.push_back(component_id<T>()); }
};
template <class T>
struct filter_traits<Changed<T>> {
    template <class Q>
    static void apply(Q& q) {
        q.template changed<T>();
    }
    static void access(Access& a) { a.reads.push_back(component_id<T>()); }
};

template <>
struct filter_traits<Cascade> {
    template <class Q>
    static void apply(Q& q) {
        q.cascade();
    }
    static void access(Access&) {}
};

template <class Term>
void term_access(Access& a) {
    using Tr = term_traits<Term>;
    if constexpr (!Tr::entity) {
        (Tr::writes ? a.writes : a.reads).push_back(component_id<typename Tr::component>());
    }
}

template <class Terms, class Filters>
struct view_access;
template <class... Ts, class... Fs>
struct view_access<type_list<Ts...>, type_list<Fs...>> {
    static void access(Access& a) {
        (term_access<Ts>(a), ...);
        (filter_traits<Fs>::access(a), ...);
    }
    template <class Q>
    static void apply(Q& q) {
        (filter_traits<Fs>::apply(q), ...);
    }
};

}  // namespace detail

/// A system's view of the entities matching `Args`: query terms (`T&`, `const T&`, `T*`,
/// `const T*`, `Mut<T>`, `Entity`, and traverse.hpp's `Up<...>`) followed by filters (`With`,
/// `Without`, `Any`, `Added`, `Changed`, `Cascade`). `Added`/`Changed` mean "since this system last
/// ran", exactly once. Writes through `T&` and `T*` terms (every row visited) and `Mut<T>` (the
/// rows written) are stamped with the system's tick. Valid only during the system call.
template <class... Args>
class View {
    using split = detail::split_view<type_list<>, type_list<>, Args...>;

public:
    /// The `Query` over the terms that the system keeps between runs.
    using query_type = typename detail::query_of<typename split::terms>::type;

    /// A view of `q` (the schedule makes it for each call).
    explicit View(query_type& q) noexcept : query_(&q) {}

    /// Calls `fn(terms...)` or `fn(entity, terms...)` for every matching row (as `Query::each`).
    template <class F>
    void each(F&& fn) {
        query_->each(std::forward<F>(fn));
    }
    /// `each` with the rows split across workers (as `Query::par_each`).
    template <class F>
    void par_each(F&& fn) {
        query_->par_each(std::forward<F>(fn));
    }
    /// One call per matching archetype with the terms' spans (as `Query::each_chunk`).
    template <class F>
    void each_chunk(F&& fn) {
        query_->each_chunk(std::forward<F>(fn));
    }
    /// Matching entities (`Added`/`Changed` and enable flags not applied).
    [[nodiscard]] std::size_t count() { return query_->count(); }
    /// The system's query, for the library's own modules (gpu.hpp's kernel systems).
    [[nodiscard]] query_type& query() const noexcept { return *query_; }

private:
    query_type* query_;
};

/// Read access to resource `T` (throws `missing_resource` at the start of the phase when absent).
template <class T>
class Res {
public:
    /// Access to `value` (the schedule makes it for each call).
    explicit Res(const T& value) noexcept : value_(&value) {}
    /// The resource.
    const T& operator*() const noexcept { return *value_; }
    /// The resource's members.
    const T* operator->() const noexcept { return value_; }
    /// The resource.
    [[nodiscard]] const T& get() const noexcept { return *value_; }

private:
    const T* value_;
};

/// Write access to resource `T` (throws `missing_resource` like `Res` when absent).
template <class T>
class ResMut {
public:
    /// Access to `value` (the schedule makes it for each call).
    explicit ResMut(T& value) noexcept : value_(&value) {}
    /// The resource.
    T& operator*() const noexcept { return *value_; }
    /// The resource's members.
    T* operator->() const noexcept { return value_; }
    /// The resource.
    [[nodiscard]] T& get() const noexcept { return *value_; }

private:
    T* value_;
};

/// Records structural changes into the system's own `CommandBuffer`, applied at the phase's
/// sync point (in registration order of the systems, with `on_dead::skip`). Placeholders from
/// `spawn` work in the system's later commands. Each member records like the
/// `CommandBuffer` member of the same name.
class Commands {
public:
    /// Records into `buffer` (the schedule makes it for each call).
    explicit Commands(CommandBuffer& buffer) noexcept : buffer_(&buffer) {}
    /// Records a spawn and returns its placeholder (`CommandBuffer::spawn`).
    template <class... Ts>
    Entity spawn(Ts&&... components) {
        return buffer_->spawn(std::forward<Ts>(components)...);
    }
    /// Records adding (or replacing) `components` on `e` (`CommandBuffer::add`).
    template <class... Ts>
    void add(Entity e, Ts&&... components) {
        buffer_->add(e, std::forward<Ts>(components)...);
    }
    /// Records adding a value-initialised `T` to `e`.
    template <class T>
    void add(Entity e) {
        buffer_->add<T>(e);
    }
    /// Records removing `Ts` from `e`.
    template <class... Ts>
    void remove(Entity e) {
        buffer_->remove<Ts...>(e);
    }
    /// Records despawning `e`.
    void despawn(Entity e) { buffer_->despawn(e); }
    /// @name Relations
    /// Include `<tessera/relation.hpp>` to call these: the `CommandBuffer` members they call
    /// have their bodies there.
    ///@{

    /// Records `world.relate(e, data, target)` (relation.hpp).
    template <class R>
    void relate(Entity e, R&& data, Entity target) {
        buffer_->relate(e, std::forward<R>(data), target);
    }
    /// Records `world.unrelate<R>(e, target)`.
    template <class R>
    void unrelate(Entity e, Entity target) {
        buffer_->unrelate<R>(e, target);
    }
    /// Records `world.unrelate<R>(e)` (every target).
    template <class R>
    void unrelate(Entity e) {
        buffer_->unrelate<R>(e);
    }
    ///@}
    /// The underlying buffer.
    [[nodiscard]] CommandBuffer& buffer() const noexcept { return *buffer_; }

private:
    CommandBuffer* buffer_;
};

/// Sends events of type `T`. They are kept in the system's own buffer and published to
/// `Events<T>` at the phase's sync point, so readers see them from the next phase on.
template <class T>
class EventWriter {
public:
    /// Appends to `pending` (the system's buffer; the schedule makes it for each call).
    explicit EventWriter(std::vector<T>& pending) noexcept : pending_(&pending) {}
    /// Sends a copy of `event`. Amortised O(1).
    void send(const T& event) { pending_->push_back(event); }
    /// Sends `event`, moved. Amortised O(1).
    void send(T&& event) { pending_->push_back(std::move(event)); }

private:
    std::vector<T>* pending_;
};

/// Reads the events of type `T` this system has not read yet (its cursor is kept between runs).
template <class T>
class EventReader {
public:
    /// Reads `events` from `cursor` (the system's; the schedule makes it for each call).
    EventReader(const Events<T>& events, EventCursor& cursor) noexcept
        : events_(&events), cursor_(&cursor) {}
    /// The unread events, oldest first; advances the cursor.
    typename Events<T>::Range read() const noexcept { return events_->read(*cursor_); }
    /// How many unread events there are.
    [[nodiscard]] std::size_t size() const noexcept { return events_->unread(*cursor_); }
    /// Whether there is no unread event.
    [[nodiscard]] bool empty() const noexcept { return size() == 0; }

private:
    const Events<T>* events_;
    EventCursor* cursor_;
};

namespace detail {

template <class... Args>
struct param<View<Args...>> {
    using V = View<Args...>;
    using Q = typename V::query_type;
    using split = split_view<type_list<>, type_list<>, Args...>;
    using acc = view_access<typename split::terms, typename split::filters>;
    static constexpr bool prepare_always = false;
    static constexpr bool syncs = false;
    struct State {
        World* world = nullptr;
        std::optional<Q> query;
    };
    static void access(Access& a) { acc::access(a); }
    /// Builds the query once per world (filters turn change tracking on here, on the main
    /// thread, not in a worker).
    static void prepare(State& s, World& w) {
        if (s.world == &w && s.query) return;
        s.query.reset();
        s.world = nullptr;
        Q& q = s.query.emplace(w.storage());
        acc::apply(q);
        s.world = &w;
    }
    static V get(State& s, const SystemRun& run) noexcept {
        s.query->state().enter_system(run.since, run.tick, run.exclusive);
        return V(*s.query);
    }
    static void done(State& s) noexcept { s.query->state().leave_system(); }
    static void sync(State&, World&) {}
    static void drop(State&) noexcept {}
};

template <class T>
struct param<Res<T>> : stateless_param {
    static void access(Access& a) { add_resource<T>(a, false); }
    static Res<T> get(State&, const SystemRun& run) { return Res<T>(run.world->resource<T>()); }
};

template <class T>
struct param<ResMut<T>> : stateless_param {
    static void access(Access& a) { add_resource<T>(a, true); }
    static ResMut<T> get(State&, const SystemRun& run) {
        return ResMut<T>(run.world->resource<T>());
    }
};

template <>
struct param<Commands> : stateless_param {
    static void access(Access&) {}
    static Commands get(State&, const SystemRun& run) noexcept { return Commands(*run.commands); }
};

template <class T>
struct param<EventWriter<T>> {
    static constexpr bool prepare_always = true;  // the queue may have been removed
    static constexpr bool syncs = true;
    struct State {
        std::vector<T> pending;
    };
    static void access(Access&) {}
    static void prepare(State&, World& w) { w.events<T>(); }  // made here, not on a worker
    static EventWriter<T> get(State& s, const SystemRun&) noexcept {
        return EventWriter<T>(s.pending);
    }
    static void done(State&) noexcept {}
    static void sync(State& s, World& w) {
        Events<T>& queue = w.events<T>();
        for (T& e : s.pending) queue.send(std::move(e));
        s.pending.clear();
    }
    static void drop(State& s) noexcept { s.pending.clear(); }
};

template <class T>
struct param<EventReader<T>> {
    static constexpr bool prepare_always = true;  // the queue may have been replaced
    static constexpr bool syncs = false;
    struct State {
        World* world = nullptr;
        Events<T>* events = nullptr;
        EventCursor cursor;
    };
    static void access(Access& a) { add_resource<Events<T>>(a, false); }
    static void prepare(State& s, World& w) {
        Events<T>* events = &w.events<T>();
        if (s.world == &w && s.events == events) return;
        s.world = &w;
        s.events = events;
        s.cursor = events->cursor();  // a new reader starts at the oldest event still held
    }
    static EventReader<T> get(State& s, const SystemRun&) noexcept {
        return EventReader<T>(*s.events, s.cursor);
    }
    static void done(State&) noexcept {}
    static void sync(State&, World&) {}
    static void drop(State&) noexcept {}
};

template <>
struct param<World&> : stateless_param {
    static void access(Access& a) { a.exclusive = true; }
    static World& get(State&, const SystemRun& run) noexcept { return *run.world; }
};

template <>
struct param<float> : stateless_param {
    static void access(Access&) {}
    static float get(State&, const SystemRun& run) noexcept { return run.dt; }
};

/// The parameter a declared argument type stands for: `World&` stays a reference, everything
/// else is taken by value or const reference.
template <class A>
using param_type_t = std::conditional_t<std::is_same_v<A, World&>, World&, std::remove_cvref_t<A>>;

/// Reports a failed `Status` as the system's exception: `Error(status.code(), message)`.
[[noreturn]] void throw_status(const Status& status);

/// A system's return type must be `void` or `Status`.
template <class R>
inline constexpr bool valid_system_result = std::is_void_v<R> || std::is_same_v<R, Status>;

/// Calls `fn(args...)`; a failed `Status` it returns becomes the system's exception.
template <class F, class... P>
void call_system(F& fn, P&&... args) {
    using R = decltype(fn(std::forward<P>(args)...));
    static_assert(valid_system_result<R>,
                  "tessera: a system returns void or ts::Status (Status::ok() or "
                  "Status::error(message)); change the system's return type");
    if constexpr (std::is_void_v<R>) {
        fn(std::forward<P>(args)...);
    } else {
        const Status status = fn(std::forward<P>(args)...);
        if (!status.is_ok()) [[unlikely]]
            throw_status(status);
    }
}

/// The type-erased system a schedule holds. One virtual call per system run, none per entity.
class SystemBase {
public:
    virtual ~SystemBase() = default;
    /// Binds parameters to `w` (queries, event queues). Main thread.
    virtual void prepare(World& w) = 0;
    /// Runs the system once.
    virtual void run(const SystemRun& run) = 0;
    /// Publishes what it recorded besides commands (events).
    virtual void sync(World& w) = 0;
    /// Discards what it recorded besides commands (it failed).
    virtual void drop() noexcept = 0;
    /// Class systems' on_create / on_destroy.
    virtual void create(World&) {}
    virtual void destroy(World&) {}

    Access access;
    /// Some parameter must be prepared at every phase, even for the same world (event queues).
    bool prepare_always = false;
    /// Some parameter has sync point work besides the commands (event writers).
    bool syncs = false;
};

/// A system made of a callable and its deduced parameters.
template <class F, class... A>
class FunctionSystem : public SystemBase {
public:
    explicit FunctionSystem(F fn) : fn_(std::move(fn)) {
        (param<param_type_t<A>>::access(access), ...);
        prepare_always = (param<param_type_t<A>>::prepare_always || ...);
        syncs = (param<param_type_t<A>>::syncs || ...);
    }
    void prepare(World& w) override {
        std::apply([&](auto&... s) { (param<param_type_t<A>>::prepare(s, w), ...); }, states_);
    }
    void run(const SystemRun& r) override { call(r, std::index_sequence_for<A...>{}); }
    void sync(World& w) override {
        std::apply([&](auto&... s) { (param<param_type_t<A>>::sync(s, w), ...); }, states_);
    }
    void drop() noexcept override {
        std::apply([](auto&... s) { (param<param_type_t<A>>::drop(s), ...); }, states_);
    }

protected:
    F fn_;

private:
    template <std::size_t... I>
    void call(const SystemRun& r, std::index_sequence<I...>) {
        struct Done {  // releases the parameters (e.g. the views' system mode), even on throw
            std::tuple<typename param<param_type_t<A>>::State...>& states;
            ~Done() {
                std::apply([](auto&... s) { (param<param_type_t<A>>::done(s), ...); }, states);
            }
        } done{states_};
        call_system(fn_, param<param_type_t<A>>::get(std::get<I>(states_), r)...);
    }
    std::tuple<typename param<param_type_t<A>>::State...> states_;
};

template <class F, class Args>
struct function_system;
template <class F, class... A>
struct function_system<F, std::tuple<A...>> {
    using type = FunctionSystem<F, A...>;
};

}  // namespace detail

}  // namespace tessera

// Schedule: building the phases' graphs (access, constraints, conflicts, layers).
#include "schedule_impl.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace tessera {

using detail::phase_count;
using detail::PhaseGraph;
using detail::SystemEntry;

namespace {

bool contains_id(const std::vector<ComponentId>& v, ComponentId id) {
    return std::find(v.begin(), v.end(), id) != v.end();
}

/// The first datum through which `a` and `b` conflict ("" when they don't); "everything" when
/// one is exclusive.
std::string conflict(const detail::Access& a, const detail::Access& b) {
    if (a.exclusive || b.exclusive) return "the whole world (World&)";
    for (const ComponentId id : a.writes) {
        if (contains_id(b.writes, id) || contains_id(b.reads, id))
            return std::string(component_info(id).name);
    }
    for (const ComponentId id : b.writes) {
        if (contains_id(a.reads, id)) return std::string(component_info(id).name);
    }
    for (const detail::ResourceAccess& ra : a.resources) {
        for (const detail::ResourceAccess& rb : b.resources) {
            if (ra.type == rb.type && (ra.write || rb.write))
                return "resource " + std::string(ra.name);
        }
    }
    return {};
}

}  // namespace

void Schedule::Impl::build() {
    if (!dirty) return;
    for (auto& s : systems) {
        s->access = s->system->access;
        s->takes_world = s->access.exclusive;
        s->shared_world = s->takes_world && s->declared;
        if (s->declared) {
            // Trusted: the declaration replaces World&'s claim. Its writes through the world
            // carry its own tick on its own thread (detail::thread_system), so it shares no
            // write with another declared World& system: the two overlap unless their declared
            // access conflicts.
            s->access.exclusive = false;
            s->access.reads.insert(s->access.reads.end(), s->declared_reads.begin(),
                                   s->declared_reads.end());
            s->access.writes.insert(s->access.writes.end(), s->declared_writes.begin(),
                                    s->declared_writes.end());
        }
        for (const std::string& n : s->before) get(n, "Schedule::build");
        for (const std::string& n : s->after) get(n, "Schedule::build");
    }
    // Constraints across phases must agree with the order of the phases.
    for (auto& s : systems) {
        auto check = [&](const SystemEntry& first, const SystemEntry& second) {
            if (first.phase == Phase::manual || second.phase == Phase::manual) return;
            if (first.phase > second.phase) {
                throw Error(errc::schedule_cycle,
                            "Schedule::build: " + detail::quote(first.name) + " (phase " +
                                phase_name(first.phase) + ") must run before " +
                                detail::quote(second.name) + " (phase " + phase_name(second.phase) +
                                "), which runs in an earlier phase");
            }
        };
        for (const std::string& n : s->before) check(*s, *find(n));
        for (const std::string& n : s->after) check(*find(n), *s);
    }
    for (std::size_t p = 0; p < phase_count; ++p) build_phase(p);
    dirty = false;
}

void Schedule::Impl::build_phase(std::size_t p) {
    const auto phase = static_cast<Phase>(p);
    std::vector<SystemEntry*> members;
    for (auto& s : systems) {
        if (s->phase == phase) members.push_back(s.get());
    }
    const std::size_t n = members.size();
    auto index_of = [&](const SystemEntry* s) {
        return static_cast<std::size_t>(std::find(members.begin(), members.end(), s) -
                                        members.begin());
    };
    // Explicit edges (by member index), then the deterministic order: topological, ties by
    // (order, registration).
    std::vector<std::vector<std::size_t>> edges(n);
    std::vector<std::size_t> indegree(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
        for (const std::string& name : members[i]->before) {
            const std::size_t j = index_of(find(name));
            if (j < n) edges[i].push_back(j);
        }
        for (const std::string& name : members[i]->after) {
            const std::size_t j = index_of(find(name));
            if (j < n) edges[j].push_back(i);
        }
    }
    for (const auto& e : edges) {
        for (const std::size_t j : e) ++indegree[j];
    }
    std::vector<std::size_t> linear;
    std::vector<std::uint8_t> placed(n, 0);
    for (std::size_t step = 0; step < n; ++step) {
        std::size_t best = n;
        for (std::size_t i = 0; i < n; ++i) {
            if (placed[i] || indegree[i] != 0) continue;
            if (best == n || members[i]->order < members[best]->order) best = i;
        }
        if (best == n) {
            std::string cycle;
            for (std::size_t i = 0; i < n; ++i) {
                if (!placed[i])
                    cycle += (cycle.empty() ? "" : ", ") + detail::quote(members[i]->name);
            }
            throw Error(errc::schedule_cycle,
                        std::string("Schedule::build: the before/after constraints of phase ") +
                            phase_name(phase) + " form a cycle among " + cycle);
        }
        placed[best] = 1;
        linear.push_back(best);
        for (const std::size_t j : edges[best]) --indegree[j];
    }
    // Reachability through explicit constraints (transitive).
    std::vector<std::vector<std::uint8_t>> reach(n, std::vector<std::uint8_t>(n, 0));
    for (auto it = linear.rbegin(); it != linear.rend(); ++it) {
        for (const std::size_t j : edges[*it]) {
            reach[*it][j] = 1;
            for (std::size_t k = 0; k < n; ++k) reach[*it][k] |= reach[j][k];
        }
    }
    PhaseGraph& g = phases[p];
    g = PhaseGraph{};
    std::vector<std::size_t> position(n);
    for (std::size_t k = 0; k < n; ++k) {
        position[linear[k]] = k;
        g.order.push_back(members[linear[k]]);
        members[linear[k]]->position = k;
    }
    g.successors.assign(n, {});
    g.predecessors.assign(n, 0);
    auto add_edge = [&](std::size_t from, std::size_t to) {  // positions
        auto& succ = g.successors[from];
        if (std::find(succ.begin(), succ.end(), to) != succ.end()) return;
        succ.push_back(static_cast<std::uint32_t>(to));
        ++g.predecessors[to];
    };
    for (std::size_t i = 0; i < n; ++i) {
        for (const std::size_t j : edges[i]) add_edge(position[i], position[j]);
    }
    for (std::size_t a = 0; a < n; ++a) {
        for (std::size_t b = a + 1; b < n; ++b) {
            SystemEntry& x = *g.order[a];
            SystemEntry& y = *g.order[b];
            const std::string data = conflict(x.access, y.access);
            if (data.empty()) continue;
            const std::size_t ix = index_of(&x);
            const std::size_t iy = index_of(&y);
            if (reach[ix][iy] || reach[iy][ix]) continue;  // ordered by before/after
            if (strict && x.order == y.order) {
                throw Error(errc::ambiguous_order,
                            "Schedule::build: systems " + detail::quote(x.name) + " and " +
                                detail::quote(y.name) + " both access " + data +
                                " (at least one writes it) in phase " + phase_name(phase) +
                                " and nothing orders them; add before/after or order()");
            }
            add_edge(a, b);
        }
    }
    g.run.ticks.assign(n, 0);
    g.run.skipped.assign(n, 0);
    g.run.errors.assign(n, nullptr);
    g.remaining = std::make_unique<std::atomic<std::uint32_t>[]>(n);
    g.skipped = std::make_unique<std::atomic<std::uint8_t>[]>(n);
    g.pending.assign(n, 0);
    g.finish.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i) {  // members are in registration order
        g.sync_order.push_back(static_cast<std::uint32_t>(position[i]));
        if (members[i]->access.exclusive) g.has_exclusive = true;
    }
    std::vector<std::size_t> layer(n, 0);
    for (std::size_t a = 0; a < n; ++a) {
        for (const std::uint32_t b : g.successors[a]) layer[b] = std::max(layer[b], layer[a] + 1);
        g.layers = std::max(g.layers, layer[a] + 1);
    }
}

}  // namespace tessera

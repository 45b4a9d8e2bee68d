/// @file detail/cascade_loop.hpp
/// The loops of a cascade query (`Query::cascade`, query.hpp): `each` over the runs of the
/// depth order (detail/cascade.hpp), and `par_each` one depth level at a time. A query with Up
/// terms runs the rows of a run group by group (`CascadeUp`, traverse.hpp) where no row is
/// filtered. Internal.
#pragma once

#include <tessera/detail/cascade.hpp>
#include <tessera/detail/parallel.hpp>
#include <tessera/detail/storage.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace tessera::detail {

/// The cascade loops of query `Q` (a friend of it).
template <class Q>
struct CascadeLoop {
    /// `each` of a cascade query: the runs in depth order (tables already stamped by `each`).
    template <bool WithEntity, class F>
    static void each(Q& q, F& fn, std::span<const CascadeRun> runs,
                     std::span<const std::uint32_t> matched, bool filtered, std::uint64_t tick) {
        for (std::size_t r = 0; r < runs.size(); ++r) {
            const CascadeRun& run = runs[r];
            range<WithEntity>(q, fn, run, matched, run.first, run.last, run.group, filtered, tick);
        }
    }

    /// `par_each` of a cascade query: one parallel loop per depth level, each level's rows
    /// split across the workers as a plain par_each splits a query's.
    template <bool WithEntity, class F>
    static void levels(Q& q, F& fn, std::span<const CascadeRun> runs,
                       std::span<const std::uint32_t> matched, bool filtered, std::uint64_t tick) {
        Storage& s = q.state_.storage();
        const CascadeOrder& order = q.cascade_;
        const std::span<const std::size_t> before = order.run_rows();
        for (std::size_t l = 0; l < order.levels(); ++l) {
            const std::size_t r0 = order.level_begin(l);
            const std::size_t r1 = order.level_begin(l + 1);
            const std::size_t base = before[r0];
            const auto body = [&](std::size_t begin, std::size_t end) {
                begin += base;
                end += base;
                for (std::size_t r = order.run_of(r0, r1, begin); begin < end; ++r) {
                    const CascadeRun& run = runs[r];
                    const auto first = static_cast<std::uint32_t>(run.first + (begin - before[r]));
                    const std::size_t want = run.first + (end - before[r]);
                    const auto last = static_cast<std::uint32_t>(want < run.last ? want : run.last);
                    const std::size_t group =
                        first == run.first || !Q::resolving ? run.group : order.group_of(r, first);
                    range<WithEntity>(q, fn, run, matched, first, last, group, filtered, tick);
                    begin = before[r] + (last - run.first);
                }
            };
            parallel_rows(before[r1] - base, body, s.serial());
        }
    }

private:
    // Rows [first, last) of `run`; `group`: the group holding `first` (a grouped order).
    template <bool WithEntity, class F>
    static void range(Q& q, F& fn, const CascadeRun& run, std::span<const std::uint32_t> matched,
                      std::uint32_t first, std::uint32_t last, std::size_t group, bool filtered,
                      std::uint64_t tick) {
        Archetype& a = q.state_.storage().archetype(matched[run.table]);
        const Column* const* cols = q.state_.columns(run.table);
        if constexpr (Q::resolving) {
            // Without row filters, an Up term's answer is the same for a group's rows.
            if (!filtered && !q.flag_gated(a)) {
                CascadeUp<Q>::template run<WithEntity>(q, fn, a, cols, first, last,
                                                       q.cascade_.groups() + group, tick);
                return;
            }
        }
        q.template run_range<WithEntity>(fn, a, cols, first, last, filtered, q.gated(a), tick);
    }
};

}  // namespace tessera::detail

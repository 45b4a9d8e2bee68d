// propagate_transforms, phase 2 (transform_plan.hpp): computing world matrices, in a full pass
// (row order or level order) or an incremental one over the subtrees of the dirty steps.
#include "transform_plan.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tessera::detail {
namespace {

/// Whether two matrices hold the same bits (so NaNs compare equal to themselves and an
/// unchanged NaN is not rewritten every call).
inline bool same_bits(const glm::mat4& a, const glm::mat4& b) noexcept {
#if defined(__SSE2__)
    const auto* x = reinterpret_cast<const __m128i*>(&a);
    const auto* y = reinterpret_cast<const __m128i*>(&b);
    const __m128i d =
        _mm_or_si128(_mm_or_si128(_mm_xor_si128(_mm_loadu_si128(x), _mm_loadu_si128(y)),
                                  _mm_xor_si128(_mm_loadu_si128(x + 1), _mm_loadu_si128(y + 1))),
                     _mm_or_si128(_mm_xor_si128(_mm_loadu_si128(x + 2), _mm_loadu_si128(y + 2)),
                                  _mm_xor_si128(_mm_loadu_si128(x + 3), _mm_loadu_si128(y + 3))));
    return _mm_movemask_epi8(_mm_cmpeq_epi8(d, _mm_setzero_si128())) == 0xFFFF;
#else
    std::uint64_t x[8];
    std::uint64_t y[8];
    std::memcpy(x, &a, sizeof x);
    std::memcpy(y, &b, sizeof y);
    std::uint64_t diff = 0;
    for (int i = 0; i < 8; ++i) diff |= x[i] ^ y[i];
    return diff == 0;
#endif
}

/// A 32-bit fingerprint of a matrix's bits (their xor, folded): matrices with different
/// fingerprints differ; equal fingerprints prove nothing.
inline std::uint32_t fingerprint(const glm::mat4& m) noexcept {
#if defined(__SSE2__)
    const auto* x = reinterpret_cast<const __m128i*>(&m);
    __m128i a = _mm_xor_si128(_mm_xor_si128(_mm_loadu_si128(x), _mm_loadu_si128(x + 1)),
                              _mm_xor_si128(_mm_loadu_si128(x + 2), _mm_loadu_si128(x + 3)));
    a = _mm_xor_si128(a, _mm_shuffle_epi32(a, 0x4E));
    a = _mm_xor_si128(a, _mm_shuffle_epi32(a, 0xB1));
    return static_cast<std::uint32_t>(_mm_cvtsi128_si32(a));
#else
    std::uint32_t v[16];
    std::memcpy(v, &m, sizeof v);
    std::uint32_t h = 0;
    for (const std::uint32_t x : v) h ^= x;
    return h;
#endif
}

/// Bit r set when `t[r]` is after `since`, for the `n` (at most 16) ticks at `t`. `since - t`
/// has its top bit set exactly when t > since (ticks stay far below 2^63).
inline std::uint32_t newer_mask(const std::uint64_t* t, std::uint32_t n,
                                std::uint64_t since) noexcept {
    std::uint32_t mask = 0;
#if defined(__SSE2__)
    if (n == 16) {
        const __m128i s = _mm_set1_epi64x(static_cast<long long>(since));
        for (int k = 0; k < 16; k += 2) {
            const __m128i d =
                _mm_sub_epi64(s, _mm_loadu_si128(reinterpret_cast<const __m128i*>(t + k)));
            mask |= static_cast<std::uint32_t>(_mm_movemask_pd(_mm_castsi128_pd(d))) << k;
        }
        return mask;
    }
#endif
    for (std::uint32_t r = 0; r < n; ++r) mask |= static_cast<std::uint32_t>(t[r] > since) << r;
    return mask;
}

}  // namespace

/// Marks the steps of the entities given a WorldTransform this call (they moved table, so
/// the plan was rebuilt): written and counted whatever they hold.
void Propagation::mark_forced() {
    for (const Entity e : st_.missing) {
        if (!world_.is_alive(e) || !world_.has<WorldTransform>(e)) continue;
        const PlanNode& node = st_.nodes[e.index];
        if (node.seen != ep_ || node.table == none) continue;
        if (forced_ == nullptr) std::fill(st_.forced.begin(), st_.forced.end(), 0);
        forced_ = st_.forced.data();
        set_bit(st_.forced.data(), st_.row_step[st_.tables[node.table].first + node.row]);
    }
}

/// Computes every step: in table and row order when that puts parents first (reading the
/// columns as they lie, like a plain loop over arrays), else in level order.
std::size_t Propagation::compute_all() {
    std::size_t written = 0;
    if (st_.row_ordered && !general_) {
        written = compute_rows();
    } else {
        st_.fingerprinted = false;
        order_levels();
        written = general_ ? compute_levels<true>() : compute_levels<false>();
    }
    if (written != 0 && !hooked_) {
        // A full pass writes most rows: raise every block bound rather than one per write.
        for (const PlanTable& t : st_.tables) {
            for (std::size_t b = 0; t.changed_max != nullptr && b < tick_blocks(t.size); ++b)
                raise_bound(t.changed_max[b], tick_);
        }
    }
    return written;
}

/// The full pass over the columns in table and row order (`row_ordered`, plain steps). A
/// matrix whose fingerprint differs from the stored one is written without reading the
/// old value (when the stored one is valid and nobody else wrote the row since); the others
/// are compared in full.
std::size_t Propagation::compute_rows() {
    const bool valid = std::exchange(st_.fingerprinted, false);
    const std::uint64_t since = st_.since;
    const glm::mat4* const* parent = st_.row_parent.data();
    std::uint32_t* fp = st_.row_fingerprint.data();
    std::size_t written = 0;
    for (const PlanTable& t : st_.tables) {
        if (t.size == 0) continue;  // (an empty table may lack a WorldTransform)
        const bool trusted = valid && column_of(s_.archetype(t.index), world_id_)->stamped <= since;
        for (std::uint32_t row = 0; row < t.size; ++row) {
            glm::mat4& world = *std::assume_aligned<64>(&t.world[row].matrix);
            const glm::mat4& local = *std::assume_aligned<64>(&t.local[row].matrix);
            const glm::mat4* const p = parent[row];
            const glm::mat4 m = p == nullptr ? local : *std::assume_aligned<64>(p) * local;
            const std::uint32_t h = fingerprint(m);
            const bool differs = trusted && fp[row] != h && t.changed[row] <= since;
            fp[row] = h;
            if (!differs && same_bits(world, m)) continue;
            world = m;
            t.changed[row] = tick_;
            ++written;
        }
        parent += t.size;
        fp += t.size;
    }
    st_.fingerprinted = true;
    return written;
}

/// The full pass over the level-ordered copy (`level`).
template <bool General>
std::size_t Propagation::compute_levels() {
    const PlanStep* const steps = st_.level.data();
    const std::uint32_t* const index = st_.level_step.data();
    const auto count = static_cast<std::uint32_t>(st_.level.size());
    std::size_t written = 0;
    for (std::uint32_t k = 0; k < count; ++k) {
        if (k + prefetch_distance < count) prefetch(steps[k + prefetch_distance]);
        written += compute<General>(steps[k], index[k]) ? 1 : 0;
    }
    return written;
}

/// Fetches the matrices step `s` reads and writes. (Its changed tick is only written, and
/// neighbouring steps share the lines of ticks and bounds.)
void Propagation::prefetch(const PlanStep& s) noexcept {
    __builtin_prefetch(s.local);
    __builtin_prefetch(s.world, 1);
}

/// Computes step `s`, number `i` (its parent's world matrix is computed or current); returns
/// whether it wrote a WorldTransform. A TreeStep's write raises its block bound. `General`:
/// the step may be forced, a spare, or observed (`general_`); else it is none of them.
/// Every matrix a step points to is 64-byte aligned (a column row or a SpareMatrix).
template <bool General, class Step>
bool Propagation::compute(const Step& s, std::uint32_t i) {
    const glm::mat4& local = *std::assume_aligned<64>(s.local);
    glm::mat4& world = *std::assume_aligned<64>(s.world);
    const glm::mat4 m = s.parent == nullptr ? local : *std::assume_aligned<64>(s.parent) * local;
    if constexpr (General) {
        if (same_bits(world, m) && (forced_ == nullptr || !test_bit(forced_, i))) return false;
        if (s.changed == nullptr) {
            world = m;  // a spare: its WorldTransform is yet to be added
            return false;
        }
        if (hooked_) {
            world_.set(st_.step_entity[i], WorldTransform{m});  // fires on_set
            return true;
        }
    } else if (same_bits(world, m)) {
        return false;
    }
    world = m;
    *s.changed = tick_;
    if constexpr (std::is_same_v<Step, TreeStep>) raise_bound(*s.bound, tick_);
    return true;
}

/// Marks (in `dirty`) the steps of the rows whose LocalTransform or WorldTransform changed
/// since the previous call. False when the dirty steps are so many that a full pass is
/// cheaper.
bool Propagation::collect_dirty() {
    const std::size_t limit = st_.mode == PropagationMode::incremental
                                  ? std::numeric_limits<std::size_t>::max()
                                  : st_.steps.size() / 8;
    const std::uint64_t since = st_.since;
    std::uint64_t* const bits = st_.dirty.data();
    std::size_t dirty = moved_;
    if (dirty > limit) return false;
    for (const PlanTable& t : st_.tables) {
        const std::uint32_t n = t.size;
        if (n == 0) continue;
        const Archetype& a = s_.archetype(t.index);
        const Column& lcol = *column_of(a, local_id_);
        const Column* wcol = column_of(a, world_id_);
        const std::uint32_t* const row_step = st_.row_step.data() + t.first;
        if (lcol.stamped > since || (wcol != nullptr && wcol->stamped > since)) {
            // A query's T& term stamped the whole table.
            dirty += n;
            if (dirty > limit) return false;
            for (std::uint32_t row = 0; row < n; ++row) set_bit(bits, row_step[row]);
            continue;
        }
        // Rows are read only in the blocks whose bound (Column::changed_max) is new, and
        // the bounds 16 blocks at a time.
        const std::uint64_t* const lt = lcol.changed;
        const std::uint64_t* const wt = wcol != nullptr ? wcol->changed : lt;
        const std::uint64_t* const lb = lcol.changed_max;
        const std::uint64_t* const wb = wcol != nullptr ? wcol->changed_max : lb;
        // Marks the dirty rows of block b (`local`, `world`: which bounds are new).
        auto mark = [&](std::size_t b, bool local, bool world) {
            const auto first = static_cast<std::uint32_t>(b * tick_block);
            const std::uint32_t rows = std::min<std::uint32_t>(n - first, tick_block);
            std::uint32_t m = 0;
            if (local) m = newer_mask(lt + first, rows, since);
            if (world) m |= newer_mask(wt + first, rows, since);
            for (; m != 0; m &= m - 1, ++dirty)
                set_bit(bits, row_step[first + static_cast<std::uint32_t>(std::countr_zero(m))]);
            return dirty <= limit;
        };
        const std::size_t blocks = tick_blocks(n);
        for (std::size_t b = 0; b < blocks; b += 16) {
            const auto group = static_cast<std::uint32_t>(std::min<std::size_t>(16, blocks - b));
            const std::uint32_t lm = newer_mask(lb + b, group, since);
            const std::uint32_t wm = newer_mask(wb + b, group, since);
            for (std::uint32_t m = lm | wm; m != 0; m &= m - 1) {
                const auto j = static_cast<std::uint32_t>(std::countr_zero(m));
                if (!mark(b + j, ((lm >> j) & 1u) != 0, ((wm >> j) & 1u) != 0)) return false;
            }
        }
    }
    return true;
}

/// Computes the subtree of every dirty step not inside an earlier one's, in plan order:
/// lists the first step of each in `work`, then computes their ranges in one loop that
/// fetches ahead across subtrees (most of them are a step or two).
void Propagation::run_incremental() {
    const std::uint64_t* const bits = st_.dirty.data();
    const std::uint32_t* const step_end = st_.step_end.data();
    std::uint32_t* const work = st_.work.data();
    std::uint32_t count = 0;
    std::uint32_t covered = 0;  // steps below this are in a listed subtree
    for (std::size_t w = 0; w < st_.dirty.size(); ++w) {
        for (std::uint64_t b = bits[w]; b != 0; b &= b - 1) {
            const auto i = static_cast<std::uint32_t>(w * 64 + std::countr_zero(b));
            if (i < covered) continue;
            work[count++] = i;
            covered = step_end[i];
        }
    }
    if (count == 0) return;
    st_.fingerprinted = false;
    written_ += general_ ? compute_ranges<true>(count) : compute_ranges<false>(count);
}

/// Computes the ranges of the first `count` subtrees listed in `work`.
template <bool General>
std::size_t Propagation::compute_ranges(std::uint32_t count) {
    const std::uint32_t* const work = st_.work.data();
    const std::uint32_t* const step_end = st_.step_end.data();
    const TreeStep* const steps = st_.steps.data();
    // A cursor `prefetch_distance` steps ahead: step `ahead` of subtree `next`.
    std::uint32_t next = 0;
    std::uint32_t ahead = work[0];
    auto advance = [&] {
        if (next == count) return;
        prefetch(steps[ahead]);
        if (++ahead == step_end[work[next]] && ++next < count) ahead = work[next];
    };
    for (std::uint32_t d = 0; d < prefetch_distance; ++d) advance();
    std::size_t written = 0;
    for (std::uint32_t r = 0; r < count; ++r) {
        for (std::uint32_t i = work[r], end = step_end[i]; i < end; ++i) {
            advance();
            written += compute<General>(steps[i], i) ? 1 : 0;
        }
    }
    return written;
}

}  // namespace tessera::detail

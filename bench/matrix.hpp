// The 4x4 matrix inversion of heavy_compute, shared by all its variants: Gauss-Jordan
// elimination with partial pivoting. Kept out of line ([[gnu::noinline]]) so every variant
// calls the very same code and the scenario measures the iteration around it.
#pragma once

#include <cmath>
#include <utility>

namespace tessera_bench {

/// Writes the inverse of the column-major 4x4 matrix `in` to `out` (which may equal `in`).
/// Returns false, leaving `out` unspecified, when `in` is singular.
[[gnu::noinline]] inline bool invert4x4(const float* in, float* out) noexcept {
    // Augmented matrix [A | I], row-major: a[r][c] = A(r, c) = in[c * 4 + r].
    float a[4][8];
    for (int r = 0; r < 4; ++r) {
        for (int c = 0; c < 4; ++c) {
            a[r][c] = in[c * 4 + r];
            a[r][c + 4] = r == c ? 1.0f : 0.0f;
        }
    }
    for (int col = 0; col < 4; ++col) {
        // Partial pivoting: the row (at or below col) with the largest |value| in this column.
        int pivot = col;
        float best = std::fabs(a[col][col]);
        for (int r = col + 1; r < 4; ++r) {
            const float v = std::fabs(a[r][col]);
            if (v > best) {
                best = v;
                pivot = r;
            }
        }
        if (best == 0.0f) return false;
        if (pivot != col) {
            for (int c = 0; c < 8; ++c) std::swap(a[col][c], a[pivot][c]);
        }
        const float inv = 1.0f / a[col][col];
        for (int c = 0; c < 8; ++c) a[col][c] *= inv;
        for (int r = 0; r < 4; ++r) {
            if (r == col) continue;
            const float f = a[r][col];
            for (int c = 0; c < 8; ++c) a[r][c] -= f * a[col][c];
        }
    }
    for (int r = 0; r < 4; ++r) {
        for (int c = 0; c < 4; ++c) out[c * 4 + r] = a[r][c + 4];
    }
    return true;
}

}  // namespace tessera_bench

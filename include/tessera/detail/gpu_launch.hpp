/// @file detail/gpu_launch.hpp
/// The launchers of GPU kernel systems (gpu.hpp): the host emulation's loop and, in a
/// translation unit compiled by nvcc, the CUDA kernel and its launch. Internal, not API.
#pragma once

#include <tessera/detail/gpu_device.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace tessera::gpu::detail {

template <bool Pair, class K, class U, class... Cs, std::size_t... I>
void host_rows(const K& kernel, std::uint32_t rows, float dt, const U& u, void* const* in,
               void* const* out, std::index_sequence<I...>) {
    if constexpr (!Pair) {
        for (std::uint32_t i = 0; i < rows; ++i) kernel(static_cast<Cs*>(out[I])[i]..., dt, u);
    } else {
        for (std::uint32_t i = 0; i < rows; ++i) {
            for (std::uint32_t j = 0; j < rows; ++j) {
                if (j != i)
                    kernel(static_cast<Cs*>(out[I])[i]..., static_cast<const Cs*>(in[I])[j]..., dt,
                           u);
            }
        }
    }
}

/// The host emulation's launcher: the kernel over device (host) buffers.
template <class K, class U, bool Pair, class... Cs>
void emulated_launch(Stream, std::uint32_t rows, float dt, const void* kernel, const void* uniforms,
                     void* const* in, void* const* out) {
    host_rows<Pair, K, U, Cs...>(*static_cast<const K*>(kernel), rows, dt,
                                 *static_cast<const U*>(uniforms), in, out,
                                 std::index_sequence_for<Cs...>{});
}

#if defined(__CUDACC__)
/// Column pointers passed to a CUDA kernel by value.
template <std::size_t N>
struct DevicePointers {
    void* in[N];
    void* out[N];
};

template <bool Pair, class K, class U, class... Cs, std::size_t... I>
__device__ void device_row(const K& k, std::uint32_t i, std::uint32_t rows, float dt, const U& u,
                           const DevicePointers<sizeof...(Cs)>& p, std::index_sequence<I...>) {
    if constexpr (!Pair) {
        k(static_cast<Cs*>(p.out[I])[i]..., dt, u);
    } else {
        for (std::uint32_t j = 0; j < rows; ++j) {
            if (j != i)
                k(static_cast<Cs*>(p.out[I])[i]..., static_cast<const Cs*>(p.in[I])[j]..., dt, u);
        }
    }
}

template <class K, class U, bool Pair, class... Cs>
__global__ void device_entry(K k, std::uint32_t rows, float dt, U u,
                             DevicePointers<sizeof...(Cs)> p) {
    const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows)
        device_row<Pair, K, U, Cs...>(k, i, rows, dt, u, p, std::index_sequence_for<Cs...>{});
}

/// The CUDA launcher, compiled in the user's translation unit by nvcc.
template <class K, class U, bool Pair, class... Cs>
void cuda_launch(Stream stream, std::uint32_t rows, float dt, const void* kernel,
                 const void* uniforms, void* const* in, void* const* out) {
    DevicePointers<sizeof...(Cs)> p{};
    for (std::size_t k = 0; k < sizeof...(Cs); ++k) {
        p.in[k] = in[k];
        p.out[k] = out[k];
    }
    constexpr std::uint32_t block = 256;
    const std::uint32_t grid = (rows + block - 1) / block;
    device_entry<K, U, Pair, Cs...><<<grid, block, 0, static_cast<cudaStream_t>(stream)>>>(
        *static_cast<const K*>(kernel), rows, dt, *static_cast<const U*>(uniforms), p);
}
#endif

}  // namespace tessera::gpu::detail

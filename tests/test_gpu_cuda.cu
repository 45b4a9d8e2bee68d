// test_gpu.cpp compiled by nvcc (the CUDA backend's build): the kernels get the CUDA launcher,
// and on a machine without a device the same tests check the fallback.
#include "test_gpu.cpp"

// calibrate.cpp compiled by nvcc, so gpu::calibrate() can time the baseline kernel on the
// device (the CUDA backend's build).
#include "calibrate.cpp"

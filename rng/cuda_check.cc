#include "rng/cuda_check.h"

#include <string>

namespace seedloader::detail {

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  throw Error(std::string(call) + " failed at " + file + ":" + std::to_string(line) +
              ": " + cudaGetErrorName(code) + ": " + cudaGetErrorString(code));
}

}  // namespace seedloader::detail

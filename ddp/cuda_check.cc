#include "ddp/cuda_check.h"

#include <string>

namespace seedloader::detail {
namespace {
std::string where(const char* call, const char* file, int line) {
  return std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": ";
}
}  // namespace

void throw_nccl_error(ncclResult_t code, const char* call, const char* file, int line) {
  throw CommError(where(call, file, line) + ncclGetErrorString(code));
}

void throw_cublas_error(cublasStatus_t code, const char* call, const char* file,
                        int line) {
  throw Error(where(call, file, line) + cublasGetStatusName(code) + ": " +
              cublasGetStatusString(code));
}

}  // namespace seedloader::detail

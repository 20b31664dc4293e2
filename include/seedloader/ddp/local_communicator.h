// LocalCommunicator: the world of one rank, in process, for buffers on any device.
// Every collective is complete on return (a sum or average over one rank is the
// data itself), so a Sequential + Reducer program runs unchanged where MPI is absent
// or not wanted. Stateless apart from the device; thread-safe.
#pragma once

#include "seedloader/ddp/communicator.h"

namespace seedloader::ddp {

class LocalCommunicator final : public Communicator {
 public:
  explicit LocalCommunicator(Device device = Device::kCpu) : device_(device) {}

  int rank() const override { return 0; }
  int size() const override { return 1; }
  Device device() const override { return device_; }
  std::unique_ptr<Work> iallreduce(std::span<float>, ReduceOp) override {
    return std::make_unique<Done>();
  }
  void broadcast(std::span<float>, int root) override { check_root(root); }
  void broadcast(std::span<std::int64_t>, int root) override { check_root(root); }
  void barrier() override {}

 private:
  // Over one rank every reduction leaves the data as it is.
  void allreduce_int64(std::span<std::int64_t>, IntReduceOp) override {}

  class Done final : public Work {
   public:
    bool test() override { return true; }
    void wait() override {}
  };
  static void check_root(int root);

  Device device_;
};

}  // namespace seedloader::ddp

// Damaged or mismatched checkpoints: --resume stops with exit code 2 and a message
// naming the file and what is wrong, before any training step.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>

#include "tests/train/train_fixture.h"
#include "tools/ddp_train/checkpoint.h"
#include "tools/ddp_train/data_parallel_model.h"

namespace seedloader::train_test {
namespace {

class TrainCorrupt : public TrainFixture {
 protected:
  void SetUp() override {
    TrainFixture::SetUp();
    data_ = write_regression_data(32);
    // The good checkpoint is written in-process, as ddp-train would after 2 steps
    // of this configuration (momentum state included), so each case costs one run.
    train::TrainOptions o;
    o.model = "mlp:10,10,5";
    o.loss = "mse";
    o.data = "tensors:" + data_;
    o.batch_size = 4;
    o.momentum = 0.9f;
    train::TrainOptions dp = o;
    dp.devices = {0};
    train::DataParallelModel model(dp, {10}, 3);
    std::vector<float> x(40, 0.5f), y(20, 0.25f);
    model.step(x.data(), {4, 10}, {.values = y.data()});
    model.step(x.data(), {4, 10}, {.values = y.data()});
    train::CheckpointState st;
    st.base_seed = 3;
    st.epoch_samples = 8;
    st.global_step = 2;
    st.config = train::resume_config_json(o);
    std::vector<train::Stage> stages = model.stages();
    train::save_checkpoint(path("good.safetensors"), stages, st);
    std::ifstream in(path("good.safetensors"), std::ios::binary);
    good_.assign(std::istreambuf_iterator<char>(in), {});
  }

  std::string args_(const std::string& model = "mlp:10,10,5") const {
    return "--data tensors:" + data_ + " --model " + model +
           " --loss mse --batch-size 4 --workers 0 --seed 3 --momentum 0.9";
  }

  // Writes `bytes` as bad.safetensors, resumes from it and returns the output.
  std::string resume_from(const std::string& bytes,
                          const std::string& model = "mlp:10,10,5") {
    std::ofstream(path("bad.safetensors"), std::ios::binary) << bytes;
    auto r = train(args_(model) + " --steps 4 --resume " + path("bad.safetensors"));
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find(path("bad.safetensors")), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("epoch 0:"), std::string::npos) << "trained anyway:\n" << r.out;
    return r.out;
  }

  // The good file with its JSON header edited by `edit`.
  std::string with_header(const std::function<void(nlohmann::json&)>& edit) const {
    std::uint64_t n = 0;
    std::memcpy(&n, good_.data(), 8);
    nlohmann::json h = nlohmann::json::parse(good_.substr(8, n));
    edit(h);
    std::string text = h.dump();
    std::uint64_t m = text.size();
    return std::string(reinterpret_cast<const char*>(&m), 8) + text + good_.substr(8 + n);
  }

  std::string data_, good_;
};

// The control: the undamaged file resumes and trains the remaining steps.
TEST_F(TrainCorrupt, UndamagedCheckpointResumes) {
  auto r = train(args_() + " --steps 4 --resume " + path("good.safetensors"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("(2 steps)"), std::string::npos) << r.out;
}

TEST_F(TrainCorrupt, TruncatedFileIsRejected) {
  std::string out = resume_from(good_.substr(0, good_.size() * 2 / 3));
  EXPECT_NE(out.find("outside"), std::string::npos) << out;
}

TEST_F(TrainCorrupt, FlippedDataByteFailsItsChecksum) {
  std::string bad = good_;
  bad[bad.size() - 10] ^= 0x20;
  std::string out = resume_from(bad);
  EXPECT_NE(out.find("fails its checksum"), std::string::npos) << out;
}

TEST_F(TrainCorrupt, ForgedHeaderLengthIsRejectedWithoutAllocating) {
  std::string bad = good_;
  const std::uint64_t huge = std::uint64_t{1} << 60;
  std::memcpy(bad.data(), &huge, 8);
  std::string out = resume_from(bad);
  EXPECT_NE(out.find("header length"), std::string::npos) << out;
}

TEST_F(TrainCorrupt, OverlappingOffsetsAreRejected) {
  std::string out = resume_from(with_header([](nlohmann::json& h) {
    h["0.bias"]["data_offsets"] = h["2.bias"]["data_offsets"];
    h["0.bias"]["shape"] = h["2.bias"]["shape"];
  }));
  EXPECT_NE(out.find("overlap"), std::string::npos) << out;
}

TEST_F(TrainCorrupt, OffsetsPastTheEndAreRejected) {
  std::string out = resume_from(with_header([](nlohmann::json& h) {
    auto& off = h["2.bias"]["data_offsets"];
    off[0] = off[0].get<std::uint64_t>() + 4096;
    off[1] = off[1].get<std::uint64_t>() + 4096;
  }));
  EXPECT_NE(out.find("outside"), std::string::npos) << out;
}

TEST_F(TrainCorrupt, ShapeThatDisagreesWithByteCountIsRejected) {
  std::string out = resume_from(with_header([](nlohmann::json& h) {
    h["0.weight"]["shape"] = {10, 11};
  }));
  EXPECT_NE(out.find("does not match"), std::string::npos) << out;
}

TEST_F(TrainCorrupt, CheckpointOfAnotherModelIsRejected) {
  std::string out = resume_from(good_, "mlp:10,12,5");
  EXPECT_NE(out.find("different model"), std::string::npos) << out;
}

TEST_F(TrainCorrupt, OtherWorldSizeIsRejected) {
  std::string out = resume_from(
      with_header([](nlohmann::json& h) { h["__metadata__"]["world_size"] = "3"; }));
  EXPECT_NE(out.find("world size 3"), std::string::npos) << out;
}

}  // namespace
}  // namespace seedloader::train_test

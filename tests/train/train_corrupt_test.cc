// Damaged or mismatched checkpoints (the weights' file or its optimizer
// companion): --resume stops with exit code 2 and a message
// naming the file and what is wrong, before any training step.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>

#include "tests/train/train_fixture.h"
#include "tools/ddp_train/checkpoint.h"
#include "tools/ddp_train/data_parallel_model.h"
#include "tools/ddp_train/train_data.h"

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
    o.loss = train::Loss::kMse;
    o.data = "tensors:" + data_;
    o.batch_size = 4;
    o.momentum = 0.9f;
    train::TrainOptions dp = o;
    dp.devices = {0};
    model_ = std::make_unique<train::DataParallelModel>(dp, ddp::Shape{10}, 3);
    std::vector<float> x(40, 0.5f), y(20, 0.25f);
    model_->step(x.data(), {4, 10}, {.values = y.data()});
    model_->step(x.data(), {4, 10}, {.values = y.data()});
    state_.base_seed = 3;
    state_.epoch_samples = 8;
    state_.global_step = 2;
    state_.config = train::resume_config_json(o);
    std::unique_ptr<Dataset> data = train::open_train_data(o.data, "");
    state_.dataset_size = data->size();
    state_.dataset_fingerprint = train::data_fingerprint(o.data, *data);
    train::save_checkpoint(path("good.safetensors"), model_->stages(), state_);
    good_ = read_all(path("good.safetensors"));
    good_optim_ = read_all(path("good.safetensors.optim"));
  }

  static std::string read_all(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }

  std::string args_(const std::string& model = "mlp:10,10,5") const {
    return "--data tensors:" + data_ + " --model " + model +
           " --loss mse --batch-size 4 --workers 0 --seed 3 --momentum 0.9";
  }

  // Writes `bytes` as bad.safetensors and `optim` as its companion, resumes from it
  // and returns the output.
  std::string resume_from(const std::string& bytes,
                          const std::string& model = "mlp:10,10,5") {
    return resume_from_pair(bytes, good_optim_, model);
  }
  std::string resume_from_pair(const std::string& bytes, const std::string& optim,
                               const std::string& model = "mlp:10,10,5") {
    std::ofstream(path("bad.safetensors"), std::ios::binary) << bytes;
    std::ofstream(path("bad.safetensors.optim"), std::ios::binary) << optim;
    auto r = train(args_(model) + " --steps 4 --resume " + path("bad.safetensors"));
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find(path("bad.safetensors")), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("epoch 0:"), std::string::npos) << "trained anyway:\n" << r.out;
    return r.out;
  }

  // The good file (or `file`) with its JSON header edited by `edit`.
  std::string with_header(const std::function<void(nlohmann::json&)>& edit) const {
    return edit_header(good_, edit);
  }
  static std::string edit_header(const std::string& file,
                                 const std::function<void(nlohmann::json&)>& edit) {
    std::uint64_t n = 0;
    std::memcpy(&n, file.data(), 8);
    nlohmann::json h = nlohmann::json::parse(file.substr(8, n));
    edit(h);
    std::string text = h.dump();
    std::uint64_t m = text.size();
    return std::string(reinterpret_cast<const char*>(&m), 8) + text + file.substr(8 + n);
  }

  // Saves good.safetensors' content to big.safetensors in a child process whose
  // file-size limit (1 KiB) stops the write part-way; `ignore_xfsz` turns the
  // SIGXFSZ that would end the child into an EFBIG error (as a full disk's ENOSPC).
  // Returns the child's wait status; the error message goes to msg.txt.
  int save_over_the_limit(bool ignore_xfsz) {
    pid_t pid = fork();
    if (pid == 0) {
      rlimit lim{1024, 1024};
      setrlimit(RLIMIT_FSIZE, &lim);
      if (ignore_xfsz) signal(SIGXFSZ, SIG_IGN);
      try {
        train::save_checkpoint(path("big.safetensors"), model_->stages(), state_);
      } catch (const std::exception& e) {
        std::FILE* f = std::fopen(path("msg.txt").c_str(), "w");  // well under 1 KiB
        std::fputs(e.what(), f);
        std::fclose(f);
        _exit(2);
      }
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
  }

  // The good file with __metadata__ entries set to `values` and resealed with a
  // correct metadata_checksum: only the checks after the checksum can object.
  std::string with_metadata(const std::map<std::string, std::string>& values) const {
    return with_header([&](nlohmann::json& h) {
      std::map<std::string, std::string> m = h["__metadata__"];
      for (const auto& [k, v] : values) m[k] = v;
      m["metadata_checksum"] = train::metadata_checksum(m);
      h["__metadata__"] = m;
    });
  }

  std::string data_, good_, good_optim_;
  std::unique_ptr<train::DataParallelModel> model_;
  train::CheckpointState state_;
};

// The control: the undamaged file resumes and trains the remaining steps.
TEST_F(TrainCorrupt, UndamagedCheckpointResumes) {
  auto r = train(args_() + " --steps 4 --resume " + path("good.safetensors"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("(2 steps)"), std::string::npos) << r.out;
}

// PyTorch's strict load_state_dict sees exactly the model's parameters: the
// optimizer state lives in the companion, the schedule in the metadata.
TEST_F(TrainCorrupt, CheckpointHoldsTheWeightsAloneAndTheCompanionTheState) {
  auto names = [](const std::string& p) {
    std::vector<std::string> out;
    const SafetensorsFile f(p);
    for (const SafetensorsTensor& t : f.tensors()) out.push_back(t.name);
    return out;
  };
  EXPECT_EQ(names(path("good.safetensors")),
            (std::vector<std::string>{"0.bias", "0.weight", "2.bias", "2.weight"}));
  EXPECT_EQ(names(path("good.safetensors.optim")),
            (std::vector<std::string>{
                "0.bias.momentum_buffer", "0.weight.momentum_buffer",
                "2.bias.momentum_buffer", "2.weight.momentum_buffer", "step"}));
  SafetensorsFile f(path("good.safetensors"));
  EXPECT_EQ(f.find("0.weight")->shape, (std::vector<std::uint64_t>{10, 10}));
  EXPECT_EQ(f.find("2.weight")->shape, (std::vector<std::uint64_t>{5, 10}));
  EXPECT_EQ(f.metadata().at("optimizer_file"), "good.safetensors.optim");
  SafetensorsFile o(path("good.safetensors.optim"));
  EXPECT_EQ(o.metadata().at("params"), R"(["0.weight","0.bias","2.weight","2.bias"])");
}

TEST_F(TrainCorrupt, MissingCompanionIsRejectedByName) {
  std::ofstream(path("alone.safetensors"), std::ios::binary) << good_;
  auto r = train(args_() + " --steps 4 --resume " + path("alone.safetensors"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("checkpoint " + path("alone.safetensors.optim") + ": is missing"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("epoch 0:"), std::string::npos) << "trained anyway:\n" << r.out;
}

// A companion from a later save of the same run is a valid file on its own: only
// the checksum the weights' file records tells them apart.
TEST_F(TrainCorrupt, CompanionOfAnotherSaveIsRejected) {
  std::vector<float> x(40, 0.5f), y(20, 0.25f);
  model_->step(x.data(), {4, 10}, {.values = y.data()});
  state_.epoch_samples = 12;
  state_.global_step = 3;
  train::save_checkpoint(path("later.safetensors"), model_->stages(), state_);
  std::string out = resume_from_pair(good_, read_all(path("later.safetensors.optim")));
  EXPECT_NE(out.find(path("bad.safetensors.optim") + ": belongs to another save than " +
                     path("bad.safetensors")),
            std::string::npos)
      << out;
}

TEST_F(TrainCorrupt, FlippedCompanionByteFailsItsChecksum) {
  std::string bad = good_optim_;
  bad[bad.size() - 20] ^= 0x20;
  std::string out = resume_from_pair(good_, bad);
  EXPECT_NE(out.find(path("bad.safetensors.optim") + ": tensor '"), std::string::npos)
      << out;
  EXPECT_NE(out.find("fails its checksum"), std::string::npos) << out;
}

TEST_F(TrainCorrupt, EditedCompanionMetadataFailsItsChecksum) {
  std::string out =
      resume_from_pair(good_, edit_header(good_optim_, [](nlohmann::json& h) {
                         h["__metadata__"]["global_step"] = "7";
                       }));
  EXPECT_NE(out.find(path("bad.safetensors.optim") + ": metadata fails its checksum"),
            std::string::npos)
      << out;
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

// One digit of the schedule changed in the JSON metadata: without the metadata
// checksum this resumed a different schedule and exited 0.
TEST_F(TrainCorrupt, EditedScheduleFailsTheMetadataChecksum) {
  for (const char* key : {"epoch", "global_step", "epoch_samples"}) {
    std::string out = resume_from(with_header([&](nlohmann::json& h) {
      std::string v = h["__metadata__"][key];
      v.back() = v.back() == '4' ? '0' : '4';
      h["__metadata__"][key] = v;
    }));
    EXPECT_NE(out.find("metadata fails its checksum"), std::string::npos)
        << key << ": " << out;
  }
}

TEST_F(TrainCorrupt, TrailingBytesAreRejected) {
  std::string out = resume_from(good_ + std::string(13, 'x'));
  EXPECT_NE(out.find("13 trailing bytes"), std::string::npos) << out;
}

TEST_F(TrainCorrupt, OlderFormatVersionIsRefusedByName) {
  std::string out = resume_from(
      with_header([](nlohmann::json& h) { h["__metadata__"]["format_version"] = "1"; }));
  EXPECT_NE(out.find("format version 1"), std::string::npos) << out;
  // Version 2 kept the optimizer state among the weights.
  out = resume_from(with_metadata({{"format_version", "2"}}));
  EXPECT_NE(out.find("format version 2 is not readable"), std::string::npos) << out;
}

TEST_F(TrainCorrupt, OtherWorldSizeIsRejected) {
  std::string out = resume_from(with_metadata({{"world_size", "3"}}));
  EXPECT_NE(out.find("world size 3"), std::string::npos) << out;
}

// A schedule that passes the checksum but cannot be this run's is refused too (the
// fixture's epochs have 8 batches of 4; these runs end after 4 steps).
TEST_F(TrainCorrupt, GlobalStepThatDisagreesWithThePositionIsRejected) {
  std::string out = resume_from(with_metadata({{"global_step", "3"}}));
  EXPECT_NE(out.find("global_step 3 disagrees"), std::string::npos) << out;
}

TEST_F(TrainCorrupt, EpochSamplesBeyondTheEpochAreRejected) {
  std::string out =
      resume_from(with_metadata({{"epoch_samples", "32"}, {"global_step", "8"}}));
  EXPECT_NE(out.find("epoch_samples 32"), std::string::npos) << out;
  out = resume_from(with_metadata({{"epoch_samples", "6"}}));
  EXPECT_NE(out.find("epoch_samples 6"), std::string::npos) << out;
}

TEST_F(TrainCorrupt, EpochBeyondTheRunIsRejected) {
  std::string out = resume_from(with_metadata({{"epoch", "1"}, {"global_step", "10"}}));
  EXPECT_NE(out.find("beyond this run's 4 steps"), std::string::npos) << out;
}

// The good checkpoint was saved with the default numpy order: resuming under
// PyTorch's order would visit other samples, and is refused by name.
TEST_F(TrainCorrupt, ResumingUnderAnotherShuffleOrderIsRejected) {
  auto r =
      train(args_() + " --steps 4 --order torch --resume " + path("good.safetensors"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find(R"(saved with order = "numpy", this run has "torch")"),
            std::string::npos)
      << r.out;
}

// Metadata JSON nested deep (resealed, as a crafted file would be): refused naming
// the file and the entry, never a stack overflow in what reads it.
TEST_F(TrainCorrupt, MetadataNestedDeepIsRejectedByName) {
  std::string deep;
  for (int d = 0; d < 20000; ++d) deep += R"({"a":)";
  deep += "1" + std::string(20000, '}');
  for (const std::string key : {"config", "skip", "checksums"}) {
    const std::string out = resume_from(with_metadata({{key, deep}}));
    EXPECT_NE(out.find("metadata '" + key + "'"), std::string::npos) << key << "\n"
                                                                     << out;
    EXPECT_NE(out.find("nested deeper than 64"), std::string::npos) << key << "\n" << out;
  }
}

TEST_F(TrainCorrupt, OtherDataSetSizeIsRejected) {
  std::string out = resume_from(with_metadata({{"dataset_size", "33"}}));
  EXPECT_NE(out.find("data set of 33 samples"), std::string::npos) << out;
}

TEST_F(TrainCorrupt, FailedSaveNamesTheReasonAndRemovesItsTemporary) {
  const int status = save_over_the_limit(true);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  std::ifstream in(path("msg.txt"));
  std::string msg((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(msg.find(path("big.safetensors")), std::string::npos) << msg;
  EXPECT_NE(msg.find(".tmp"), std::string::npos) << msg;
  EXPECT_NE(msg.find("File too large"), std::string::npos) << msg;
  for (const char* name : {"big.safetensors", "big.safetensors.optim"}) {
    EXPECT_FALSE(std::filesystem::exists(path(name))) << name;
    EXPECT_FALSE(std::filesystem::exists(path(std::string(name) + ".tmp"))) << name;
  }
}

TEST_F(TrainCorrupt, SaveKilledBySignalRemovesItsTemporary) {
  const int status = save_over_the_limit(false);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ) << status;
  for (const char* name : {"big.safetensors", "big.safetensors.optim"}) {
    EXPECT_FALSE(std::filesystem::exists(path(name))) << name;
    EXPECT_FALSE(std::filesystem::exists(path(std::string(name) + ".tmp"))) << name;
  }
}

// A w x h 24-bit BMP of one grey level.
void write_bmp(const std::string& path, int w, int h, std::uint8_t grey) {
  const std::uint32_t row = (3 * w + 3) / 4 * 4, size = 54 + row * h;
  std::uint8_t hdr[54] = {'B', 'M'};
  auto put32 = [&](int at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) hdr[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
  };
  put32(2, size);
  put32(10, 54);
  put32(14, 40);
  put32(18, w);
  put32(22, h);
  hdr[26] = 1;
  hdr[28] = 24;
  put32(34, row * h);
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(hdr), 54);
  f << std::string(row * h, static_cast<char>(grey));
}

// The checkpoint records the data set's index: an image folder whose files changed
// since the save (same sample count, so nothing else notices) is refused.
TEST_F(TrainCorrupt, ChangedImageFolderIsRejected) {
  for (const char* c : {"cat", "dog"}) {
    std::filesystem::create_directories(path(std::string("images/") + c));
    for (int i = 0; i < 4; ++i)
      write_bmp(path(std::string("images/") + c + "/" + std::to_string(i) + ".bmp"), 32,
                32, static_cast<std::uint8_t>(40 * i));
  }
  const std::string args =
      "--data imagefolder:" + path("images") +
      " --transform resize:32x32 --model mlp:3072,4,2 --batch-size 2 "
      "--workers 0 --seed 3 ";
  auto first = train(args + "--steps 2 --save " + path("img.safetensors"));
  ASSERT_EQ(first.exit_code, 0) << first.out;
  auto same = train(args + "--steps 3 --resume " + path("img.safetensors"));
  EXPECT_EQ(same.exit_code, 0) << same.out;
  // One image replaced by a larger one, one renamed: still 8 samples.
  write_bmp(path("images/cat/1.bmp"), 48, 48, 7);
  std::filesystem::rename(path("images/dog/2.bmp"), path("images/dog/9.bmp"));
  auto r = train(args + "--steps 3 --resume " + path("img.safetensors"));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("data set differs"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("epoch 0:"), std::string::npos) << "trained anyway:\n" << r.out;
}

}  // namespace
}  // namespace seedloader::train_test

#include "tools/ddp_train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "loader/datasets/safetensors.h"
#include "rng/check.h"
#include "rng/error.h"
#include "tools/seed_audit/hash64.h"

namespace seedloader::train {
namespace {

constexpr const char* kFormat = "seedloader.ddp-train";

// One tensor of the checkpoint: where it comes from in the model.
struct Entry {
  std::string name;
  std::vector<std::uint64_t> shape;
  ddp::Sequential* model = nullptr;
  ddp::DeviceArray<float>* state = nullptr;  // null: the model's parameters
  std::size_t offset = 0, count = 0;
};

std::vector<Entry> entries(std::span<const Stage> stages, bool with_optimizer) {
  std::vector<Entry> out;
  for (const Stage& st : stages) {
    for (const ddp::ParamInfo& p : st.model->param_info()) {
      Entry e{
          shifted_name(p.name, st.name_shift), {}, st.model, nullptr, p.offset, p.count};
      for (auto d : p.shape) e.shape.push_back(static_cast<std::uint64_t>(d));
      out.push_back(e);
    }
    if (!with_optimizer) continue;
    for (auto& [state_name, buf] : st.optimizer->state()) {
      if (buf->size() == 0) continue;  // e.g. SGD without momentum keeps none
      for (const ddp::ParamInfo& p : st.model->param_info()) {
        Entry e{"optimizer." + shifted_name(p.name, st.name_shift) + "." + state_name,
                {},
                st.model,
                buf,
                p.offset,
                p.count};
        for (auto d : p.shape) e.shape.push_back(static_cast<std::uint64_t>(d));
        out.push_back(e);
      }
    }
  }
  return out;
}

std::string hex(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::uint64_t checksum(std::span<const std::uint8_t> bytes) {
  return audit::hash_bytes(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

std::string shape_str(const std::vector<std::uint64_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

void fsync_path(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags);
  SL_CHECK_SYS(fd);
  int rc = ::fsync(fd);
  ::close(fd);
  SL_CHECK_SYS(rc);
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw DataError("checkpoint " + path + ": " + what);
}

std::uint64_t meta_u64(const std::string& path,
                       const std::map<std::string, std::string>& m,
                       const std::string& key) {
  auto it = m.find(key);
  if (it == m.end()) fail(path, "metadata has no '" + key + "'");
  std::uint64_t v = 0;
  const std::string& s = it->second;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    fail(path, "metadata '" + key + "' is not a number: '" + s + "'");
  return v;
}

// Checks that every entry is in `file` as F32 with its shape; returns them in order.
std::vector<const SafetensorsTensor*> match(const SafetensorsFile& file,
                                            const std::vector<Entry>& want) {
  std::vector<const SafetensorsTensor*> found;
  for (const Entry& e : want) {
    const SafetensorsTensor* t = file.find(e.name);
    if (!t)
      fail(file.path(), "no tensor '" + e.name + "' (saved from a different model?)");
    if (t->dtype != "F32")
      fail(file.path(), "tensor '" + e.name + "' is " + t->dtype + ", not F32");
    if (t->shape != e.shape)
      fail(file.path(), "tensor '" + e.name + "' has shape " + shape_str(t->shape) +
                            ", the model has " + shape_str(e.shape) +
                            " (saved from a different model?)");
    found.push_back(t);
  }
  return found;
}

// Copies validated tensors into the model, one flat buffer at a time.
void apply(const SafetensorsFile& file, const std::vector<Entry>& want,
           const std::vector<const SafetensorsTensor*>& found) {
  std::map<std::pair<ddp::Sequential*, ddp::DeviceArray<float>*>, std::vector<float>>
      host;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const Entry& e = want[i];
    auto key = std::make_pair(e.model, e.state);
    auto it = host.find(key);
    if (it == host.end())
      it = host.emplace(key, e.state ? e.state->to_host() : e.model->parameters_to_host())
               .first;
    std::span<const std::uint8_t> bytes = file.data(*found[i]);
    std::memcpy(it->second.data() + e.offset, bytes.data(), e.count * sizeof(float));
  }
  for (auto& [key, values] : host) {
    if (key.second) {
      key.second->copy_from_host(values);
    } else {
      key.first->load_parameters(values);
    }
  }
}

}  // namespace

void save_checkpoint(const std::string& path, std::span<const Stage> stages,
                     const CheckpointState& state) {
  std::vector<Entry> want = entries(stages, true);
  std::map<std::pair<ddp::Sequential*, ddp::DeviceArray<float>*>, std::vector<float>>
      host;
  for (const Entry& e : want) {
    auto key = std::make_pair(e.model, e.state);
    if (!host.count(key))
      host.emplace(key, e.state ? e.state->to_host() : e.model->parameters_to_host());
  }
  const std::int64_t steps = stages.empty() ? 0 : stages[0].optimizer->steps();
  std::vector<SafetensorsWrite> writes;
  nlohmann::json sums;
  for (const Entry& e : want) {
    const float* p = host.at({e.model, e.state}).data() + e.offset;
    std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(p),
                                        e.count * sizeof(float));
    writes.push_back({e.name, "F32", e.shape, bytes});
    sums[e.name] = hex(checksum(bytes));
  }
  std::span<const std::uint8_t> step_bytes(reinterpret_cast<const std::uint8_t*>(&steps),
                                           sizeof steps);
  writes.push_back({"optimizer.step", "I64", {1}, step_bytes});
  sums["optimizer.step"] = hex(checksum(step_bytes));

  std::map<std::string, std::string> meta{
      {"format", kFormat},
      {"format_version", std::to_string(kCheckpointVersion)},
      {"config", state.config},
      {"base_seed", std::to_string(state.base_seed)},
      {"epoch", std::to_string(state.epoch)},
      {"epoch_samples", std::to_string(state.epoch_samples)},
      {"global_step", std::to_string(state.global_step)},
      {"world_size", std::to_string(state.world_size)},
      {"workers", std::to_string(state.workers)},
      {"checksums", sums.dump()}};
  const std::string tmp = path + ".tmp";
  write_safetensors(tmp, writes, meta);
  fsync_path(tmp, O_RDONLY);
  SL_CHECK_SYS(std::rename(tmp.c_str(), path.c_str()));
  std::string dir = std::filesystem::path(path).parent_path().string();
  fsync_path(dir.empty() ? "." : dir, O_RDONLY | O_DIRECTORY);
}

CheckpointState load_checkpoint(const std::string& path, std::span<const Stage> stages) {
  SafetensorsFile file(path);
  const auto& meta = file.metadata();
  auto format = meta.find("format");
  if (format == meta.end() || format->second != kFormat)
    fail(path, "not a ddp-train checkpoint (metadata 'format' is missing or wrong)");
  const std::uint64_t version = meta_u64(path, meta, "format_version");
  if (version != kCheckpointVersion)
    fail(path, "format version " + std::to_string(version) + ", this program reads " +
                   std::to_string(kCheckpointVersion));
  nlohmann::json sums;
  try {
    sums = nlohmann::json::parse(meta.at("checksums"));
  } catch (const std::exception&) {
    fail(path, "metadata 'checksums' is missing or not JSON");
  }
  for (const SafetensorsTensor& t : file.tensors()) {
    if (!sums.contains(t.name) || !sums[t.name].is_string())
      fail(path, "no checksum for tensor '" + t.name + "'");
    if (sums[t.name].get<std::string>() != hex(checksum(file.data(t))))
      fail(path, "tensor '" + t.name + "' fails its checksum (the file is corrupted)");
  }
  std::vector<Entry> want = entries(stages, true);
  std::vector<const SafetensorsTensor*> found = match(file, want);
  const SafetensorsTensor* step = file.find("optimizer.step");
  if (!step || step->dtype != "I64" || step->shape != std::vector<std::uint64_t>{1})
    fail(path, "no I64 [1] tensor 'optimizer.step'");
  CheckpointState s;
  s.base_seed = meta_u64(path, meta, "base_seed");
  s.epoch = meta_u64(path, meta, "epoch");
  s.epoch_samples = meta_u64(path, meta, "epoch_samples");
  s.global_step = meta_u64(path, meta, "global_step");
  s.world_size = meta_u64(path, meta, "world_size");
  s.workers = meta_u64(path, meta, "workers");
  auto config = meta.find("config");
  if (config == meta.end()) fail(path, "metadata has no 'config'");
  s.config = config->second;
  std::int64_t steps = 0;
  std::memcpy(&steps, file.data(*step).data(), sizeof steps);
  apply(file, want, found);
  for (const Stage& st : stages) st.optimizer->set_steps(steps);
  return s;
}

void load_weights(const std::string& path, std::span<const Stage> stages) {
  SafetensorsFile file(path);
  std::vector<Entry> want = entries(stages, false);
  apply(file, want, match(file, want));
}

}  // namespace seedloader::train

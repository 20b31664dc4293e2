#include "tools/ddp_train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "base/json_depth.h"
#include "loader/datasets/safetensors.h"
#include "seedloader/error.h"

namespace seedloader::train {
namespace {

constexpr const char* kFormat = "seedloader.ddp-train";

constexpr const char* kOptimizerFormat = "seedloader.ddp-train.optimizer";

// One tensor of a checkpoint file: where it comes from in the model.
struct Entry {
  std::string name;
  std::vector<std::uint64_t> shape;
  ddp::Sequential* model = nullptr;
  ddp::DeviceArray<float>* state = nullptr;  // null: the model's parameters
  std::size_t offset = 0, count = 0;
};

// The tensors of PATH (`optimizer` false: the weights, under their nn.Sequential
// names) or of its companion (true: "<param>.<state>", in parameter order).
std::vector<Entry> entries(std::span<const Stage> stages, bool optimizer) {
  std::vector<Entry> out;
  for (const Stage& st : stages) {
    std::vector<std::pair<std::string, ddp::DeviceArray<float>*>> bufs{{"", nullptr}};
    if (optimizer) bufs = st.optimizer->state();
    for (const ddp::ParamInfo& p : st.model->param_info()) {
      for (auto& [state_name, buf] : bufs) {
        if (buf && buf->size() == 0) continue;  // e.g. SGD without momentum keeps none
        Entry e{
            shifted_name(p.name, st.name_shift), {}, st.model, buf, p.offset, p.count};
        if (buf) e.name += "." + state_name;
        for (auto d : p.shape) e.shape.push_back(static_cast<std::uint64_t>(d));
        out.push_back(e);
      }
    }
  }
  return out;
}

// The whole model's parameter names, in the optimizer's (and nn.Sequential's
// parameters()) order.
nlohmann::json param_names(std::span<const Stage> stages) {
  nlohmann::json names = nlohmann::json::array();
  for (const Stage& st : stages)
    for (const ddp::ParamInfo& p : st.model->param_info())
      names.push_back(shifted_name(p.name, st.name_shift));
  return names;
}

std::string hex(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

constexpr XXH64_hash_t kChecksumSeed = 0;

std::uint64_t checksum(std::span<const std::uint8_t> bytes) {
  return XXH64(bytes.data(), bytes.size(), kChecksumSeed);
}

std::string shape_str(const std::vector<std::uint64_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw DataError("checkpoint " + path + ": " + what);
}

// Throws Error naming `what`, `path` and errno's text.
[[noreturn]] void fail_sys(const std::string& what, const std::string& path) {
  throw Error("checkpoint: cannot " + what + " " + path + ": " + std::strerror(errno));
}

void fsync_path(const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) fail_sys("open", path);
  int rc = ::fsync(fd);
  int saved = errno;
  ::close(fd);
  errno = saved;
  if (rc != 0) fail_sys("fsync", path);
}

// The temporary files of a save in progress, and the signals that would end the
// process before they are renamed or removed. While one is armed, those signals
// unlink the files and then take the action they had before (re-raised), so an
// interrupted save leaves nothing behind. Signals the process ignores stay
// ignored. One save at a time (rank 0's main thread); the paths are fixed buffers
// because the handler may only use async-signal-safe calls (unlink, sigaction).
class TempFileGuard {
 public:
  explicit TempFileGuard(const std::array<std::string, 2>& paths) {
    for (std::size_t f = 0; f < paths.size(); ++f)
      std::snprintf(g_paths[f], sizeof g_paths[f], "%s", paths[f].c_str());
    for (std::size_t i = 0; i < kSignals.size(); ++i) {
      struct sigaction old {};
      ::sigaction(kSignals[i], nullptr, &old);
      g_old[i] = old;
      if (old.sa_handler == SIG_IGN) continue;
      struct sigaction sa {};
      sa.sa_handler = &on_signal;
      sigemptyset(&sa.sa_mask);
      ::sigaction(kSignals[i], &sa, nullptr);
      armed_[i] = true;
    }
  }
  ~TempFileGuard() {
    for (std::size_t i = 0; i < kSignals.size(); ++i)
      if (armed_[i]) ::sigaction(kSignals[i], &g_old[i], nullptr);
    unlink_all();
  }
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;

  // File `f` was renamed: nothing to remove there.
  void commit(std::size_t f) { g_paths[f][0] = '\0'; }

 private:
  static constexpr std::array<int, 4> kSignals{SIGINT, SIGTERM, SIGHUP, SIGXFSZ};

  static void unlink_all() {
    for (char* p : g_paths) {
      if (p[0]) ::unlink(p);
      p[0] = '\0';
    }
  }

  static void on_signal(int sig) {
    const int saved_errno = errno;  // unlink() may change it under the interrupted code
    unlink_all();
    for (std::size_t i = 0; i < kSignals.size(); ++i)
      if (kSignals[i] == sig) ::sigaction(sig, &g_old[i], nullptr);
    ::raise(sig);  // delivered, with the old action, when this handler returns
    errno = saved_errno;
  }

  static inline char g_paths[2][4096];
  static inline struct sigaction g_old[kSignals.size()];
  std::array<bool, kSignals.size()> armed_{};
};

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
// The tensors `want` names, each looked up as prefix + name.
std::vector<const SafetensorsTensor*> match(const SafetensorsFile& file,
                                            const std::vector<Entry>& want,
                                            const std::string& prefix = "") {
  std::vector<const SafetensorsTensor*> found;
  for (const Entry& e : want) {
    const SafetensorsTensor* t = file.find(prefix + e.name);
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

// Host copies of the flat buffers entries point into, fetched once each.
using HostBuffers =
    std::map<std::pair<ddp::Sequential*, ddp::DeviceArray<float>*>, std::vector<float>>;

std::vector<float>& host_buffer(HostBuffers& host, const Entry& e) {
  auto key = std::make_pair(e.model, e.state);
  auto it = host.find(key);
  if (it == host.end())
    it = host.emplace(key, e.state ? e.state->to_host() : e.model->parameters_to_host())
             .first;
  return it->second;
}

// Copies validated tensors into the model, one flat buffer at a time.
void apply(const SafetensorsFile& file, const std::vector<Entry>& want,
           const std::vector<const SafetensorsTensor*>& found) {
  HostBuffers host;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const Entry& e = want[i];
    file.read(*found[i], 0,
              {reinterpret_cast<std::uint8_t*>(host_buffer(host, e).data() + e.offset),
               e.count * sizeof(float)});
  }
  for (auto& [key, values] : host) {
    if (key.second) {
      key.second->copy_from_host(values);
    } else {
      key.first->load_parameters(values);
    }
  }
}

// Whether `path` starts like a torch.save file: a zip archive, or (before torch
// 1.6) a pickle of protocol 2 to 5.
bool torch_save_file(const std::string& path) {
  std::vector<std::uint8_t> head;
  FileHandle f(path);
  f.read_at(0, std::min<std::uint64_t>(f.size(), 4), head);
  const bool zip = head.size() == 4 && head[0] == 'P' && head[1] == 'K' && head[2] == 3 &&
                   head[3] == 4;
  const bool pickle = head.size() >= 2 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5;
  return zip || pickle;
}

// The file as safetensors; one that is not, but starts like a torch.save file,
// is a DataError that says so (instead of a header length past the file's end).
SafetensorsFile open_weights(const std::string& path) {
  try {
    return SafetensorsFile(path);
  } catch (const DataError&) {
    if (torch_save_file(path))
      fail(path,
           "a PyTorch torch.save file (zip or pickle), not safetensors: write the "
           "weights with safetensors.torch.save_file(model.state_dict(), PATH)");
    throw;
  }
}

// A checkpoint file in the making: its tensors (viewing the caller's buffers), their
// checksums, and metadata to seal.
struct FileWrite {
  std::vector<SafetensorsWrite> tensors;
  nlohmann::json sums = nlohmann::json::object();
  std::map<std::string, std::string> meta;

  void add(const std::string& name, const char* dtype, std::vector<std::uint64_t> shape,
           std::span<const std::uint8_t> bytes) {
    tensors.push_back({name, dtype, std::move(shape), bytes});
    sums[name] = hex(checksum(bytes));
  }
  // Adds the format, the checksums and metadata_checksum; returns the latter.
  std::string seal(const char* format) {
    meta["format"] = format;
    meta["format_version"] = std::to_string(kCheckpointVersion);
    meta["checksums"] = sums.dump();
    meta["metadata_checksum"] = metadata_checksum(meta);
    return meta["metadata_checksum"];
  }
};

// `path` opened and checked whole: the format (SafetensorsFile refuses trailing
// bytes), its version, the metadata checksum, a matching checksum for every tensor.
SafetensorsFile open_sealed(const std::string& path, const char* format) {
  SafetensorsFile file(path);
  const auto& meta = file.metadata();
  auto fmt = meta.find("format");
  if (fmt == meta.end() || fmt->second != format)
    fail(path, std::string("not a ") +
                   (std::strcmp(format, kFormat) == 0 ? "ddp-train checkpoint"
                                                      : "ddp-train optimizer file") +
                   " (metadata 'format' is missing or not '" + format + "')");
  const std::uint64_t version = meta_u64(path, meta, "format_version");
  if (version != kCheckpointVersion)
    fail(path, "format version " + std::to_string(version) +
                   " is not readable: this ddp-train reads version " +
                   std::to_string(kCheckpointVersion) +
                   " only (the weights alone in the file, the optimizer state in its " +
                   kOptimizerSuffix +
                   " companion, XXH64 checksums over data and metadata); resume it "
                   "with the ddp-train that wrote it");
  auto sealed = meta.find("metadata_checksum");
  if (sealed == meta.end() || sealed->second != metadata_checksum(meta))
    fail(path, "metadata fails its checksum (edited or corrupted)");
  nlohmann::json sums;
  try {
    sums = parse_json<nlohmann::json>(meta.at("checksums"));
  } catch (const std::exception& e) {
    fail(path, std::string("metadata 'checksums' is missing or not JSON: ") + e.what());
  }
  for (const SafetensorsTensor& t : file.tensors()) {
    if (!sums.contains(t.name) || !sums[t.name].is_string())
      fail(path, "no checksum for tensor '" + t.name + "'");
    if (sums[t.name].get<std::string>() != hex(checksum(file.read(t))))
      fail(path, "tensor '" + t.name + "' fails its checksum (the file is corrupted)");
  }
  return file;
}

// Writes `f` to `tmp` and fsyncs it.
void write_synced(const std::string& tmp, const FileWrite& f) {
  write_safetensors(tmp, f.tensors, f.meta);
  fsync_path(tmp, O_RDONLY);
}

}  // namespace

std::string metadata_checksum(const std::map<std::string, std::string>& metadata) {
  XXH64_state_t* h = XXH64_createState();
  XXH64_reset(h, kChecksumSeed);
  for (const auto& [key, value] : metadata) {  // std::map: ascending byte order
    if (key == "metadata_checksum") continue;
    XXH64_update(h, key.c_str(), key.size() + 1);
    XXH64_update(h, value.c_str(), value.size() + 1);
  }
  const std::uint64_t v = XXH64_digest(h);
  XXH64_freeState(h);
  return hex(v);
}

void check_position(const std::string& path, const CheckpointState& s,
                    std::uint64_t batch_size, std::uint64_t per_epoch,
                    std::uint64_t total_steps) {
  const std::uint64_t batch = s.epoch_samples / batch_size;
  if (s.epoch_samples % batch_size != 0 || batch >= per_epoch)
    fail(path, "epoch_samples " + std::to_string(s.epoch_samples) +
                   " is not a whole number of batches of " + std::to_string(batch_size) +
                   " before the end of an epoch of " +
                   std::to_string(per_epoch * batch_size) + " samples on each rank");
  std::uint64_t at = 0;
  if (__builtin_mul_overflow(s.epoch, per_epoch, &at) ||
      __builtin_add_overflow(at, batch, &at) || at != s.global_step)
    fail(path, "global_step " + std::to_string(s.global_step) + " disagrees with epoch " +
                   std::to_string(s.epoch) + " and epoch_samples " +
                   std::to_string(s.epoch_samples) + " (" + std::to_string(per_epoch) +
                   " batches an epoch)");
  if (s.global_step > total_steps)
    fail(path, "epoch " + std::to_string(s.epoch) + ", global step " +
                   std::to_string(s.global_step) + " is beyond this run's " +
                   std::to_string(total_steps) + " steps (" + std::to_string(per_epoch) +
                   " an epoch)");
}

std::string optimizer_file(const std::string& path) { return path + kOptimizerSuffix; }

namespace {

// {"steps": [[epoch, first, end], ...], "samples": [...]}; a range over several
// epochs (StepRange::epochs) is [epoch, first, end, epochs].
std::string skip_json(const SkipList& skip) {
  nlohmann::json steps = nlohmann::json::array();
  for (const StepRange& r : skip.steps) {
    if (r.epochs == 1)
      steps.push_back({r.epoch, r.first, r.end});
    else
      steps.push_back({r.epoch, r.first, r.end, r.epochs});
  }
  return nlohmann::json{{"steps", steps}, {"samples", skip.samples}}.dump();
}

SkipList parse_skip(const std::string& path, const std::string& text) {
  SkipList skip;
  try {
    const nlohmann::json j = parse_json<nlohmann::json>(text);
    for (const auto& r : j.at("steps")) {
      if (!r.is_array() || (r.size() != 3 && r.size() != 4))
        throw std::invalid_argument("a range that is not 3 or 4 numbers");
      const auto v = json_unsigned_list(r);
      const std::uint64_t epochs = v.size() == 4 ? v[3] : 1;
      if (v[1] >= v[2] || epochs == 0) throw std::invalid_argument("an empty range");
      skip.steps.push_back({v[0], v[1], v[2], epochs});
    }
    skip.samples = json_unsigned_list(j.at("samples"));
  } catch (const std::exception& e) {
    fail(path,
         "metadata 'skip' is not {\"steps\": [[epoch, first, end(, epochs)], ...], "
         "\"samples\": [...]}: " +
             std::string(e.what()));
  }
  return skip;
}

}  // namespace

void save_checkpoint(const std::string& path, std::span<const Stage> stages,
                     const CheckpointState& state) {
  const std::vector<Entry> weights = entries(stages, false),
                           states = entries(stages, true);
  HostBuffers host;
  auto bytes = [&](const Entry& e) {
    const float* p = host_buffer(host, e).data() + e.offset;
    return std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(p),
                                         e.count * sizeof(float));
  };
  const std::int64_t steps = stages.empty() ? 0 : stages[0].optimizer->steps();
  const std::string companion = optimizer_file(path);

  FileWrite opt;
  for (const Entry& e : states) opt.add(e.name, "F32", e.shape, bytes(e));
  opt.add("step", "I64", {1},
          {reinterpret_cast<const std::uint8_t*>(&steps), sizeof steps});
  opt.meta = {{"optimizer", state.optimizer.empty() ? "{}" : state.optimizer},
              {"params", param_names(stages).dump()},
              {"global_step", std::to_string(state.global_step)}};
  const std::string opt_checksum = opt.seal(kOptimizerFormat);

  FileWrite model;
  for (const Entry& e : weights) model.add(e.name, "F32", e.shape, bytes(e));
  model.meta = {{"config", state.config},
                {"base_seed", std::to_string(state.base_seed)},
                {"epoch", std::to_string(state.epoch)},
                {"epoch_samples", std::to_string(state.epoch_samples)},
                {"global_step", std::to_string(state.global_step)},
                {"run", std::to_string(state.run)},
                {"world_size", std::to_string(state.world_size)},
                {"workers", std::to_string(state.workers)},
                {"dataset_size", std::to_string(state.dataset_size)},
                {"dataset_fingerprint", hex(state.dataset_fingerprint)},
                {"skip", skip_json(state.skip)},
                {"optimizer_file", std::filesystem::path(companion).filename().string()},
                {"optimizer_checksum", opt_checksum}};
  if (!state.mixture.empty()) model.meta["mixture"] = state.mixture;
  model.seal(kFormat);

  const std::array<std::string, 2> tmp{companion + ".tmp", path + ".tmp"};
  {
    TempFileGuard guard(tmp);
    write_synced(tmp[0], opt);
    write_synced(tmp[1], model);
    // The companion first: a PATH is never newer than the companion it names.
    for (std::size_t f = 0; f < tmp.size(); ++f) {
      const std::string& to = f == 0 ? companion : path;
      if (std::rename(tmp[f].c_str(), to.c_str()) != 0)
        fail_sys("rename " + tmp[f] + " to", to);
      guard.commit(f);
    }
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  fsync_path(dir.empty() ? "." : dir, O_RDONLY | O_DIRECTORY);
}

CheckpointState load_checkpoint(const std::string& path, std::span<const Stage> stages) {
  const SafetensorsFile file = open_sealed(path, kFormat);
  const auto& meta = file.metadata();
  const std::string companion = optimizer_file(path);
  std::error_code ec;
  if (!std::filesystem::exists(companion, ec))
    fail(companion, "is missing: checkpoint " + path +
                        " keeps its optimizer state there (one save writes both; copy "
                        "or move them together)");
  const SafetensorsFile opt = open_sealed(companion, kOptimizerFormat);
  auto recorded = meta.find("optimizer_checksum");
  if (recorded == meta.end()) fail(path, "metadata has no 'optimizer_checksum'");
  const std::string& opt_sealed = opt.metadata().at("metadata_checksum");
  if (recorded->second != opt_sealed)
    fail(companion, "belongs to another save than " + path + " (its metadata_checksum " +
                        opt_sealed + " is not the " + recorded->second + " that " + path +
                        " records)");
  const std::vector<Entry> weights = entries(stages, false),
                           states = entries(stages, true);
  const std::vector<const SafetensorsTensor*> found_weights = match(file, weights);
  const std::vector<const SafetensorsTensor*> found_states = match(opt, states);
  const SafetensorsTensor* step = opt.find("step");
  if (!step || step->dtype != "I64" || step->shape != std::vector<std::uint64_t>{1})
    fail(companion, "no I64 [1] tensor 'step'");
  CheckpointState s;
  s.base_seed = meta_u64(path, meta, "base_seed");
  s.epoch = meta_u64(path, meta, "epoch");
  s.epoch_samples = meta_u64(path, meta, "epoch_samples");
  s.global_step = meta_u64(path, meta, "global_step");
  s.world_size = meta_u64(path, meta, "world_size");
  if (meta.count("run")) s.run = meta_u64(path, meta, "run");
  s.workers = meta_u64(path, meta, "workers");
  s.dataset_size = meta_u64(path, meta, "dataset_size");
  auto fp = meta.find("dataset_fingerprint");
  if (fp == meta.end()) fail(path, "metadata has no 'dataset_fingerprint'");
  auto [fp_end, fp_ec] =
      std::from_chars(fp->second.data(), fp->second.data() + fp->second.size(),
                      s.dataset_fingerprint, 16);
  if (fp_ec != std::errc() || fp_end != fp->second.data() + fp->second.size())
    fail(path, "metadata 'dataset_fingerprint' is not hex: '" + fp->second + "'");
  auto skip = meta.find("skip");
  if (skip != meta.end()) s.skip = parse_skip(path, skip->second);
  if (auto mixture = meta.find("mixture"); mixture != meta.end())
    s.mixture = mixture->second;
  auto config = meta.find("config");
  if (config == meta.end()) fail(path, "metadata has no 'config'");
  s.config = config->second;
  auto hyper = opt.metadata().find("optimizer");
  if (hyper != opt.metadata().end()) s.optimizer = hyper->second;
  std::int64_t steps = 0;
  opt.read(*step, 0, {reinterpret_cast<std::uint8_t*>(&steps), sizeof steps});
  if (steps < 0) fail(companion, "'step' is negative: " + std::to_string(steps));
  apply(file, weights, found_weights);
  apply(opt, states, found_states);
  for (const Stage& st : stages) st.optimizer->set_steps(steps);
  return s;
}

std::string load_weights(const std::string& path, std::span<const Stage> stages) {
  const SafetensorsFile file = open_weights(path);
  std::vector<Entry> want = entries(stages, false);
  // A state dict saved from a DDP- or DataParallel-wrapped model names every
  // parameter "module.<name>".
  std::string prefix;
  if (!want.empty() && file.find(want[0].name) == nullptr &&
      file.find(kWrappedPrefix + want[0].name) != nullptr)
    prefix = kWrappedPrefix;
  apply(file, want, match(file, want, prefix));
  return prefix;
}

}  // namespace seedloader::train

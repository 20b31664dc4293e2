// The datasets of the C++ library, each with its transform spec, the Dataset base
// they share (len(), fields, repr) and PythonDataset (python_dataset.h).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <tuple>
#include <vector>

#include "python/src/arrays.h"
#include "python/src/bindings.h"
#include "python/src/python_dataset.h"
#include "seedloader/datasets/cifar10.h"
#include "seedloader/datasets/image_folder.h"
#include "seedloader/datasets/mnist.h"
#include "seedloader/datasets/synthetic.h"
#include "seedloader/datasets/tar_shards.h"
#include "seedloader/datasets/tensor_file.h"
#include "seedloader/error.h"
#include "seedloader/transforms/spec.h"

namespace nb = nanobind;

namespace seedloader::python {
namespace {

using FieldTuple = std::tuple<std::string, std::string, std::vector<std::int64_t>>;
// (name, dtype, shape, variable): a Python dataset's field; shape is the
// maximum for a variable one.
using PythonField = std::tuple<std::string, std::string, std::vector<std::int64_t>, bool>;

Compose chain(const std::string& spec) {
  return spec.empty() ? Compose() : parse_transform_spec(spec);
}

Split split_of(const std::string& name) {
  if (name == "train") return Split::kTrain;
  if (name == "test") return Split::kTest;
  throw ConfigError("split must be 'train' or 'test', not '" + name + "'");
}

std::vector<FieldTuple> fields_of(const Dataset& d) {
  std::vector<FieldTuple> out;
  for (const FieldSpec& f : d.layout().fields())
    out.emplace_back(f.name, numpy_name(f.dtype), f.shape);
  return out;
}

SampleLayout layout_from(const std::vector<PythonField>& fields) {
  std::vector<FieldSpec> specs;
  for (const auto& [name, dtype, shape, variable] : fields) {
    for (std::int64_t d : shape) {
      // 0 is a dimension torch and numpy allow (an empty box list, no keypoints).
      if (d < 0) throw ConfigError("field '" + name + "': a dimension is negative");
    }
    specs.push_back(FieldSpec{name, dtype_from_name(dtype), shape, variable});
  }
  if (specs.empty()) throw ConfigError("a dataset needs at least one field");
  return SampleLayout(std::move(specs));
}

}  // namespace

void bind_datasets(nb::module_& m) {
  nb::class_<Dataset>(m, "Dataset", "A map-style source of samples with a fixed layout.")
      .def("__len__", &Dataset::size)
      .def_prop_ro("fields", &fields_of, "[(name, dtype, shape)] of one sample")
      .def("__repr__", &Dataset::describe);

  nb::class_<ImageFolder, Dataset>(m, "ImageFolder",
                                   "root/<class>/<image>, as torchvision's ImageFolder.")
      .def(
          "__init__",
          [](ImageFolder* self, const std::string& root, const std::string& transform,
             int channels, std::uint64_t max_pixels) {
            new (self) ImageFolder(root, chain(transform),
                                   ImageFolderOptions{max_pixels, channels});
          },
          nb::arg("root"), nb::arg("transform"), nb::arg("channels") = 3,
          nb::arg("max_pixels") = kDefaultMaxPixels)
      .def_prop_ro("classes", &ImageFolder::classes);

  nb::class_<Cifar10, Dataset>(m, "Cifar10",
                               "CIFAR-10, binary (cifar-10-batches-bin) or torchvision's "
                               "pickled download (cifar-10-batches-py).")
      .def(
          "__init__",
          [](Cifar10* self, const std::string& dir, const std::string& split,
             const std::string& transform) {
            new (self) Cifar10(dir, split_of(split), chain(transform));
          },
          nb::arg("dir"), nb::arg("split") = "train", nb::arg("transform") = "");

  nb::class_<Mnist, Dataset>(m, "Mnist", "MNIST's idx files.")
      .def(
          "__init__",
          [](Mnist* self, const std::string& dir, const std::string& split,
             const std::string& transform) {
            new (self) Mnist(dir, split_of(split), chain(transform));
          },
          nb::arg("dir"), nb::arg("split") = "train", nb::arg("transform") = "");

  nb::class_<TensorFile, Dataset>(m, "TensorFile",
                                  "Named tensors [N, ...] of a .safetensors file.")
      .def(nb::init<std::string, std::vector<std::string>>(), nb::arg("path"),
           nb::arg("names") = std::vector<std::string>());

  nb::class_<TarShards, Dataset>(m, "TarShards", "WebDataset-style tar shards.")
      .def(
          "__init__",
          [](TarShards* self, const std::string& pattern,
             const std::optional<std::string>& transform, const std::string& label_ext,
             int channels, std::uint64_t max_pixels, const std::string& cache_dir,
             std::uint64_t cache_limit, bool verify_shards, int prefetch_shards,
             const std::string& cache_verify, int max_attempts, double stall_timeout_s,
             double min_rate_bytes_s, double deadline_s, std::uint64_t max_index_bytes,
             bool anonymous, double index_deadline_s) {
            // Optional in the signature only so that leaving it out is a
            // ConfigError saying so, not the binding's TypeError.
            if (!transform) {
              throw ConfigError(
                  "TarShards(" + pattern +
                  "): transform is missing: give a chain that fixes the image size, "
                  "e.g. transform=\"rrc:224,hflip\" or \"centercrop:224\"");
            }
            TarShardsOptions options;
            options.label_ext = label_ext;
            options.channels = channels;
            options.max_pixels = max_pixels;
            options.cache_dir = cache_dir;
            options.cache_limit = cache_limit;
            options.verify_shards = verify_shards;
            options.prefetch_shards = prefetch_shards;
            const std::optional<CacheVerify> verify = parse_cache_verify(cache_verify);
            if (!verify) {
              throw ConfigError("cache_verify must be 'stat', 'hash' or 'none', not '" +
                                cache_verify + "'");
            }
            options.cache_verify = *verify;
            options.max_attempts = max_attempts;
            options.stall_timeout_s = stall_timeout_s;
            options.min_rate_bytes_s = min_rate_bytes_s;
            options.deadline_s = deadline_s;
            options.max_index_bytes = max_index_bytes;
            options.anonymous = anonymous;
            options.index_deadline_s = index_deadline_s;
            Compose parsed = chain(*transform);
            // A URL's index is read here, over the network: other threads run
            // meanwhile (a server in this process included).
            nb::gil_scoped_release unlocked;
            new (self) TarShards(pattern, std::move(parsed), options);
          },
          nb::arg("pattern"), nb::arg("transform").none() = nb::none(),
          nb::arg("label_ext") = "cls", nb::arg("channels") = 3,
          nb::arg("max_pixels") = kDefaultMaxPixels, nb::arg("cache_dir") = "",
          nb::arg("cache_limit") = 0, nb::arg("verify_shards") = true,
          nb::arg("prefetch_shards") = 4, nb::arg("cache_verify") = "stat",
          nb::arg("max_attempts") = 6, nb::arg("stall_timeout_s") = 30.0,
          nb::arg("min_rate_bytes_s") = 1024.0, nb::arg("deadline_s") = 0.0,
          nb::arg("max_index_bytes") = 256ull << 20, nb::arg("anonymous") = false,
          nb::arg("index_deadline_s") = 60.0,
          "A shard pattern, a packed folder (its index.json), or the URL of one: "
          "s3://bucket/prefix/, https://host/path/ or http://...; remote shards are "
          "read through a cache in cache_dir (default $SEEDLOADER_CACHE_DIR, else "
          "~/.cache/seedloader) bounded by cache_limit bytes, shards and their "
          "sidecars together (0: no bound), each "
          "worker downloading the shards of its next batches ahead (prefetch_shards "
          "of them; 0: none). cache_verify: how a cached shard is checked when a "
          "process first opens it: 'stat' (inode, size and modification time against "
          "those at download), 'hash' (its XXH64 in full) or 'none'; one that fails is "
          "downloaded again. max_attempts: attempts per object that make no "
          "progress; a transfer below min_rate_bytes_s over stall_timeout_s seconds "
          "is cut off (and counts as one); deadline_s bounds one object's whole read "
          "(0: none); index.json may hold at most max_index_bytes, read within "
          "index_deadline_s seconds (retries included; 0: no bound but deadline_s and "
          "the attempts'). s3:// requests are "
          "signed with credentials found as the AWS CLI finds them (none is an error "
          "listing where it looked); anonymous=True sends them unsigned (a public "
          "bucket), as AWS_NO_SIGN_REQUEST=true does.")
      .def_prop_ro(
          "prefetch_errors",
          [](const TarShards& self) {
            const PrefetchErrors errors = self.prefetch_errors();
            return nb::make_tuple(errors.count, errors.first);
          },
          "(count, first message) of the downloads ahead of the reads that failed so "
          "far, in this process and its workers together (a read that needs such a "
          "shard fetches it itself, and its failure quotes these); (0, '') for local "
          "shards.");

  nb::class_<Synthetic, Dataset>(m, "Synthetic", "n generated h x w x c images.")
      .def(
          "__init__",
          [](Synthetic* self, std::uint64_t n, int h, int w, int c,
             const std::string& transform, int classes) {
            new (self) Synthetic(n, h, w, c, chain(transform), classes);
          },
          nb::arg("n"), nb::arg("h"), nb::arg("w"), nb::arg("c") = 3,
          nb::arg("transform") = "", nb::arg("classes") = 10);

  nb::class_<PythonDataset, Dataset>(m, "PythonDataset")
      .def(
          "__init__",
          [](PythonDataset* self, nb::object dataset,
             const std::vector<PythonField>& fields, nb::object flatten, bool takes_rng,
             nb::object replay) {
            new (self) PythonDataset(std::move(dataset), layout_from(fields),
                                     std::move(flatten), takes_rng, std::move(replay));
          },
          nb::arg("dataset"), nb::arg("fields"), nb::arg("flatten"), nb::arg("takes_rng"),
          nb::arg("replay").none() = nb::none())
      .def_prop_ro("dataset",
                   [](const PythonDataset& d) { return nb::borrow(d.object()); });
}

}  // namespace seedloader::python

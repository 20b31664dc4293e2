// Writes the seed corpora of the fuzz targets: small valid files of every format,
// made with the project's own writers (write_safetensors), OpenCV, turbojpeg and
// libarchive, as the tests make theirs. Deterministic; the output is committed
// under tests/fuzz/corpus/<target>/ so fuzzing starts from inputs that get past
// the magic numbers. Regenerate with
//   build/fuzz/tests/fuzz/make_fuzz_corpus tests/fuzz/corpus
#include <archive.h>
#include <archive_entry.h>
#include <turbojpeg.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>

#include "loader/datasets/jpeg_restart.h"
#include "loader/datasets/safetensors.h"
#include "tests/datasets/cifar_pickle_writer.h"

namespace {

using Bytes = std::vector<std::uint8_t>;
namespace fs = std::filesystem;

fs::path root;

void put(const std::string& target, const std::string& name, const void* data,
         std::size_t size) {
  fs::create_directories(root / target);
  std::ofstream out(root / target / name, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) throw std::runtime_error("cannot write " + (root / target / name).string());
}
void put(const std::string& target, const std::string& name, const Bytes& b) {
  put(target, name, b.data(), b.size());
}
void put(const std::string& target, const std::string& name, const std::string& s) {
  put(target, name, s.data(), s.size());
}

Bytes text(const std::string& s) { return {s.begin(), s.end()}; }

cv::Mat pattern(int rows, int cols, int channels) {
  cv::Mat m(rows, cols, CV_8UC(channels));
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols * channels; ++c) m.ptr(r)[c] = (r * 29 + c * 13) & 0xff;
  }
  return m;
}

Bytes encode(const std::string& ext, const cv::Mat& image, std::vector<int> params = {}) {
  Bytes out;
  if (!cv::imencode(ext, image, out, params)) throw std::runtime_error("imencode " + ext);
  return out;
}

// A JPEG from turbojpeg's compressor: CMYK (as Photoshop writes them) or a
// subsampling OpenCV's encoder does not offer.
Bytes tj_jpeg(int rows, int cols, int format, int subsampling) {
  cv::Mat image = pattern(rows, cols, tjPixelSize[format]);
  tjhandle compressor = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  if (tjCompress2(compressor, image.data, cols, static_cast<int>(image.step), rows,
                  format, &jpeg, &size, subsampling, 90, 0) != 0)
    throw std::runtime_error("tjCompress2");
  Bytes bytes(jpeg, jpeg + size);
  tjFree(jpeg);
  tjDestroy(compressor);
  return bytes;
}

void images() {
  const std::string t = "image_decode_fuzzer";
  put(t, "rgb_420.jpg",
      encode(".jpg", pattern(16, 24, 3), {cv::IMWRITE_JPEG_QUALITY, 80}));
  put(t, "grey.jpg", encode(".jpg", pattern(17, 9, 1)));
  put(t, "progressive.jpg",
      encode(".jpg", pattern(24, 16, 3), {cv::IMWRITE_JPEG_PROGRESSIVE, 1}));
  put(t, "rgb_444.jpg", tj_jpeg(8, 40, TJPF_RGB, TJSAMP_444));
  put(t, "rgb_422.jpg", tj_jpeg(9, 33, TJPF_RGB, TJSAMP_422));
  put(t, "cmyk.jpg", tj_jpeg(16, 24, TJPF_CMYK, TJSAMP_444));
  put(t, "rgb.png", encode(".png", pattern(7, 5, 3)));
  put(t, "grey.png", encode(".png", pattern(6, 6, 1)));
  put(t, "rgba.png", encode(".png", pattern(4, 9, 4)));
  put(t, "rgb.bmp", encode(".bmp", pattern(5, 3, 3)));
  put(t, "rgb.webp", encode(".webp", pattern(8, 8, 3)));
  put(t, "grey.pgm", encode(".pgm", pattern(6, 5, 1)));
  put(t, "rgb.ppm", encode(".ppm", pattern(5, 4, 3)));
  cv::Mat wide;
  pattern(4, 3, 1).convertTo(wide, CV_16U, 257);
  put(t, "grey16.pgm", encode(".pgm", wide));
  const std::string plain = "P3\n# plain\n2 2\n1000\n0 1 2 999 500 3 7 1000 4 5 6 8\n";
  put(t, "plain_1000.ppm", plain.data(), plain.size());
  put(t, "rgb.tif", encode(".tiff", pattern(5, 4, 3)));
  put(t, "grey16.tif", encode(".tiff", wide));
}

// jpeg_restart_fuzzer's inputs: u32 LE N, a .rst member of N bytes, its JPEG; or
// 0x80 0 0 d (LE), the JPEG, for its own index with each marker moved by d.
void restarts() {
  const std::string t = "jpeg_restart_fuzzer";
  auto emit = [&](const std::string& name, const Bytes& jpeg) {
    const auto r = seedloader::add_restarts(jpeg, nullptr);
    if (!r) throw std::runtime_error("add_restarts " + name);
    const Bytes index = seedloader::encode_restart_index(r->index);
    Bytes input;
    for (int i = 0; i < 4; ++i)
      input.push_back(static_cast<std::uint8_t>(index.size() >> (8 * i)));
    input.insert(input.end(), index.begin(), index.end());
    input.insert(input.end(), r->jpeg.begin(), r->jpeg.end());
    put(t, name, input);
  };
  emit("rgb_420.rst", encode(".jpg", pattern(40, 24, 3), {cv::IMWRITE_JPEG_QUALITY, 80}));
  emit("grey.rst", encode(".jpg", pattern(33, 9, 1)));
  emit("rgb_444.rst", tj_jpeg(24, 40, TJPF_RGB, TJSAMP_444));
  emit("rgb_422.rst", tj_jpeg(41, 33, TJPF_RGB, TJSAMP_422));
  emit("rgb_440.rst", tj_jpeg(35, 17, TJPF_RGB, TJSAMP_440));
  auto emit_shift = [&](const std::string& name, const Bytes& jpeg, std::int8_t d) {
    const auto r = seedloader::add_restarts(jpeg, nullptr);
    if (!r) throw std::runtime_error("add_restarts " + name);
    Bytes input = {static_cast<std::uint8_t>(d), 0, 0, 0x80};
    input.insert(input.end(), r->jpeg.begin(), r->jpeg.end());
    put(t, name, input);
  };
  // 6 x 5 intervals of one MCU: shifts by 8 that leave real markers to use.
  emit_shift("shift_ahead_8.rst", tj_jpeg(40, 48, TJPF_RGB, TJSAMP_444), 8);
  emit_shift("shift_behind_8.rst", tj_jpeg(40, 48, TJPF_RGB, TJSAMP_444), -8);
  emit_shift("shift_none.rst", tj_jpeg(40, 48, TJPF_RGB, TJSAMP_444), 0);
}

void safetensors() {
  using seedloader::SafetensorsWrite;
  const std::string t = "safetensors_fuzzer";
  const std::string tmp = (root / "tmp.safetensors").string();
  auto emit = [&](const std::string& name, std::span<const SafetensorsWrite> tensors,
                  const std::map<std::string, std::string>& metadata) {
    seedloader::write_safetensors(tmp, tensors, metadata);
    std::ifstream in(tmp, std::ios::binary);
    put(t, name, Bytes(std::istreambuf_iterator<char>(in), {}));
    fs::remove(tmp);
  };
  std::vector<float> x(24);
  std::iota(x.begin(), x.end(), 0.0f);
  std::vector<std::int64_t> y = {10, 11, 12, 13};
  std::vector<std::uint8_t> u = {1, 2, 3};
  std::vector<float> one = {1.5f};
  auto bytes = [](const auto& v) {
    return std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(v.data()),
                                         v.size() * sizeof(v[0]));
  };
  const SafetensorsWrite xy[] = {{"x", "F32", {4, 2, 3}, bytes(x)},
                                 {"y", "I64", {4}, bytes(y)}};
  emit("xy.safetensors", xy, {{"epoch", "3"}, {"world_size", "2"}});
  const SafetensorsWrite small[] = {{"0.weight", "U8", {3}, bytes(u)},
                                    {"scalar", "F32", {}, bytes(one)},
                                    {"empty", "F32", {0, 2}, {}}};
  emit("small.safetensors", small, {});
  emit("metadata_only.safetensors", {}, {{"base_seed", "42"}});
}

void tar(const std::string& name,
         const std::vector<std::pair<std::string, Bytes>>& members, bool gnu) {
  const std::string tmp = (root / "tmp.tar").string();
  archive* a = archive_write_new();
  if (gnu) {
    archive_write_set_format_gnutar(a);
  } else {
    archive_write_set_format_pax_restricted(a);
  }
  archive_write_set_bytes_in_last_block(a, 1);  // no padding to 10 KiB
  if (archive_write_open_filename(a, tmp.c_str()) != ARCHIVE_OK)
    throw std::runtime_error(archive_error_string(a));
  for (const auto& [path, data] : members) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, path.c_str());
    archive_entry_set_perm(e, 0644);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_size(e, static_cast<la_int64_t>(data.size()));
    if (archive_write_header(a, e) != ARCHIVE_OK)
      throw std::runtime_error(archive_error_string(a));
    archive_write_data(a, data.data(), data.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  std::ifstream in(tmp, std::ios::binary);
  put("tar_shards_fuzzer", name, Bytes(std::istreambuf_iterator<char>(in), {}));
  fs::remove(tmp);
}

void tars() {
  const Bytes png = encode(".png", pattern(10, 12, 3));
  const Bytes jpg = encode(".jpg", pattern(16, 16, 3));
  tar("png_pax.tar",
      {{"s/0.cls", text("3\n")},
       {"s/0.png", png},
       {"s/0.json", text("{}")},
       {"s/1.png", png},
       {"s/1.cls", text("7")}},
      false);
  tar("jpg_gnu_longname.tar",
      {{"deep/" + std::string(120, 'n') + "/k0.jpg", jpg},
       {"deep/" + std::string(120, 'n') + "/k0.cls", text("1\n")}},
      true);
}

void be32(Bytes& b, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(v >> s));
}

void mnist() {
  // The target takes an even-sized input as the images file, an odd-sized one as
  // the labels file.
  const std::string t = "mnist_fuzzer";
  Bytes images;
  be32(images, 0x00000803);
  be32(images, 3);
  be32(images, 4);
  be32(images, 4);
  for (int i = 0; i < 48; ++i) images.push_back(static_cast<std::uint8_t>(i * 5));
  put(t, "images_3x4x4", images);  // 64 bytes
  Bytes big;
  be32(big, 0x00000803);
  be32(big, 1);
  be32(big, 28);
  be32(big, 28);
  for (int i = 0; i < 784; ++i) big.push_back(static_cast<std::uint8_t>(i));
  put(t, "images_1x28x28", big);  // 800 bytes
  Bytes labels;
  be32(labels, 0x00000801);
  be32(labels, 3);
  for (std::uint8_t l : {7, 2, 9}) labels.push_back(l);
  put(t, "labels_3", labels);  // 11 bytes
}

void cifar() {
  const std::string t = "cifar10_fuzzer";
  Bytes one(3073);
  one[0] = 6;
  for (std::size_t i = 1; i < one.size(); ++i) one[i] = static_cast<std::uint8_t>(i * 3);
  put(t, "test_batch_1", one);  // odd size: the hflip,u8 chain
  Bytes two = one;
  two.insert(two.end(), one.begin(), one.end());
  two[3073] = 9;
  put(t, "test_batch_2", two);  // even size: the float chain
  // The pickled layout (cifar-10-batches-py), as Python 2's cPickle wrote it.
  seedloader::testing::CifarPickleOptions o;
  o.rows = 1;
  put(t, "pickled_test_batch_1", seedloader::testing::cifar_pickle_batch(o));
  o.rows = 2;
  o.first = 5;
  put(t, "pickled_test_batch_2", seedloader::testing::cifar_pickle_batch(o));
  put(t, "pickled_batches_meta", seedloader::testing::cifar_pickle_meta());
}

void texts() {
  const std::string tr = "trace_reader_fuzzer";
  put(tr, "plain.jsonl",
      std::string(
          R"({"rank":0,"epoch":0,"worker":1,"batch":3,"index":17,"rng":"a1b2"})") +
          "\n" + R"({"rank":0,"epoch":0,"worker":0,"batch":2,"index":4,"rng":"c3"})" +
          "\n");
  put(tr, "content_aug.jsonl",
      std::string(
          R"( {"rank":1, "epoch":2,"worker":3,"batch":4,"index":5,"rng":"ab","content":"c",)") +
          R"("aug":{"crop":[1,2]},"extra":[1,{"x":"}"}]} )" + "\n\n" +
          R"({"rank":1,"epoch":2,"worker":3,"batch":4,"index":6,"rng":"a\u0062\n","content":12345,"aug":[0.5,true,null]})" +
          "\n");
  const std::string ts = "transform_spec_fuzzer";
  int i = 0;
  for (const char* spec : {"rrc:224,hflip,jitter:0.4:0.4:0.4:0.1,normalize:imagenet",
                           "crop:8:2,vflip:0.3,u8", "centercrop:6x4,totensor",
                           "resize:10,rotate:15,normalize:0.5:0.25",
                           "resize:9x7,blur:3:0.1:2.0,normalize:0.1:0.2:0.3:0.4:0.5:0.6",
                           "rrc:8x6:0.5:1:0.75:1.3333,hflip:1"}) {
    put(ts, "spec_" + std::to_string(i++), spec);
  }
  const std::string mj = "mixture_json_fuzzer";
  put(mj, "spec_weights.json",
      std::string(
          R"({"sources": {"web": "tar:s3://b/web", "curated": "synthetic:50"},)") +
          R"( "weights": {"web": 3, "curated": 1}})");
  put(mj, "spec_schedule.json",
      std::string(R"({"sources": {"a": "synthetic:13", "b": "synthetic:50"},)") +
          R"( "weights": [[0, {"a": 1, "b": 3}], [7, {"a": 0.5, "b": 0}],)" +
          R"( [9000, {"a": 1, "b": 1}]], "samples_per_epoch": 60, "interpolate": true})");
  put(mj, "state_resumed.json",
      std::string(R"({"step": 12, "samples_per_epoch": 60, "epoch_first_step": 10,)") +
          R"( "sources": {"a": {"size": 13, "epoch": 2, "consumed": 36,)" +
          R"( "epoch_first_count": 30}, "b": {"size": 50, "epoch": 2, "consumed": 108,)" +
          R"( "epoch_first_count": 90}}, "history": [[0, ["a", "b"], [[0, [1.0, 3.0]]],)" +
          R"( [], false], [10, ["a", "b"], [[0, [1.0, 1.0]]], [30, 90], true]]})");
  // Nested 30000 deep: parsed whole, it crashed the readers (a stack overflow in
  // what recursed over the document).
  std::string deep = R"({"step": 0, "sources": )";
  for (int d = 0; d < 30000; ++d) deep += R"({"a":)";
  deep += "1" + std::string(30000, '}') + "}";
  put(mj, "regress_deep_nesting", deep);
  const std::string ms = "model_spec_fuzzer";
  i = 0;
  for (const char* spec : {"mlp:784,128,10", "mlp:3072,64,32,10", "mlp:10,5", "cnn:small",
                           "cnn:small:100"}) {
    put(ms, "model_" + std::to_string(i++), spec);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_fuzz_corpus OUT_DIR\n";
    return 2;
  }
  root = argv[1];
  try {
    images();
    restarts();
    safetensors();
    tars();
    mnist();
    cifar();
    texts();
  } catch (const std::exception& e) {
    std::cerr << "make_fuzz_corpus: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

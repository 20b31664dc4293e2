// Writes CIFAR-10 batches in the byte layout Python 2's cPickle gives them at
// protocol 2 (the files of cifar-10-python.tar.gz): memo indices from 1, BINPUT
// after objects that cPickle memoizes (strings, lists, the dict, GLOBALs, REDUCE
// results) and not after ints or the short tuples, lists in MARK..APPENDS batches
// of 1000 (one APPEND for a batch of one), the raw pixel bytes as BINSTRING.
// PickleWriter is the opcode layer; the options make the hostile variants the
// tests need. Used by the dataset tests and the fuzz corpus generator.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace seedloader::testing {

class PickleWriter {
 public:
  std::vector<std::uint8_t> bytes;

  void op(std::uint8_t code) { bytes.push_back(code); }
  void le(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  // cPickle's memo: BINPUT below 256, LONG_BINPUT from there on.
  void put() {
    if (memo_ < 256) {
      op('q');
      le(memo_, 1);
    } else {
      op('r');
      le(memo_, 4);
    }
    ++memo_;
  }
  // The int opcodes cPickle chooses by value.
  void integer(std::int64_t v) {
    if (v >= 0 && v < 256) {
      op('K');
      le(static_cast<std::uint64_t>(v), 1);
    } else if (v >= 0 && v < 65536) {
      op('M');
      le(static_cast<std::uint64_t>(v), 2);
    } else {
      op('J');
      le(static_cast<std::uint32_t>(static_cast<std::int32_t>(v)), 4);
    }
  }
  // A Python 2 str: SHORT_BINSTRING below 256 bytes, else BINSTRING.
  void string(const std::string& s, bool memoize = true) {
    if (s.size() < 256) {
      op('U');
      le(s.size(), 1);
    } else {
      op('T');
      le(s.size(), 4);
    }
    bytes.insert(bytes.end(), s.begin(), s.end());
    if (memoize) put();
  }
  void global(const std::string& module, const std::string& name) {
    op('c');
    for (const std::string& part : {module, name}) {
      bytes.insert(bytes.end(), part.begin(), part.end());
      op('\n');
    }
    put();
  }
  // PROTO 2, EMPTY_DICT and the MARK of its one SETITEMS batch.
  void begin_dict() {
    op(0x80);
    op(2);
    op('}');
    put();
    op('(');
  }
  // SETITEMS, STOP.
  void end_dict() {
    op('u');
    op('.');
  }
  // EMPTY_LIST, then `n` items written by item(i), batched as cPickle does.
  template <typename Item>
  void list(std::size_t n, Item item) {
    op(']');
    put();
    for (std::size_t start = 0; start < n; start += 1000) {
      const std::size_t end = std::min(n, start + 1000);
      if (end - start == 1) {
        item(start);
        op('a');
        continue;
      }
      op('(');
      for (std::size_t i = start; i < end; ++i) item(i);
      op('e');
    }
  }

 private:
  std::uint32_t memo_ = 1;
};

// What a batch holds, and the departures from the published layout a test asks for.
struct CifarPickleOptions {
  std::size_t rows = 3;
  int first = 0;                     // pixels and labels as for sample `first + r`
  std::string dtype = "u1";          // the dtype string
  std::int64_t columns = 3072;       // the shape's second dimension
  std::int64_t label_override = -1;  // when >= 0, row 0's label
  std::size_t labels = SIZE_MAX;     // the labels list's length (default: rows)
  bool extra_key = false;            // a fifth key, "extra"
  bool fortran = false;              // NEWTRUE as the order flag
};

// Row r's pixel p (of 3072) and label, for sample s = first + r.
inline std::uint8_t cifar_pickle_pixel(int s, int p) {
  return static_cast<std::uint8_t>(p * 5 + 11 * s + p / 1024 * 40);
}
inline int cifar_pickle_label(int s) { return (s * 3 + 1) % 10; }

inline std::vector<std::uint8_t> cifar_pickle_batch(const CifarPickleOptions& o) {
  PickleWriter w;
  w.begin_dict();
  w.string("data");
  w.global("numpy.core.multiarray", "_reconstruct");
  w.global("numpy", "ndarray");
  w.integer(0);
  w.op(0x85);  // TUPLE1
  w.string("b", false);
  w.op(0x87);  // TUPLE3
  w.op('R');
  w.put();
  w.op('(');
  w.integer(1);
  w.integer(static_cast<std::int64_t>(o.rows));
  w.integer(o.columns);
  w.op(0x86);  // TUPLE2
  w.global("numpy", "dtype");
  w.string(o.dtype, false);
  w.integer(0);
  w.integer(1);
  w.op(0x87);
  w.op('R');
  w.put();
  w.op('(');
  w.integer(3);
  w.string("|", false);
  w.op('N');
  w.op('N');
  w.op('N');
  w.integer(-1);
  w.integer(-1);
  w.integer(0);
  w.op('t');
  w.op('b');
  w.op(o.fortran ? 0x88 : 0x89);
  std::string pixels(o.rows * static_cast<std::size_t>(o.columns), '\0');
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    const auto c = static_cast<std::size_t>(o.columns);
    pixels[i] = static_cast<char>(
        cifar_pickle_pixel(o.first + static_cast<int>(i / c), static_cast<int>(i % c)));
  }
  w.op('T');  // BINSTRING, as cPickle writes a str of 256 bytes or more
  w.le(pixels.size(), 4);
  w.bytes.insert(w.bytes.end(), pixels.begin(), pixels.end());
  w.op('t');
  w.op('b');
  w.string("labels");
  const std::size_t labels = o.labels == SIZE_MAX ? o.rows : o.labels;
  w.list(labels, [&](std::size_t r) {
    w.integer(r == 0 && o.label_override >= 0
                  ? o.label_override
                  : cifar_pickle_label(o.first + static_cast<int>(r)));
  });
  w.string("batch_label");
  w.string("training batch 1 of 5");
  w.string("filenames");
  w.list(o.rows, [&](std::size_t r) {
    w.string("sample_" + std::to_string(o.first + static_cast<int>(r)) + ".png");
  });
  if (o.extra_key) {
    w.string("extra");
    w.integer(7);
  }
  w.end_dict();
  return w.bytes;
}

// batches.meta: label_names (10 names), num_cases_per_batch, num_vis.
inline std::vector<std::uint8_t> cifar_pickle_meta(std::size_t rows_per_batch = 3) {
  static const char* const kNames[] = {"airplane", "automobile", "bird", "cat",
                                       "deer",     "dog",        "frog", "horse",
                                       "ship",     "truck"};
  PickleWriter w;
  w.begin_dict();
  w.string("num_cases_per_batch");
  w.integer(static_cast<std::int64_t>(rows_per_batch));
  w.string("label_names");
  w.list(10, [&](std::size_t i) { w.string(kNames[i]); });
  w.string("num_vis");
  w.integer(3072);
  w.end_dict();
  return w.bytes;
}

}  // namespace seedloader::testing

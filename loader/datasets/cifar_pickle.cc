#include "loader/datasets/cifar_pickle.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string_view>

#include "seedloader/error.h"

namespace seedloader {
namespace {

// The protocol-2 opcodes this reader knows: the accepted ones, and a few
// others only so that an error can name what it found.
enum Op : std::uint8_t {
  kProto = 0x80,
  kEmptyDict = '}',
  kEmptyList = ']',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kMark = '(',
  kShortBinString = 'U',
  kBinString = 'T',
  kBinUnicode = 'X',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kBinInt2 = 'M',
  kGlobal = 'c',
  kTuple = 't',
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kReduce = 'R',
  kBuild = 'b',
  kNewFalse = 0x89,
  kNewTrue = 0x88,
  kNone = 'N',
  kAppend = 'a',
  kAppends = 'e',
  kSetItem = 's',
  kSetItems = 'u',
  kStop = '.',
};

std::string op_name(std::uint8_t op) {
  static constexpr std::pair<std::uint8_t, const char*> kNames[] = {
      {kProto, "PROTO"},
      {kEmptyDict, "EMPTY_DICT"},
      {kEmptyList, "EMPTY_LIST"},
      {kBinPut, "BINPUT"},
      {kLongBinPut, "LONG_BINPUT"},
      {kMark, "MARK"},
      {kShortBinString, "SHORT_BINSTRING"},
      {kBinString, "BINSTRING"},
      {kBinUnicode, "BINUNICODE"},
      {kBinInt, "BININT"},
      {kBinInt1, "BININT1"},
      {kBinInt2, "BININT2"},
      {kGlobal, "GLOBAL"},
      {kTuple, "TUPLE"},
      {kTuple1, "TUPLE1"},
      {kTuple2, "TUPLE2"},
      {kTuple3, "TUPLE3"},
      {kReduce, "REDUCE"},
      {kBuild, "BUILD"},
      {kNewFalse, "NEWFALSE"},
      {kNewTrue, "NEWTRUE"},
      {kNone, "NONE"},
      {kAppend, "APPEND"},
      {kAppends, "APPENDS"},
      {kSetItem, "SETITEM"},
      {kSetItems, "SETITEMS"},
      {kStop, "STOP"},
      {'h', "BINGET"},
      {'j', "LONG_BINGET"},
      {'g', "GET"},
      {'p', "PUT"},
      {'i', "INST"},
      {'o', "OBJ"},
      {0x81, "NEWOBJ"},
      {0x8a, "LONG1"},
      {'L', "LONG"},
      {'I', "INT"},
      {'S', "STRING"},
      {'V', "UNICODE"},
      {'F', "FLOAT"},
      {'G', "BINFLOAT"},
      {')', "EMPTY_TUPLE"},
      {'l', "LIST"},
      {'d', "DICT"},
      {'0', "POP"},
      {'2', "DUP"},
      {'P', "PERSID"},
      {'Q', "BINPERSID"},
      {0x82, "EXT1"},
      {0x95, "FRAME"},
  };
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", op);
  for (const auto& [code, name] : kNames) {
    if (code == op) return std::string(name) + " (" + hex + ")";
  }
  return std::string("opcode ") + hex;
}

// Buffered positioned reads over the file, with the position of the opcode
// being parsed kept for the error messages.
class Cursor {
 public:
  explicit Cursor(const FileHandle& file) : file_(file), size_(file.size()) {}

  std::uint64_t pos() const { return pos_; }
  std::uint64_t remaining() const { return size_ - pos_; }
  const std::string& path() const { return file_.path(); }

  [[noreturn]] void fail(std::uint64_t at, const std::string& what) const {
    throw DataError("Cifar10: " + path() + ": byte " + std::to_string(at) + ": " + what +
                    " (not the cPickle layout of a CIFAR-10 batch)");
  }

  // The next byte; a DataError at the end of the file.
  std::uint8_t peek() {
    if (pos_ >= size_) fail(pos_, "the file ends inside the pickle (truncated?)");
    if (pos_ < buffer_start_ || pos_ >= buffer_start_ + buffer_.size()) {
      buffer_start_ = pos_;
      file_.read_at(pos_, std::min<std::uint64_t>(kChunk, size_ - pos_), buffer_);
    }
    return buffer_[pos_ - buffer_start_];
  }
  // Back to a position already passed (a bounded look-ahead).
  void seek(std::uint64_t pos) { pos_ = pos; }
  std::uint8_t byte() {
    const std::uint8_t b = peek();
    ++pos_;
    return b;
  }
  // A little-endian unsigned integer of `n` bytes.
  std::uint32_t le(int n) {
    std::uint32_t v = 0;
    for (int i = 0; i < n; ++i) v |= std::uint32_t{byte()} << (8 * i);
    return v;
  }
  // Moves past `n` bytes that must lie inside the file.
  void skip(std::uint64_t at, std::uint64_t n) {
    if (n > remaining()) {
      fail(at, "a length of " + std::to_string(n) +
                   " bytes runs past the end of the file (" +
                   std::to_string(remaining()) + " bytes left)");
    }
    pos_ += n;
  }

 private:
  static constexpr std::uint64_t kChunk = 64 * 1024;
  const FileHandle& file_;
  std::uint64_t size_;
  std::uint64_t pos_ = 0;
  std::uint64_t buffer_start_ = 0;
  std::vector<std::uint8_t> buffer_;
};

struct StringRef {
  std::uint64_t offset = 0;  // of the first content byte
  std::uint64_t size = 0;
};

// The grammar of the two dicts, one function per production. Each consumes
// exactly its opcodes or throws.
class Parser {
 public:
  explicit Parser(const FileHandle& file) : in_(file) {}

  [[noreturn]] void fail(std::uint64_t at, const std::string& what) const {
    in_.fail(at, what);
  }

  void expect(std::uint8_t op, const char* context) {
    const std::uint64_t at = in_.pos();
    const std::uint8_t got = in_.byte();
    if (got != op) {
      fail(at, "expected " + op_name(op) + " " + context + ", found " + op_name(got));
    }
  }

  // An optional BINPUT or LONG_BINPUT after an object. The memo is never read
  // (BINGET is refused), so the index is only skipped.
  void memo() {
    if (in_.remaining() == 0) return;
    const std::uint8_t op = in_.peek();
    if (op == kBinPut) {
      in_.byte();
      in_.byte();
    } else if (op == kLongBinPut) {
      in_.byte();
      in_.le(4);
    }
  }

  static bool is_int(std::uint8_t op) {
    return op == kBinInt1 || op == kBinInt2 || op == kBinInt;
  }
  static bool is_string(std::uint8_t op) {
    return op == kShortBinString || op == kBinString || op == kBinUnicode;
  }

  std::int64_t integer(const std::string& context) {
    const std::uint64_t at = in_.pos();
    const std::uint8_t op = in_.byte();
    switch (op) {
      case kBinInt1:
        return in_.le(1);
      case kBinInt2:
        return in_.le(2);
      case kBinInt:
        return static_cast<std::int32_t>(in_.le(4));
      default:
        fail(at, "expected an integer (BININT1, BININT2 or BININT) " + context +
                     ", found " + op_name(op));
    }
  }

  void integer_equal(std::int64_t want, const char* context) {
    const std::uint64_t at = in_.pos();
    const std::int64_t got = integer(std::string("for ") + context);
    if (got != want) {
      fail(at, std::string(context) + " is " + std::to_string(got) + ", expected " +
                   std::to_string(want));
    }
  }

  // A string opcode and its length; the position is then at its first byte.
  std::uint64_t string_header(std::uint64_t at, const std::string& context) {
    const std::uint8_t op = in_.byte();
    if (op == kShortBinString) return in_.le(1);
    if (op == kBinUnicode) return in_.le(4);
    if (op == kBinString) {
      const auto n = static_cast<std::int32_t>(in_.le(4));
      if (n < 0) fail(at, "BINSTRING with a negative length " + std::to_string(n));
      return static_cast<std::uint64_t>(n);
    }
    if (op == kGlobal) {
      fail(at, "expected a string " + context + ", found GLOBAL " + global_name(at) +
                   " (Python 3 pickles bytes so at protocol 2; only the Python 2 "
                   "layout of the published files is read)");
    }
    fail(at, "expected a string (SHORT_BINSTRING, BINSTRING or BINUNICODE) " + context +
                 ", found " + op_name(op));
  }

  // A string's place in the file; its bytes are skipped. Then an optional memo.
  StringRef string_ref(const std::string& context) {
    const std::uint64_t at = in_.pos();
    const std::uint64_t size = string_header(at, context);
    const StringRef ref{in_.pos(), size};
    in_.skip(at, size);
    memo();
    return ref;
  }

  // A short string's text, at most kMaxPickleString bytes; then a memo.
  std::string text(const std::string& context) {
    const std::uint64_t at = in_.pos();
    const std::uint64_t size = string_header(at, context);
    if (size > kMaxPickleString) {
      fail(at, "a string " + context + " of " + std::to_string(size) +
                   " bytes, above the limit of " + std::to_string(kMaxPickleString));
    }
    if (size > in_.remaining()) in_.skip(at, size);  // throws: past the end
    std::string out(size, '\0');
    for (char& c : out) c = static_cast<char>(in_.byte());
    memo();
    return out;
  }

  void text_equal(std::string_view want, const char* context) {
    const std::uint64_t at = in_.pos();
    const std::string got = text(std::string("for ") + context);
    if (got != want) {
      fail(at, std::string(context) + " is '" + got + "', expected '" +
                   std::string(want) + "'");
    }
  }

  // The "module name" of a GLOBAL whose opcode (at `at`) was just read.
  std::string global_name(std::uint64_t at) {
    std::string got;
    for (int line = 0; line < 2; ++line) {
      if (line == 1) got += ' ';
      for (int n = 0;; ++n) {
        const char c = static_cast<char>(in_.byte());
        if (c == '\n') break;
        if (n == 64) fail(at, "GLOBAL with a name longer than 64 bytes");
        got += (c >= 0x20 && c < 0x7f) ? c : '?';
      }
    }
    return got;
  }

  // GLOBAL "module\nname\n" that must be exactly `module name`; then a memo.
  void global(std::string_view module, std::string_view name) {
    const std::uint64_t at = in_.pos();
    const std::string want = std::string(module) + " " + std::string(name);
    const std::uint8_t op = in_.byte();
    if (op != kGlobal) {
      fail(at, "expected GLOBAL " + want + ", found " + op_name(op));
    }
    const std::string got = global_name(at);
    if (got != want) {
      fail(at, "GLOBAL " + got + " where " + want +
                   " belongs; no other GLOBAL than numpy.core.multiarray "
                   "_reconstruct, numpy ndarray and numpy dtype is read");
    }
    memo();
  }

  // After a MARK: entries parsed by `entry` up to the `close` opcode (APPENDS,
  // SETITEMS), at least one.
  void batch(std::uint8_t close, const std::function<void()>& entry) {
    in_.byte();
    std::uint64_t count = 0;
    while (in_.peek() != close) {
      entry();
      ++count;
    }
    if (count == 0) fail(in_.pos(), "empty MARK.." + op_name(close) + " batch");
    in_.byte();
  }

  // A list: EMPTY_LIST, a memo, then MARK..APPENDS batches or single APPENDs.
  // `item` parses one element; `skip_item` moves past one without effects, for
  // the look-ahead that tells a single APPENDed string from the dict key that
  // follows the list.
  void list(const std::function<void()>& item, const std::function<void()>& skip_item,
            bool (*starts_item)(std::uint8_t)) {
    expect(kEmptyList, "opening a list");
    memo();
    const std::uint64_t list_at = in_.pos();
    std::uint64_t items = 0;
    const std::function<void()> counted = [&] {
      if (++items > kMaxPickleRows) {
        fail(list_at, "a list of more than " + std::to_string(kMaxPickleRows) + " items");
      }
      item();
    };
    while (in_.remaining() > 0) {
      const std::uint8_t op = in_.peek();
      if (op == kMark) {
        batch(kAppends, counted);
        continue;
      }
      if (!starts_item(op)) return;
      const std::uint64_t start = in_.pos();
      skip_item();
      const bool appended = in_.remaining() > 0 && in_.peek() == kAppend;
      in_.seek(start);
      if (!appended) return;
      counted();
      expect(kAppend, "after a single list item");
    }
  }

  // dtype('u1'): GLOBAL numpy dtype, ('u1', 0, 1), REDUCE, BUILD with the state
  // (3, '|', None, None, None, -1, -1, 0).
  void dtype() {
    global("numpy", "dtype");
    text_equal("u1", "the dtype (uint8 only)");
    integer_equal(0, "dtype's align argument");
    integer_equal(1, "dtype's copy argument");
    expect(kTuple3, "closing dtype's arguments");
    memo();
    expect(kReduce, "building the dtype");
    memo();
    expect(kMark, "opening the dtype's state");
    integer_equal(3, "the dtype state's version");
    text_equal("|", "the dtype's byte order");
    for (int i = 0; i < 3; ++i)
      expect(kNone, "in the dtype state (subarray, names, fields)");
    integer_equal(-1, "the dtype's element size");
    integer_equal(-1, "the dtype's alignment");
    integer_equal(0, "the dtype's flags");
    expect(kTuple, "closing the dtype's state");
    memo();
    expect(kBuild, "setting the dtype's state");
  }

  // The `data` array: sets out's rows and data_offset.
  void ndarray(CifarPickleBatch& out) {
    global("numpy.core.multiarray", "_reconstruct");
    global("numpy", "ndarray");
    integer_equal(0, "_reconstruct's shape argument");
    expect(kTuple1, "closing _reconstruct's shape");
    memo();
    text_equal("b", "_reconstruct's dtype argument");
    expect(kTuple3, "closing _reconstruct's arguments");
    memo();
    expect(kReduce, "calling _reconstruct");
    memo();
    expect(kMark, "opening the array's state");
    integer_equal(1, "the array state's version");
    const std::uint64_t shape_at = in_.pos();
    const std::int64_t rows = integer("as the array's row count");
    const std::int64_t cols = integer("as the array's column count");
    expect(kTuple2, "closing the array's shape (2 dimensions)");
    memo();
    if (rows < 1 || rows > static_cast<std::int64_t>(kMaxPickleRows) ||
        cols != static_cast<std::int64_t>(kCifarRowBytes)) {
      fail(shape_at,
           "the array's shape is (" + std::to_string(rows) + ", " + std::to_string(cols) +
               "), expected (N, 3072) with 1 <= N <= " + std::to_string(kMaxPickleRows));
    }
    dtype();
    const std::uint64_t order_at = in_.pos();
    const std::uint8_t order = in_.byte();
    if (order != kNewFalse) {
      fail(order_at, "expected NEWFALSE (C order) for the array's order flag, found " +
                         op_name(order));
    }
    const std::uint64_t data_at = in_.pos();
    const StringRef data = string_ref("as the array's bytes");
    const std::uint64_t want = static_cast<std::uint64_t>(rows) * kCifarRowBytes;
    if (data.size != want) {
      fail(data_at, "the array's bytes are " + std::to_string(data.size) +
                        " long, its shape needs " + std::to_string(want));
    }
    expect(kTuple, "closing the array's state");
    memo();
    expect(kBuild, "setting the array's state");
    out.rows = static_cast<std::uint64_t>(rows);
    out.data_offset = data.offset;
  }

  // PROTO 2, EMPTY_DICT, then key/value pairs until STOP at the end of the file.
  // `value` parses the value of a key it accepts (and refuses any other key).
  void dict(const std::function<void(const std::string&, std::uint64_t)>& value) {
    const std::uint64_t at = in_.pos();
    if (in_.byte() != kProto || in_.byte() != 2) {
      fail(at, "the file does not start with PROTO 2 (0x80 0x02)");
    }
    expect(kEmptyDict, "at the top");
    memo();
    auto pair = [&] {
      const std::uint64_t key_at = in_.pos();
      value(text("as a dict key"), key_at);
    };
    while (true) {
      const std::uint8_t op = in_.peek();
      if (op == kStop) break;
      if (op == kMark) {
        batch(kSetItems, pair);
      } else {
        pair();
        expect(kSetItem, "after a dict item");
      }
    }
    stop_at_ = in_.pos();
    in_.byte();
    if (in_.remaining() != 0) {
      fail(stop_at_, std::to_string(in_.remaining()) + " bytes follow STOP");
    }
  }

  Cursor& in() { return in_; }
  // Where STOP is, once dict() has returned.
  std::uint64_t stop_at() const { return stop_at_; }

 private:
  Cursor in_;
  std::uint64_t stop_at_ = 0;
};

// Marks `key` as seen; a second occurrence is a DataError.
void once(Parser& p, std::vector<std::string>& seen, const std::string& key,
          std::uint64_t at) {
  if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
    p.fail(at, "the key '" + key + "' appears twice");
  }
  seen.push_back(key);
}

void require_keys(const Parser& p, const std::vector<std::string>& seen,
                  std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    if (std::find(seen.begin(), seen.end(), key) == seen.end()) {
      p.fail(p.stop_at(), std::string("the dict ends without the key '") + key + "'");
    }
  }
}

}  // namespace

CifarPickleBatch read_cifar_pickle_batch(const FileHandle& file) {
  Parser p(file);
  CifarPickleBatch batch;
  std::vector<std::string> seen;
  std::uint64_t filenames = 0;
  std::uint64_t labels_at = 0;
  p.dict([&](const std::string& key, std::uint64_t at) {
    once(p, seen, key, at);
    if (key == "data") {
      p.ndarray(batch);
    } else if (key == "labels") {
      labels_at = at;
      p.list(
          [&] {
            const std::uint64_t label_at = p.in().pos();
            const std::int64_t label = p.integer("as a label");
            if (label < 0 || label > 9) {
              p.fail(label_at,
                     "label " + std::to_string(label) + " is not a class in [0, 10)");
            }
            batch.labels.push_back(static_cast<std::uint8_t>(label));
          },
          [&] { p.integer("as a label"); }, Parser::is_int);
    } else if (key == "batch_label") {
      p.text("as the batch label");
    } else if (key == "filenames") {
      p.list(
          [&] {
            p.text("as a file name");
            ++filenames;
          },
          [&] { p.string_ref("as a file name"); }, Parser::is_string);
    } else {
      p.fail(at, "unexpected key '" + key +
                     "' (a batch holds data, labels, batch_label and filenames)");
    }
  });
  require_keys(p, seen, {"data", "labels", "batch_label", "filenames"});
  if (batch.labels.size() != batch.rows) {
    p.fail(labels_at, std::to_string(batch.labels.size()) + " labels for " +
                          std::to_string(batch.rows) + " rows of data");
  }
  if (filenames != batch.rows) {
    p.fail(p.stop_at(), std::to_string(filenames) + " file names for " +
                            std::to_string(batch.rows) + " rows of data");
  }
  return batch;
}

std::vector<std::string> read_cifar_pickle_meta(const FileHandle& file) {
  Parser p(file);
  std::vector<std::string> names;
  std::vector<std::string> seen;
  std::uint64_t names_at = 0;
  p.dict([&](const std::string& key, std::uint64_t at) {
    once(p, seen, key, at);
    if (key == "label_names") {
      names_at = at;
      p.list([&] { names.push_back(p.text("as a label name")); },
             [&] { p.string_ref("as a label name"); }, Parser::is_string);
      if (names.size() > 10) p.fail(at, "more than 10 label names");
    } else if (key == "num_cases_per_batch") {
      p.integer("as num_cases_per_batch");
    } else if (key == "num_vis") {
      p.integer_equal(static_cast<std::int64_t>(kCifarRowBytes), "num_vis");
    } else {
      p.fail(at,
             "unexpected key '" + key +
                 "' (batches.meta holds label_names, num_cases_per_batch and num_vis)");
    }
  });
  require_keys(p, seen, {"label_names", "num_cases_per_batch", "num_vis"});
  if (names.size() != 10) {
    p.fail(names_at, std::to_string(names.size()) + " label names, expected 10");
  }
  return names;
}

}  // namespace seedloader

#include "tools/seed_audit/trace_reader.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "seedloader/error.h"
#include "tools/common/hash64.h"

namespace seedloader::audit {
namespace {

[[noreturn]] void fail(const std::string& what) { throw DataError(what); }

class LineParser {
 public:
  explicit LineParser(std::string_view line)
      : p_(line.data()), end_(line.data() + line.size()) {}

  SampleRecord parse() {
    SampleRecord r;
    skip_ws();
    expect('{', "expected '{' at the start of the line");
    skip_ws();
    unsigned seen = 0;
    if (peek() != '}') {
      while (true) {
        skip_ws();
        if (peek() != '"') fail("expected a quoted key");
        std::string_view key = raw_string();
        skip_ws();
        if (peek() != ':') fail("expected ':' after \"" + std::string(key) + "\"");
        ++p_;
        skip_ws();
        field(key, r, seen);
        skip_ws();
        if (peek() == ',') {
          ++p_;
          continue;
        }
        break;
      }
    }
    expect('}', "expected ',' or '}'");
    skip_ws();
    if (p_ != end_) fail("unexpected text after the closing '}'");
    // A declared skip was never produced: it has no worker and no random state.
    static constexpr const char* kRequired[] = {"rank",  "epoch", "worker",
                                                "batch", "index", "rng"};
    for (unsigned i = 0; i < 6; ++i) {
      if (r.skipped && (i == 2 || i == 5)) continue;
      if (!(seen & (1u << i))) fail(std::string("missing \"") + kRequired[i] + "\"");
    }
    // A mixture's sample names its source and the source's epoch together.
    if (((seen >> 10) & 1u) != ((seen >> 11) & 1u))
      fail((seen & (1u << 10)) ? "\"source\" without \"source_epoch\""
                               : "\"source_epoch\" without \"source\"");
    if (r.skipped) r.has_rng = false;
    return r;
  }

 private:
  char peek() const { return p_ < end_ ? *p_ : '\0'; }
  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n')) ++p_;
  }
  void expect(char c, const char* what) {
    if (peek() != c) fail(what);
    ++p_;
  }

  // The text between the quotes, escapes left in. REQUIRES: peek() == '"'.
  std::string_view raw_string() {
    const char* start = ++p_;
    has_escape_ = false;
    while (p_ < end_ && *p_ != '"') {
      if (static_cast<unsigned char>(*p_) < 0x20) fail("control character in a string");
      if (*p_ == '\\') {
        has_escape_ = true;
        ++p_;
      }
      ++p_;
    }
    if (p_ >= end_) fail("unterminated string");
    return {start, static_cast<std::size_t>(p_++ - start)};
  }

  // A string's value with escapes decoded (JSON equality, not spelling, counts).
  std::string_view string_value(const char* what) {
    if (peek() != '"') fail(std::string("\"") + what + "\" must be a string");
    const char* open = p_;
    std::string_view raw = raw_string();
    if (!has_escape_) return raw;
    try {
      decoded_ =
          nlohmann::json::parse(std::string_view(open, p_ - open)).get<std::string>();
    } catch (const nlohmann::json::exception&) {
      fail(std::string("bad escape in \"") + what + "\"");
    }
    return decoded_;
  }

  std::uint64_t uint_value(const char* what) {
    const char* start = p_;
    std::uint64_t v = 0;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
      std::uint64_t d = static_cast<std::uint64_t>(*p_ - '0');
      if (v > (UINT64_MAX - d) / 10) fail(std::string("\"") + what + "\" is too large");
      v = v * 10 + d;
      ++p_;
    }
    if (p_ == start || (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) ||
        (p_ - start > 1 && *start == '0')) {
      fail(std::string("\"") + what + "\" must be a non-negative integer");
    }
    return v;
  }

  bool bool_value(const char* what) {
    for (const std::string_view word :
         {std::string_view("true"), std::string_view("false")}) {
      if (static_cast<std::size_t>(end_ - p_) >= word.size() &&
          std::string_view(p_, word.size()) == word) {
        p_ += word.size();
        return word == "true";
      }
    }
    fail(std::string("\"") + what + "\" must be true or false");
  }

  std::uint64_t bounded(const char* what, std::uint64_t limit) {
    std::uint64_t v = uint_value(what);
    if (v > limit) {
      fail(std::string("\"") + what + "\" " + std::to_string(v) + " exceeds " +
           std::to_string(limit));
    }
    return v;
  }

  // Skips any JSON value and returns its text. Nesting is tracked as it goes; the
  // text is then checked to be JSON, so a line is refused rather than half read.
  std::string_view skip_value() {
    const char* start = p_;
    if (peek() == '"') {
      raw_string();
      return {start, static_cast<std::size_t>(p_ - start)};
    }
    int depth = 0;
    while (p_ < end_) {
      char c = *p_;
      if (c == '"') {
        raw_string();
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') {
        if (depth == 0) break;
        --depth;
      }
      if (c == ',' && depth == 0) break;
      ++p_;
    }
    if (depth != 0) fail("unbalanced brackets in a value");
    if (p_ == start) fail("missing value");
    std::string_view v(start, static_cast<std::size_t>(p_ - start));
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    if (!nlohmann::json::accept(v)) {
      fail("a value that is not JSON: " + std::string(v.substr(0, 40)) +
           (v.size() > 40 ? "..." : ""));
    }
    return v;
  }

  void mark(unsigned& seen, unsigned bit, std::string_view key) {
    if (seen & (1u << bit)) fail("duplicate key \"" + std::string(key) + "\"");
    seen |= 1u << bit;
  }

  void field(std::string_view key, SampleRecord& r, unsigned& seen) {
    if (key == "rank") {
      mark(seen, 0, key);
      r.rank = static_cast<std::uint32_t>(bounded("rank", kMaxRank));
    } else if (key == "epoch") {
      mark(seen, 1, key);
      r.epoch = static_cast<std::uint32_t>(bounded("epoch", kMaxEpoch));
    } else if (key == "worker") {
      mark(seen, 2, key);
      r.worker = static_cast<std::uint32_t>(bounded("worker", kMaxWorker));
    } else if (key == "batch") {
      mark(seen, 3, key);
      r.batch = uint_value("batch");
    } else if (key == "index") {
      mark(seen, 4, key);
      r.index = bounded("index", kMaxIndex);
    } else if (key == "rng") {
      mark(seen, 5, key);
      r.rng = tools::hash_bytes(string_value("rng"));
    } else if (key == "content") {
      mark(seen, 6, key);
      if (peek() == '"') {
        r.content = tools::hash_bytes(string_value("content"));
      } else {
        r.content = tools::mix64(uint_value("content"));
      }
    } else if (key == "run") {
      mark(seen, 8, key);
      r.run = static_cast<std::uint32_t>(bounded("run", kMaxRun));
    } else if (key == "source") {
      mark(seen, 10, key);
      r.source = std::string(string_value("source"));
      if (r.source.empty()) fail("\"source\" is empty");
    } else if (key == "source_epoch") {
      mark(seen, 11, key);
      r.source_epoch = static_cast<std::uint32_t>(bounded("source_epoch", kMaxEpoch));
    } else if (key == "skipped") {
      mark(seen, 9, key);
      r.skipped = bool_value("skipped");
    } else if (key == "aug") {
      mark(seen, 7, key);
      if (peek() == '"') {
        r.aug = raw_string();
      } else {
        r.aug = skip_value();
      }
    } else {
      skip_value();
    }
  }

  const char* p_;
  const char* end_;
  bool has_escape_ = false;
  std::string decoded_;
};

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

SampleRecord parse_trace_line(std::string_view line) { return LineParser(line).parse(); }

std::uint64_t read_trace(const std::string& path,
                         const std::function<void(const SampleRecord&)>& sink) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) fail("cannot open trace " + path + ": " + std::strerror(errno));
  std::vector<char> buf(1 << 20);
  std::string carry;  // a line split across reads
  std::uint64_t line_no = 0, records = 0;
  // Buffered lines only (a line inside one read is shorter than the buffer).
  auto check_length = [&](std::size_t bytes) {
    if (bytes > kMaxTraceLineBytes) {
      fail(path + ":" + std::to_string(line_no + 1) + ": line longer than " +
           std::to_string(kMaxTraceLineBytes) +
           " bytes (a trace holds one record "
           "per line)");
    }
  };
  auto handle = [&](std::string_view line) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
    try {
      sink(parse_trace_line(line));
    } catch (const DataError& e) {
      fail(path + ":" + std::to_string(line_no) + ": " + e.what());
    }
    ++records;
  };
  while (true) {
    std::size_t n = std::fread(buf.data(), 1, buf.size(), file.get());
    if (n == 0) {
      if (std::ferror(file.get())) fail("cannot read trace " + path);
      break;
    }
    std::string_view chunk(buf.data(), n);
    std::size_t start = 0;
    while (true) {
      std::size_t nl = chunk.find('\n', start);
      if (nl == std::string_view::npos) break;
      std::string_view piece = chunk.substr(start, nl - start);
      if (!carry.empty()) {
        check_length(carry.size() + piece.size());
        carry.append(piece);
        handle(carry);
        carry.clear();
      } else {
        handle(piece);
      }
      start = nl + 1;
    }
    const std::string_view rest = chunk.substr(start);
    check_length(carry.size() + rest.size());
    carry.append(rest);
  }
  if (!carry.empty()) handle(carry);
  return records;
}

}  // namespace seedloader::audit

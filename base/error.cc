#include "seedloader/error.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <deque>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace seedloader {
namespace {

bool ends_word(char ch) {
  return std::isspace(static_cast<unsigned char>(ch)) || ch == '"' || ch == '\'' ||
         ch == '`' || ch == '<' || ch == '>';
}

// A character of a name or a token: what may not come right before a field's
// name or a token for it to start there.
bool word_char(char ch) {
  return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-';
}

// `text` without the user:password of its URLs (see redact_credentials()).
std::string drop_userinfo(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t done = 0;
  for (std::size_t sep = text.find("://"); sep != std::string_view::npos;
       sep = text.find("://", sep + 3)) {
    const std::size_t start = sep + 3;
    std::size_t end = start;  // the authority: up to a path, query, fragment or space
    while (end < text.size() && text[end] != '/' && text[end] != '?' &&
           text[end] != '#' && !ends_word(text[end]))
      ++end;
    const std::string_view authority = text.substr(start, end - start);
    const std::size_t at = authority.rfind('@');
    std::size_t cut = at == std::string_view::npos ? std::string_view::npos : start + at;
    if (cut == std::string_view::npos) {
      // "user:pa/ss@host" (a ':' not followed by a port) or "user:2024/x@host" (a
      // password of digits, then a '/'): an '@' further on, up to the end of the
      // word, or of the first path segment after digits that may be a port.
      const std::size_t bracket =
          !authority.empty() && authority.front() == '[' ? authority.find(']') : 0;
      const std::size_t colon =
          bracket == std::string_view::npos ? bracket : authority.find(':', bracket);
      if (colon != std::string_view::npos) {
        const bool port = authority.find_first_not_of("0123456789", colon + 1) ==
                          std::string_view::npos;
        std::size_t until = end + (port && end < text.size() && text[end] == '/');
        while (until < text.size() && !ends_word(text[until]) &&
               !(port && text[until] == '/'))
          ++until;
        const std::size_t later = text.substr(0, until).rfind('@');
        if (later != std::string_view::npos && later >= end) cut = later;
      }
    }
    if (cut == std::string_view::npos) continue;
    out.append(text.substr(done, start - done));
    done = cut + 1;
    sep = cut - 2;  // the next search starts after the removed part
  }
  out.append(text.substr(done));
  return out;
}

// Where a credential's value follows its name.
enum class Form {
  kParameter,  // a query or form parameter: NAME=VALUE, up to '&', a space, a quote
  kHeader,     // an HTTP header: NAME: VALUE, to the end of the line
  kField,      // an XML element <NAME>VALUE< or a JSON member "NAME": "VALUE"
};
struct Field {
  std::string_view name;  // in lower case; matched in any case
  Form form;
};
constexpr Field kFields[] = {
    // Presigned URLs (S3's SigV4 and SigV2, Google Cloud Storage, Azure SAS) and
    // OAuth or OIDC tokens in a query or a form (STS's WebIdentityToken).
    {"x-amz-signature", Form::kParameter},
    {"x-amz-credential", Form::kParameter},
    {"x-amz-security-token", Form::kParameter},
    {"x-goog-signature", Form::kParameter},
    {"x-goog-credential", Form::kParameter},
    {"signature", Form::kParameter},
    {"awsaccesskeyid", Form::kParameter},
    {"sig", Form::kParameter},
    {"webidentitytoken", Form::kParameter},
    {"access_token", Form::kParameter},
    {"id_token", Form::kParameter},
    {"authorization", Form::kHeader},
    {"proxy-authorization", Form::kHeader},
    {"x-amz-security-token", Form::kHeader},
    {"x-aws-ec2-metadata-token", Form::kHeader},
    // What STS, the container agents and the metadata service answer with.
    {"accesskeyid", Form::kField},
    {"secretaccesskey", Form::kField},
    {"sessiontoken", Form::kField},
    {"token", Form::kField},
    {"webidentitytoken", Form::kField},
};

// Marks in `hide` the value after each credential field's name in `text`.
void mark_fields(const std::string& text, std::vector<bool>& hide) {
  std::string lower = text;
  for (char& ch : lower)
    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const std::size_t n = text.size();
  const auto mark = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) hide[i] = true;
  };
  const auto skip_blanks = [&](std::size_t i) {
    while (i < n && (text[i] == ' ' || text[i] == '\t')) ++i;
    return i;
  };
  for (const Field& field : kFields) {
    for (std::size_t at = lower.find(field.name); at != std::string::npos;
         at = lower.find(field.name, at + 1)) {
      const std::size_t end = at + field.name.size();
      const char before = at > 0 ? text[at - 1] : ' ';
      if (end >= n || word_char(before)) continue;
      if (field.form == Form::kParameter && text[end] == '=') {
        std::size_t stop = end + 1;
        while (stop < n && !ends_word(text[stop]) &&
               std::string_view("&#),;").find(text[stop]) == std::string_view::npos)
          ++stop;
        mark(end + 1, stop);
      } else if (field.form == Form::kHeader) {
        // "Authorization: ..." and a quoted "Authorization": "...".
        std::size_t colon = skip_blanks(end + (text[end] == '"' || text[end] == '\''));
        if (colon >= n || text[colon] != ':') continue;
        std::size_t stop = colon + 1;
        while (stop < n && text[stop] != '\n' && text[stop] != '\r') ++stop;
        mark(colon + 1, stop);
      } else if (field.form == Form::kField && before == '<' && text[end] == '>') {
        const std::size_t stop = std::min(n, text.find('<', end + 1));
        mark(end + 1, stop);
      } else if (field.form == Form::kField && before == '"' && text[end] == '"') {
        const std::size_t colon = skip_blanks(end + 1);
        if (colon >= n || text[colon] != ':') continue;
        const std::size_t quote = skip_blanks(colon + 1);
        if (quote >= n || text[quote] != '"') continue;
        const std::size_t stop = std::min(n, text.find('"', quote + 1));
        mark(quote + 1, stop);
      }
    }
  }
}

// Marks JSON Web Tokens (a word of base64url starting "eyJ", the encoding of
// '{"') and AWS access key ids (AKIA or ASIA and 16 more capitals or digits).
void mark_tokens(const std::string& text, std::vector<bool>& hide) {
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0 && word_char(text[i - 1])) continue;
    std::size_t end = i;
    if (text.compare(i, 3, "eyJ") == 0) {
      while (end < n && (word_char(text[end]) || text[end] == '.')) ++end;
      if (end - i < 20) continue;
    } else if (text.compare(i, 4, "AKIA") == 0 || text.compare(i, 4, "ASIA") == 0) {
      while (end < n && (std::isupper(static_cast<unsigned char>(text[end])) ||
                         std::isdigit(static_cast<unsigned char>(text[end]))))
        ++end;
      if (end - i != 20 || (end < n && word_char(text[end]))) continue;
    } else {
      continue;
    }
    for (std::size_t k = i; k < end; ++k) hide[k] = true;
    i = end;
  }
}

// The secrets register_secret() was given. Readers and writers take the mutex;
// fork handlers hold it across fork(), so a child never inherits it locked by a
// thread that does not exist there.
constexpr std::size_t kMaxSecrets = 64;  // values kept, the newest
constexpr std::size_t kRun = 16;         // a run of a secret this long is hidden
constexpr std::size_t kShortest = 8;     // shorter values are not registered

struct Secrets {
  std::mutex mutex;
  std::deque<std::string> values;  // the registered values, the newest last
  // Every kRun-long run of the values at least that long, pointing into them
  // (a deque keeps its elements in place as it grows and shrinks at its ends).
  std::unordered_set<std::string_view> runs;
};
// Made once, by the first register_secret(), and never freed (messages may be
// made while static objects are destroyed). g_forked is what the fork handlers
// lock, set before they exist; g_secrets what readers see, set after.
Secrets* g_forked = nullptr;
std::atomic<Secrets*> g_secrets{nullptr};

Secrets& secrets() {
  static Secrets* const made = [] {
    g_forked = new Secrets;
    ::pthread_atfork([] { g_forked->mutex.lock(); }, [] { g_forked->mutex.unlock(); },
                     [] { g_forked->mutex.unlock(); });
    // Release: a reader that sees the pointer sees the object built.
    g_secrets.store(g_forked, std::memory_order_release);
    return g_forked;
  }();
  return *made;
}

// Marks every registered secret in `text`: whole, and any kRun-long run of one.
void mark_secrets(const std::string& text, std::vector<bool>& hide) {
  // Acquire: pairs with the release in secrets().
  Secrets* s = g_secrets.load(std::memory_order_acquire);
  if (!s) return;
  std::lock_guard<std::mutex> lock(s->mutex);
  for (std::size_t i = 0; !s->runs.empty() && i + kRun <= text.size(); ++i) {
    if (s->runs.count(std::string_view(text).substr(i, kRun)))
      for (std::size_t k = i; k < i + kRun; ++k) hide[k] = true;
  }
  for (const std::string& value : s->values) {
    if (value.size() >= kRun) continue;  // found through its runs
    for (std::size_t at = text.find(value); at != std::string::npos;
         at = text.find(value, at + 1))
      for (std::size_t k = at; k < at + value.size(); ++k) hide[k] = true;
  }
}

}  // namespace

void register_secret(std::string_view secret) {
  if (secret.size() < kShortest) return;
  Secrets& s = secrets();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (const std::string& value : s.values) {
    if (value == secret) return;  // known already
  }
  s.values.emplace_back(secret);
  while (s.values.size() > kMaxSecrets) s.values.pop_front();
  s.runs.clear();
  for (const std::string& value : s.values) {
    for (std::size_t i = 0; value.size() >= kRun && i + kRun <= value.size(); ++i)
      s.runs.insert(std::string_view(value).substr(i, kRun));
  }
}

std::string redact_credentials(std::string_view text) {
  std::string out = drop_userinfo(text);
  std::vector<bool> hide(out.size(), false);
  mark_fields(out, hide);
  mark_tokens(out, hide);
  mark_secrets(out, hide);
  std::string shown;
  for (std::size_t i = 0; i < out.size();) {
    if (!hide[i]) {
      shown += out[i++];
      continue;
    }
    shown += "[redacted]";
    while (i < out.size() && hide[i]) ++i;
  }
  return shown;
}

// Out of line: the one place its type information lives.
DatasetException::~DatasetException() = default;

}  // namespace seedloader

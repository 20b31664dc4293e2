// ObjectReader and TarShards against servers that misbehave on purpose
// (tests/remote/hostile_server.py, two of them on 127.0.0.1: the one a URL names
// and "another host" it redirects to): no credential follows a redirect to
// another origin, a trickling server is given up on, an endless body is cut at
// its limit, and each failure names the URL and the bound.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "remote/object_reader.h"
#include "remote/object_url.h"
#include "seedloader/datasets/tar_shards.h"
#include "seedloader/error.h"
#include "seedloader/transforms/spec.h"
#include "tests/common/error_of.h"
#include "tests/common/run_command.h"
#include "tests/common/temp_dir.h"
#include "tests/remote/fake_aws.h"
#include "tests/remote/local_servers.h"

namespace seedloader {
namespace {

using remote::FetchOptions;
using remote::ObjectReader;
using remote::ObjectUrl;
using testing_util::error_of;
using testing_util::ServerProcess;
using testing_util::TempDir;

// One hostile_server.py, logging to dir/NAME.log.
struct Hostile {
  Hostile(const TempDir& dir, const std::string& name, int port, int other)
      : log(dir / (name + ".log")),
        server(std::vector<std::string>{"/usr/bin/python3",
                                        SEEDLOADER_SOURCE_DIR
                                        "/tests/remote/hostile_server.py",
                                        std::to_string(port), log, std::to_string(other)},
               {}, port, dir / (name + ".out")) {}
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server.port()); }
  // The logged "AUTHORIZATION TOKEN" of each request for a path containing `part`.
  std::vector<std::string> seen(const std::string& part) const {
    std::ifstream in(log);
    std::vector<std::string> out;
    for (std::string path, auth, token; in >> path >> auth >> token;) {
      if (path.find(part) != std::string::npos) out.push_back(auth + " " + token);
    }
    return out;
  }

  std::string log;
  ServerProcess server;
};

class HostileServerTest : public ::testing::Test {
 protected:
  HostileServerTest() {
    const int a = testing_util::free_port(), b = testing_util::free_port();
    named_ = std::make_unique<Hostile>(dir_, "named", a, b);
    other_ = std::make_unique<Hostile>(dir_, "other", b, a);
  }

  TempDir dir_;
  std::unique_ptr<Hostile> named_, other_;
};

// The error of reading `url` whole through `reader`.
std::string read_error(const ObjectReader& reader, const std::string& url) {
  std::vector<std::uint8_t> out;
  return error_of([&] { reader.read_if_present(*ObjectUrl::parse(url), out, 1 << 20); });
}

std::string text_of(const std::vector<std::uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

// A reader whose S3 settings name the named server as the endpoint, with a key
// and a session token.
class SigningReader {
 public:
  explicit SigningReader(const std::string& endpoint) {
    aws_.set("AWS_ACCESS_KEY_ID", "AKIDHOSTILETEST");
    aws_.set("AWS_SECRET_ACCESS_KEY", "secret-key-never-sent-away");
    aws_.set("AWS_SESSION_TOKEN", "session-token-never-sent-away");
    aws_.set("AWS_ENDPOINT_URL", endpoint);
    aws_.set("AWS_REGION", "us-east-1");
    reader_ = std::make_unique<ObjectReader>(FetchOptions{.aws = aws_.env()});
  }
  const ObjectReader& operator*() const { return *reader_; }

 private:
  testing_util::FakeAws aws_;
  std::unique_ptr<ObjectReader> reader_;
};

// That `seen` (Hostile::seen) is one request, SigV4-signed, with the session token.
void expect_one_signed_request(const std::vector<std::string>& seen) {
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].rfind("AWS4-HMAC-SHA256", 0), 0u) << seen[0];
  EXPECT_NE(seen[0].find(" session-token-never-sent-away"), std::string::npos);
}

TEST_F(HostileServerTest, AnS3RedirectToAnotherHostCarriesNoSignatureAndNoToken) {
  const SigningReader signing(named_->url());
  const ObjectReader& reader = *signing;
  std::vector<std::uint8_t> out;
  ASSERT_TRUE(reader.read_if_present(*ObjectUrl::parse("s3://bucket/to-other/a.tar"), out,
                                     1 << 20));
  EXPECT_EQ(text_of(out), "payload /bucket/landed/a.tar");
  // The named endpoint got the signed request and its token ...
  const auto asked = named_->seen("/bucket/to-other/a.tar");
  expect_one_signed_request(asked);
  // ... the other host neither.
  EXPECT_EQ(other_->seen("/bucket/landed/a.tar"), std::vector<std::string>{"- -"});

  // Within the same origin the request stays signed.
  ASSERT_TRUE(reader.read_if_present(*ObjectUrl::parse("s3://bucket/to-same/b.tar"), out,
                                     1 << 20));
  EXPECT_EQ(text_of(out), "payload /bucket/landed/b.tar");
  const auto landed = named_->seen("/bucket/landed/b.tar");
  expect_one_signed_request(landed);
}

TEST_F(HostileServerTest, AUrlPasswordIsSentOnlyToItsOwnHost) {
  const std::string url = "http://reader:pa55word@" + named_->url().substr(7);
  const ObjectReader reader;
  std::vector<std::uint8_t> out;
  ASSERT_TRUE(
      reader.read_if_present(*ObjectUrl::parse(url + "/to-other/x"), out, 1 << 20));
  EXPECT_EQ(text_of(out), "payload /landed/x");
  ASSERT_EQ(named_->seen("/to-other/x").size(), 1u);
  EXPECT_EQ(named_->seen("/to-other/x")[0].rfind("Basic_", 0), 0u);
  EXPECT_EQ(other_->seen("/landed/x"), std::vector<std::string>{"- -"});
  ASSERT_TRUE(
      reader.read_if_present(*ObjectUrl::parse(url + "/to-same/y"), out, 1 << 20));
  ASSERT_EQ(named_->seen("/landed/y").size(), 1u);
  EXPECT_EQ(named_->seen("/landed/y")[0].rfind("Basic_", 0), 0u);
}

TEST_F(HostileServerTest, ARedirectLoopEndsAfterFiveNamingTheUrl) {
  const ObjectReader reader;
  const std::string e = read_error(reader, named_->url() + "/loop/x");
  EXPECT_NE(e.find("GET " + named_->url() + "/loop/x"), std::string::npos) << e;
  EXPECT_NE(e.find("more than 5 redirects"), std::string::npos) << e;
  EXPECT_EQ(named_->seen("/loop/x").size(), 6u);
}

TEST_F(HostileServerTest, ATricklingServerIsCutOffByTheMinimumRate) {
  // Five bytes a second, below min_rate_bytes_s: each attempt is cut after the
  // stall window, and every cut counts although it moved bytes.
  const ObjectReader reader(
      FetchOptions{.max_attempts = 2, .stall_timeout_s = 1, .min_rate_bytes_s = 100});
  const std::string e = read_error(reader, named_->url() + "/trickle/x");
  EXPECT_NE(e.find("/trickle/x: curl error 28"), std::string::npos) << e;
  EXPECT_NE(e.find("(2 attempts)"), std::string::npos) << e;
}

TEST_F(HostileServerTest, ADeadlineBoundsAReadThatKeepsMovingBytes) {
  // min_rate_bytes_s 1: the trickle is fast enough for it, not for the deadline.
  const ObjectReader reader(
      FetchOptions{.stall_timeout_s = 30, .min_rate_bytes_s = 1, .deadline_s = 1.5});
  const std::string e = read_error(reader, named_->url() + "/trickle/y");
  EXPECT_NE(e.find("/trickle/y: not read within deadline_s 1.5"), std::string::npos) << e;
}

TEST_F(HostileServerTest, AServerSendingOneByteAConnectionIsGivenUpOn) {
  // Each connection moves a byte and closes: progress too small to start over.
  const ObjectReader reader(FetchOptions{.max_attempts = 3, .first_backoff_s = 0.01});
  const std::string e = read_error(reader, named_->url() + "/one-byte/x");
  EXPECT_NE(e.find("/one-byte/x: curl error 18"), std::string::npos) << e;
  EXPECT_NE(e.find("(3 attempts)"), std::string::npos) << e;
}

TEST_F(HostileServerTest, AnEndlessErrorBodyIsCutAndTheStatusReported) {
  const ObjectReader reader(FetchOptions{.max_attempts = 2, .first_backoff_s = 0.01});
  const std::string e = read_error(reader, named_->url() + "/fail-endless/x");
  EXPECT_NE(e.find("/fail-endless/x: HTTP 500 (2 attempts)"), std::string::npos) << e;
}

TEST_F(HostileServerTest, AnErrorAfterARedirectNamesWhereItLedAndThatNoCredentialWent) {
  const std::string url = "http://reader:pa55word@" + named_->url().substr(7);
  const ObjectReader reader;
  const std::string e = read_error(reader, url + "/to-other/deny/x");
  EXPECT_NE(e.find("GET " + named_->url() + "/to-other/deny/x: HTTP 403 from " +
                   other_->url() + ", where a redirect led"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("(another origin: sent without credentials)"), std::string::npos) << e;
}

TEST_F(HostileServerTest, AnEndlessIndexStopsAtItsLimitNamingTheUrl) {
  TarShardsOptions options;
  options.cache_dir = dir_ / "cache";
  options.max_index_bytes = 1 << 20;
  const std::string e = error_of([&] {
    TarShards(named_->url() + "/endless/", parse_transform_spec("centercrop:8"), options);
  });
  EXPECT_NE(e.find("GET " + named_->url() + "/endless/index.json"), std::string::npos)
      << e;
  EXPECT_NE(e.find("larger than the limit of 1048576 bytes"), std::string::npos) << e;
}

TEST_F(HostileServerTest, ATricklingIndexFailsTheConstructionAtItsIndexDeadline) {
  // The trickle (five bytes a second) outlives one stall window per attempt:
  // without a bound on the whole read the constructor would wait for all six.
  EXPECT_EQ(TarShardsOptions{}.index_deadline_s, 60);
  TarShardsOptions options;
  options.cache_dir = dir_ / "cache";
  options.index_deadline_s = 1;
  const auto start = std::chrono::steady_clock::now();
  const std::string e = error_of([&] {
    TarShards(named_->url() + "/trickle/", parse_transform_spec("centercrop:8"), options);
  });
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_NE(e.find("GET " + named_->url() +
                   "/trickle/index.json: not read within index_deadline_s 1 s"),
            std::string::npos)
      << e;
  EXPECT_LT(took, std::chrono::seconds(10));  // ten times the deadline
  // A smaller deadline_s, bounding every object, is the one that ends it then.
  options.deadline_s = 0.5;
  const std::string both = error_of([&] {
    TarShards(named_->url() + "/trickle/", parse_transform_spec("centercrop:8"), options);
  });
  EXPECT_NE(both.find("index.json: not read within deadline_s 0.5 s"), std::string::npos)
      << both;
  options.index_deadline_s = -1;
  EXPECT_NE(error_of([&] {
              TarShards(named_->url() + "/trickle/", parse_transform_spec("centercrop:8"),
                        options);
            }).find("index_deadline_s >= 0"),
            std::string::npos);
}

// Every program, run the ways a user could pass a URL with a password — a good
// one, one to a missing pack, a mistyped kind, an option that fails to parse —
// prints the URL without the password, or no URL at all.
TEST(SecretsTest, NoToolPrintsAUrlPassword) {
  const TempDir dir;
  const auto pack =
      testing_util::run_command(std::string(SEEDLOADER_PACK) + " synthetic:12 " +
                                (dir / "data") + " --shard-size 8K 2>&1");
  ASSERT_EQ(pack.exit_code, 0) << pack.out;
  const testing_util::Nginx nginx(dir.path(), dir / "nginx");
  const std::string host = nginx.url().substr(7);  // 127.0.0.1:PORT
  const std::string url = "http://reader:Pa55-s3cret@" + host + "/data/";
  const std::string missing = "http://reader:Pa55-s3cret@" + host + "/missing/";
  const std::string env = "SEEDLOADER_CACHE_DIR=" + (dir / "cache") + " ";
  const std::string bench = env + SEEDLOADER_BENCH " --transform centercrop:16 " +
                            "--batch-size 4 --workers 0 --batches 2 --warmup 0 ";
  const std::string audit = env + SEEDLOADER_AUDIT " run --transform centercrop:16 " +
                            "--workers 0 --epochs 1 --batch-size 4 ";
  struct Run {
    std::string command;
    int exit_code;
    std::string shown;  // text the output must hold
  };
  std::vector<Run> runs = {
      {bench + "--data tar:" + url, 0, "tar:http://" + host + "/data/ |"},
      {bench + "--data tar:" + url + " --json", 0, "\"data\":\"tar:http://" + host},
      {bench + "--data tar:" + missing, 2, "no index at http://" + host + "/missing/"},
      {bench + "--data tarr:" + url, 2, "unknown kind 'tarr'"},
      {bench + "--data tar:" + url + " --workers " + url, 2, "--workers"},
      {std::string(SEEDLOADER_PACK) + " tar:" + url + " " + (dir / "out"), 2,
       "reads local shards only"},
      {std::string(SEEDLOADER_PACK) + " tarr:" + url + " " + (dir / "out"), 2,
       "unknown kind"},
      {audit + "--data tar:" + url, 0, "clean"},
      {audit + "--data tar:" + missing, 2, "no index at http://" + host},
      {audit + "--data tarr:" + url, 2, "unknown kind"},
      {audit + "--data tar:" + url + " --seeding " + url, 2, "--seeding"},
  };
#ifdef SEEDLOADER_TRAIN
  // (OpenMPI's own allocations are reported as leaks under ASan.)
  const std::string train = "ASAN_OPTIONS=detect_leaks=0 " + env +
                            SEEDLOADER_TRAIN " --transform centercrop:16 ";
  runs.push_back({train + "--data tarr:" + url, 2, "unknown kind"});
  runs.push_back({train + "--data tar:" + missing, 2, "no index at http://" + host});
#endif
  for (const Run& run : runs) {
    const auto r = testing_util::run_command(run.command + " 2>&1");
    EXPECT_EQ(r.exit_code, run.exit_code) << run.command << "\n" << r.out;
    EXPECT_NE(r.out.find(run.shown), std::string::npos) << run.command << "\n" << r.out;
    EXPECT_EQ(r.out.find("s3cret"), std::string::npos) << run.command << "\n" << r.out;
    EXPECT_EQ(r.out.find("reader:"), std::string::npos) << run.command << "\n" << r.out;
  }
}

TEST(SecretsTest, RedactionRemovesEveryUrlsUserAndPassword) {
  EXPECT_EQ(redact_credentials("GET http://alice:pw@host:80/a and s3://b/k"),
            "GET http://host:80/a and s3://b/k");
  EXPECT_EQ(redact_credentials("'https://u%40x:p%2F@h/' then http://v:w@g"),
            "'https://h/' then http://g");
  // A password holding an unencoded '/' or '@' is removed whole.
  EXPECT_EQ(redact_credentials("tar:http://u:pa/ss@host/data/ failed"),
            "tar:http://host/data/ failed");
  EXPECT_EQ(redact_credentials("http://u:p@ss@host/x"), "http://host/x");
  // A password of digits up to an unencoded '/': the first path segment's '@'
  // ends it (a real path segment with an '@' after a port loses as much).
  EXPECT_EQ(redact_credentials("http://u:2024/x@host/data/"), "http://host/data/");
  EXPECT_EQ(redact_credentials("http://host:8080/a@b/c"), "http://b/c");
  // Nothing else changes: ports, later path segments with '@', IPv6 hosts, text
  // without URLs.
  EXPECT_EQ(redact_credentials("http://host:8080/a/b@c"), "http://host:8080/a/b@c");
  EXPECT_EQ(redact_credentials("http://[::1]:8080/a/b@c"), "http://[::1]:8080/a/b@c");
  EXPECT_EQ(redact_credentials("http://[::1]/a@b"), "http://[::1]/a@b");
  EXPECT_EQ(redact_credentials("http://u:p@[::1]:80/x"), "http://[::1]:80/x");
  EXPECT_EQ(redact_credentials("user@example.com at 10:30"), "user@example.com at 10:30");
  EXPECT_EQ(redact_credentials("://@"), "://");
  // Every Error's message goes through it.
  EXPECT_STREQ(DataError("GET http://a:b@h/x").what(), "GET http://h/x");
}

TEST(SecretsTest, ARegisteredSecretIsHiddenWholeOrCutShortInEachFormGiven) {
  const std::string token = "opaque/identity+token=" + std::string(40, 'q') + "Z9";
  const std::string encoded =
      "opaque%2Fidentity%2Btoken%3D" + std::string(40, 'q') + "Z9";
  register_secret(token);
  register_secret(encoded);
  for (const std::string& said :
       {"STS: token " + token + " is not valid", "echoed: " + token.substr(5, 30) + "...",
        "as sent: WebToken=" + encoded + " refused"}) {
    const std::string shown = redact_credentials(said);
    EXPECT_NE(shown.find("[redacted]"), std::string::npos) << shown;
    for (std::size_t i = 0; i + 16 <= token.size(); ++i)
      EXPECT_EQ(shown.find(token.substr(i, 16)), std::string::npos) << shown;
    EXPECT_EQ(shown.find("identity"), std::string::npos) << shown;
    EXPECT_EQ(shown.find("qqqqqqqqqqqqqqqq"), std::string::npos) << shown;
  }
  EXPECT_EQ(redact_credentials("STS: token " + token + " is not valid"),
            "STS: token [redacted] is not valid");
  // Too short to be a credential: not registered, words stay as they are.
  register_secret("test");
  EXPECT_EQ(redact_credentials("a test"), "a test");
}

TEST(SecretsTest, CredentialsOfKnownShapesAreHiddenWithoutRegistration) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      // A presigned URL's query.
      {"GET https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&"
       "X-Amz-Credential=AKID%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&"
       "X-Amz-Security-Token=FwoGZXIvYXdzE&X-Amz-Signature=ab12cd34 failed",
       "GET https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&"
       "X-Amz-Credential=[redacted]&X-Amz-Security-Token=[redacted]&"
       "X-Amz-Signature=[redacted] failed"},
      {"(https://h/o?AWSAccessKeyId=K1&Signature=s%2B1&Expires=9)",
       "(https://h/o?AWSAccessKeyId=[redacted]&Signature=[redacted]&Expires=9)"},
      {"form Action=AssumeRoleWithWebIdentity&WebIdentityToken=tok3n&Version=1",
       "form Action=AssumeRoleWithWebIdentity&WebIdentityToken=[redacted]&Version=1"},
      // Headers, to the end of their line.
      {"sent Authorization: AWS4-HMAC-SHA256 Credential=AKID/x, Signature=ff\nnext",
       "sent Authorization:[redacted]\nnext"},
      {"x-amz-security-token: FQoGZXIvYXdzEJr\r\n",
       "x-amz-security-token:[redacted]\r\n"},
      // What credential services answer.
      {"<SecretAccessKey>wJalrXUtnFEMI</SecretAccessKey><SessionToken>IQoJb3</"
       "SessionToken>",
       "<SecretAccessKey>[redacted]</SecretAccessKey><SessionToken>[redacted]</"
       "SessionToken>"},
      {R"({"AccessKeyId": "AK1", "Token" : "tok", "Code": "Success"})",
       R"({"AccessKeyId": "[redacted]", "Token" : "[redacted]", "Code": "Success"})"},
      // A JSON Web Token and an access key id, wherever they stand.
      {"token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJwb2QifQ.c2lnbmF0dXJl refused",
       "token [redacted] refused"},
      {"key AKIAIOSFODNN7EXAMPLE, id ASIAQ3EGUZ2EXAMPLE12.",
       "key [redacted], id [redacted]."},
      // Words that only look alike stay.
      {"HTTP 403 (SignatureDoesNotMatch); the session token: HTTP 500",
       "HTTP 403 (SignatureDoesNotMatch); the session token: HTTP 500"},
      {"AKIAshort eyJust", "AKIAshort eyJust"},
  };
  for (const auto& [said, shown] : cases) EXPECT_EQ(redact_credentials(said), shown);
}

}  // namespace
}  // namespace seedloader

// The AWS credential chain (remote/aws_credentials.h) and the S3 settings it
// feeds (remote/s3_config.h, remote/s3_config_cache.h). Its logic runs on
// variables and a clock the test gives (FakeAws), never the process's and never
// waiting: the order of the places, what each reads, every failure named, no
// secret shown, renewal before expiry. What goes over the wire runs against real
// servers on 127.0.0.1 that the tests start: credential_server.py as STS, a
// container agent and IMDS; `rclone serve s3`, which checks every signature; and
// moto as STS and S3, which refuses credentials once they expire. The
// end-to-end tests, a TarShards whose forked workers read the process's
// environment, set the process's variables for their own scope (ProcessAws).
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "remote/aws_credentials.h"
#include "remote/credential_io.h"
#include "remote/http_client.h"
#include "remote/object_reader.h"
#include "remote/object_url.h"
#include "remote/s3_config.h"
#include "remote/s3_config_cache.h"
#include "seedloader/datasets/tar_shards.h"
#include "seedloader/error.h"
#include "seedloader/transforms/spec.h"
#include "tests/common/error_of.h"
#include "tests/common/temp_dir.h"
#include "tests/remote/fake_aws.h"
#include "tests/remote/local_servers.h"
#include "tests/remote/packed_shards.h"
#include "tests/remote/process_aws.h"

namespace seedloader {
namespace {

using remote::AwsCredentials;
using remote::CredentialChain;
using remote::CredentialContext;
using remote::CredentialLookup;
using remote::CredentialProvider;
using testing_util::cached_in;
using testing_util::error_of;
using testing_util::FakeAws;
using testing_util::kTransform;
using testing_util::ProcessAws;
using testing_util::run_epoch;
using testing_util::TempDir;
using Epoch = testing_util::EpochBytes;
using std::chrono::seconds;

// A place that answers as the test says: credentials, nothing (with its line for
// the "looked in" list) or a ConfigError; it counts how often it was asked.
class ScriptedProvider final : public CredentialProvider {
 public:
  explicit ScriptedProvider(CredentialLookup answer, std::string failure = "")
      : answer_(std::move(answer)), failure_(std::move(failure)) {}
  CredentialLookup resolve(const CredentialContext&) const override {
    ++asked;
    if (!failure_.empty()) throw ConfigError(failure_);
    return answer_;
  }
  mutable int asked = 0;

 private:
  CredentialLookup answer_;
  std::string failure_;
};

AwsCredentials credentials_named(const std::string& source) {
  AwsCredentials c;
  c.access_key = "AKID" + source;
  c.secret_key = "secret of " + source;
  c.source = source;
  return c;
}

// A chain of scripted places; `asked` points at each, in order.
struct ScriptedChain {
  explicit ScriptedChain(std::vector<std::pair<CredentialLookup, std::string>> places) {
    std::vector<std::unique_ptr<const CredentialProvider>> list;
    for (auto& [answer, failure] : places) {
      auto p = std::make_unique<ScriptedProvider>(std::move(answer), failure);
      asked.push_back(p.get());
      list.push_back(std::move(p));
    }
    chain = std::make_unique<CredentialChain>(std::move(list));
  }
  std::vector<const ScriptedProvider*> asked;
  std::unique_ptr<CredentialChain> chain;
};

class CredentialChainTest : public ::testing::Test {
 protected:
  AwsCredentials find(const ScriptedChain& c) const {
    return c.chain->find({env_, http_, "us-east-1"});
  }
  FakeAws aws_;
  const remote::AwsEnvironment env_ = aws_.env();
  const remote::HttpClient http_;
};

TEST_F(CredentialChainTest, TheFirstPlaceWithCredentialsWinsAndLaterOnesAreNotAsked) {
  const ScriptedChain c({{{std::nullopt, "a (unset)"}, ""},
                         {{credentials_named("b"), ""}, ""},
                         {{credentials_named("c"), ""}, ""}});
  EXPECT_EQ(find(c).source, "b");
  EXPECT_EQ(c.asked[0]->asked, 1);
  EXPECT_EQ(c.asked[1]->asked, 1);
  EXPECT_EQ(c.asked[2]->asked, 0);
}

TEST_F(CredentialChainTest, APlaceThatFailsEndsTheSearchWithItsError) {
  const ScriptedChain c({{{std::nullopt, "a (unset)"}, ""},
                         {{std::nullopt, ""}, "b is set up but broken"},
                         {{credentials_named("c"), ""}, ""}});
  EXPECT_EQ(error_of([&] { find(c); }), "b is set up but broken");
  EXPECT_EQ(c.asked[2]->asked, 0);
}

TEST_F(CredentialChainTest, NothingFoundListsEveryPlaceInOrder) {
  const ScriptedChain c(
      {{{std::nullopt, "a (unset)"}, ""}, {{std::nullopt, "b (not in ~/b)"}, ""}});
  EXPECT_EQ(error_of([&] { find(c); }),
            "no AWS credentials for s3:// requests; looked in:\n  a (unset)\n  b (not in "
            "~/b)\nfor a public bucket, set AWS_NO_SIGN_REQUEST=true to send unsigned "
            "requests");
}

TEST_F(CredentialChainTest, WhatWasFoundIsHiddenFromEveryMessage) {
  AwsCredentials found = credentials_named("scripted");
  found.access_key = "AKIDCHAINFOUND00042";
  found.secret_key = "chain-secret-found-42-never-shown";
  found.session_token = "chain-token-found-42-never-shown";
  const ScriptedChain c({{{found, ""}, ""}});
  ASSERT_EQ(find(c).secret_key, found.secret_key);
  for (const std::string& secret :
       {found.access_key, found.secret_key, found.session_token}) {
    const std::string e = ConfigError("a server echoed " + secret).what();
    EXPECT_EQ(e.find(secret), std::string::npos) << e;
    EXPECT_NE(e.find("[redacted]"), std::string::npos) << e;
  }
}

// The standard chain on FakeAws's variables: HOME an empty folder, the metadata
// service disabled unless a test names an endpoint, and S3 at a port nothing
// listens on, so no request leaves 127.0.0.1 and none succeeds unless it should.
// credential_server.py (start_credentials()) hands out the key that
// SignedS3Test's rclone takes.
class StandardChainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(root_ / "home");
    aws_.set("HOME", root_ / "home");
    aws_.set("AWS_EC2_METADATA_DISABLED", "true");
    aws_.set("AWS_REGION", "us-east-1");
    aws_.set("AWS_ENDPOINT_URL",
             "http://127.0.0.1:" + std::to_string(testing_util::free_port()));
  }

  // Starts the credential server; its credentials expire `ttl` seconds after each
  // is handed out.
  void start_credentials(int ttl = 3600) {
    server_ = std::make_unique<testing_util::CredentialServer>(root_.path(), "AKIDTEST",
                                                               "s3cr3t-key", ttl);
  }
  std::string server_url() const { return server_->url(); }
  int issued(const std::string& kind) const { return server_->issued(kind); }

  // The standard chain's answer on aws_'s variables.
  AwsCredentials find() const {
    return CredentialChain::standard().find({aws_.env(), http_, "us-east-1"});
  }
  // A reader that reads S3's settings from aws_.
  std::unique_ptr<remote::ObjectReader> reader(bool anonymous = false) const {
    remote::FetchOptions options;
    options.max_attempts = 3;
    options.anonymous = anonymous;
    options.aws = aws_.env();
    return std::make_unique<remote::ObjectReader>(options);
  }
  // What reading s3://data/index.json with `r` says: the error, or "(no error)".
  static std::string read_error(const remote::ObjectReader& r) {
    std::vector<std::uint8_t> out;
    return error_of([&] {
      if (!r.read_if_present(*remote::ObjectUrl::parse("s3://data/index.json"), out,
                             1 << 20))
        throw DataError("s3://data/index.json: no such object");
    });
  }
  std::string read_error() const { return read_error(*reader()); }
  void write_file(const std::string& name, const std::string& text) const {
    std::ofstream(root_ / name) << text;
  }
  // Container credentials from the credential server, with its token.
  void use_container() {
    write_file("auth", "container-auth");
    aws_.set("AWS_CONTAINER_CREDENTIALS_FULL_URI", server_url() + "/container");
    aws_.set("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", root_ / "auth");
  }

  TempDir root_;
  FakeAws aws_;
  const remote::HttpClient http_;
  std::unique_ptr<testing_util::CredentialServer> server_;
};

TEST_F(StandardChainTest, EachPlaceIsAskedInTheCliOrder) {
  start_credentials();
  write_file("jwt", "web-identity-jwt\n");
  write_file("credentials",
             "[reader]\naws_access_key_id = AKIDPROFILE\n"
             "aws_secret_access_key = profile-secret\n");
  aws_.set("AWS_ACCESS_KEY_ID", "AKIDENVIRONMENT");
  aws_.set("AWS_SECRET_ACCESS_KEY", "environment-secret");
  aws_.set("AWS_WEB_IDENTITY_TOKEN_FILE", root_ / "jwt");
  aws_.set("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/reader");
  aws_.set("AWS_ENDPOINT_URL_STS", server_url());
  aws_.set("AWS_SHARED_CREDENTIALS_FILE", root_ / "credentials");
  aws_.set("AWS_PROFILE", "reader");
  use_container();
  aws_.set("AWS_EC2_METADATA_SERVICE_ENDPOINT", server_url());
  aws_.unset("AWS_EC2_METADATA_DISABLED");
  // Each place set up, then taken away: the next one in the CLI's order answers.
  const std::vector<std::pair<std::string, std::vector<std::string>>> ladder = {
      {"the environment (AWS_ACCESS_KEY_ID)", {"AWS_ACCESS_KEY_ID"}},
      {"web identity (role arn:aws:iam::123456789012:role/reader through STS at " +
           server_url() + ")",
       {"AWS_WEB_IDENTITY_TOKEN_FILE"}},
      {"profile reader in " + (root_ / "credentials"),
       {"AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE"}},
      {"container credentials at " + server_url() +
           "/container (AWS_CONTAINER_CREDENTIALS_FULL_URI)",
       {"AWS_CONTAINER_CREDENTIALS_FULL_URI"}},
      {"the instance metadata service at " + server_url() + " (role test-role)", {}},
  };
  for (const auto& [source, then_unset] : ladder) {
    const AwsCredentials c = find();
    EXPECT_EQ(c.source, source);
    for (const std::string& name : then_unset) aws_.unset(name);
  }
  EXPECT_EQ(issued("sts"), 1);
  EXPECT_EQ(issued("container"), 1);
  EXPECT_EQ(issued("imds"), 1);
}

TEST_F(StandardChainTest, NoCredentialsAnywhereListsEveryPlaceLooked) {
  const std::string e = read_error();
  for (const char* place :
       {"no AWS credentials for s3:// requests; looked in:",
        "the environment (AWS_ACCESS_KEY_ID unset)",
        "web identity (AWS_WEB_IDENTITY_TOKEN_FILE", "profile default (not in ",
        "container credentials (AWS_CONTAINER_CREDENTIALS_",
        "the instance metadata service (AWS_EC2_METADATA_DISABLED=true)",
        "AWS_NO_SIGN_REQUEST=true"})
    EXPECT_NE(e.find(place), std::string::npos) << place << "\n" << e;
  // A metadata endpoint that was named but does not answer is an error of its own.
  aws_.unset("AWS_EC2_METADATA_DISABLED");
  const std::string closed =
      "http://127.0.0.1:" + std::to_string(testing_util::free_port());
  aws_.set("AWS_EC2_METADATA_SERVICE_ENDPOINT", closed);
  EXPECT_NE(read_error().find("the instance metadata service at " + closed +
                              " (AWS_EC2_METADATA_SERVICE_ENDPOINT): "),
            std::string::npos);
  aws_.set("AWS_METADATA_SERVICE_TIMEOUT", "soon");
  EXPECT_NE(read_error().find("AWS_METADATA_SERVICE_TIMEOUT=soon: not a number"),
            std::string::npos);
}

TEST_F(StandardChainTest, ASourceThatFailsIsNamedAndNothingGoesUnsigned) {
  start_credentials();
  // STS refuses another token: the web identity is named with STS's code.
  write_file("jwt", "stolen-jwt");
  aws_.set("AWS_WEB_IDENTITY_TOKEN_FILE", root_ / "jwt");
  aws_.set("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/reader");
  aws_.set("AWS_ENDPOINT_URL_STS", server_url());
  std::string e = read_error();
  EXPECT_NE(
      e.find("web identity (role arn:aws:iam::123456789012:role/reader through STS"),
      std::string::npos)
      << e;
  EXPECT_NE(e.find("HTTP 403 AccessDenied"), std::string::npos) << e;
  EXPECT_EQ(e.find("stolen-jwt"), std::string::npos) << e;
  aws_.set("AWS_WEB_IDENTITY_TOKEN_FILE", root_ / "missing");
  EXPECT_NE(read_error().find("AWS_WEB_IDENTITY_TOKEN_FILE " + (root_ / "missing") +
                              ": cannot be read"),
            std::string::npos);
  for (const char* v : {"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"}) aws_.unset(v);
  // The container endpoint without its token.
  aws_.set("AWS_CONTAINER_CREDENTIALS_FULL_URI", server_url() + "/container");
  e = read_error();
  EXPECT_NE(e.find("container credentials at " + server_url() +
                   "/container (AWS_CONTAINER_CREDENTIALS_FULL_URI): HTTP 401"),
            std::string::npos)
      << e;
  // Plain http to an address that is not the container agent's is not asked.
  aws_.set("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.1.2.3/creds");
  EXPECT_NE(read_error().find("plain http only to a loopback address literal"),
            std::string::npos);
  aws_.unset("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  // A profile that assumes a role: not supported, said so.
  write_file("config",
             "[profile ops]\nrole_arn = arn:aws:iam::1:role/x\n"
             "source_profile = default\n");
  aws_.set("AWS_CONFIG_FILE", root_ / "config");
  aws_.set("AWS_PROFILE", "ops");
  EXPECT_NE(
      read_error().find("profile ops uses role_arn, which seedloader does not support"),
      std::string::npos);
  EXPECT_EQ(issued("imds") + issued("container") + issued("sts"), 0);
}

TEST_F(StandardChainTest, AnIdentityTokenThatStsEchoesIsNeverShown) {
  // The credential server's STS quotes the token it refuses, decoded and as
  // sent (percent-encoded), past the 200 characters of its message kept: no run
  // of 16 of its characters is left, nor of its encoded form.
  start_credentials();
  std::string token = "k8s.sa-token/";
  for (int i = 0; token.size() < 400; ++i)
    token += "abcdefghij+/="[i % 13] + std::to_string(i);
  write_file("jwt", token + "\n");
  aws_.set("AWS_WEB_IDENTITY_TOKEN_FILE", root_ / "jwt");
  aws_.set("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/reader");
  aws_.set("AWS_ENDPOINT_URL_STS", server_url());
  const std::string e = read_error();
  EXPECT_NE(e.find("through STS at " + server_url() +
                   "): HTTP 403 AccessDenied: Not "
                   "authorized to perform sts:AssumeRoleWithWebIdentity with the token "
                   "[redacted] (sent as [redacted])"),
            std::string::npos)
      << e;
  std::string encoded;
  for (const char ch : token) {
    char hex[4];
    std::snprintf(hex, sizeof hex, "%%%02X", static_cast<unsigned char>(ch));
    encoded += std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-'
                   ? std::string(1, ch)
                   : std::string(hex);
  }
  for (const std::string& form : {token, encoded}) {
    for (std::size_t i = 0; i + 16 <= form.size(); ++i)
      ASSERT_EQ(e.find(form.substr(i, 16)), std::string::npos) << form.substr(i, 16) << e;
  }
  EXPECT_EQ(issued("sts"), 0);
}

// S3ConfigCache on FakeAws's clock: credentials are asked for once, and again
// only once they fall due.
using S3ConfigCacheTest = StandardChainTest;

TEST_F(S3ConfigCacheTest, CredentialsAreFoundOnceAndAgainWhenTheyFallDue) {
  start_credentials(3600);
  use_container();
  remote::S3ConfigCache cache(aws_.env(), http_, false);
  const std::string first = cache.current()->session_token;
  // An hour to live: found once for any number of requests within it ...
  aws_.advance(seconds(3000));
  EXPECT_EQ(cache.current()->session_token, first);
  EXPECT_EQ(issued("container"), 1);
  // ... and again within five minutes of their expiry.
  aws_.advance(seconds(400));
  const std::shared_ptr<const remote::S3Config> renewed = cache.current();
  EXPECT_NE(renewed->session_token, first);
  EXPECT_EQ(renewed->found_at, aws_.now());
  EXPECT_EQ(issued("container"), 2);
}

TEST(CredentialRenewalTest, DueFiveMinutesBeforeExpiryOrAtHalfAShortLife) {
  using std::chrono::milliseconds;
  using std::chrono::minutes;
  remote::S3Config c;
  c.found_at = std::chrono::system_clock::now();
  EXPECT_FALSE(c.refresh_due(c.found_at + std::chrono::hours(24 * 365)));  // static
  EXPECT_FALSE(c.expired(c.found_at + std::chrono::hours(24 * 365)));
  c.expiration = c.found_at + std::chrono::hours(1);
  EXPECT_FALSE(c.refresh_due(c.found_at + minutes(55) - milliseconds(1)));
  EXPECT_TRUE(c.refresh_due(c.found_at + minutes(55)));
  EXPECT_FALSE(c.expired(c.found_at + minutes(60) - milliseconds(1)));
  EXPECT_TRUE(c.expired(c.found_at + minutes(60)));
  c.expiration = c.found_at + seconds(2);
  EXPECT_FALSE(c.refresh_due(c.found_at + milliseconds(999)));
  EXPECT_TRUE(c.refresh_due(c.found_at + seconds(1)));
  EXPECT_FALSE(c.expired(c.found_at + milliseconds(1999)));
  EXPECT_TRUE(c.expired(c.found_at + seconds(2)));
}

// The chain's credentials signing real S3 requests: rclone serve s3 of root_,
// whose folder "data" (the packed data set) is the bucket, taking the key the
// credential server hands out.
class SignedS3Test : public StandardChainTest {
 protected:
  void SetUp() override {
    const std::string missing =
        testing_util::server_missing(testing_util::rclone_path(), "rclone");
    if (!missing.empty()) GTEST_SKIP() << missing;
    StandardChainTest::SetUp();
    testing_util::write_packed(root_);
    s3_ = std::make_unique<testing_util::RcloneS3>(root_.path(), root_ / "rclone",
                                                   "AKIDTEST", "s3cr3t-key");
    aws_.set("AWS_ENDPOINT_URL", s3_->endpoint());
  }
  // index.json as the bucket holds it.
  std::vector<std::uint8_t> index_bytes() const {
    std::ifstream in(root_ / "data/index.json", std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  std::unique_ptr<testing_util::RcloneS3> s3_;
};

TEST_F(SignedS3Test, AProfileThatOnlySetsARegionLeavesTheChainGoingOn) {
  start_credentials();
  write_file("config", "[default]\nregion = us-east-1\n");
  aws_.set("AWS_CONFIG_FILE", root_ / "config");
  use_container();
  std::vector<std::uint8_t> out;
  ASSERT_TRUE(reader()->read_if_present(*remote::ObjectUrl::parse("s3://data/index.json"),
                                        out, 1 << 20));
  EXPECT_EQ(out, index_bytes());
  EXPECT_EQ(issued("container"), 1);
}

TEST_F(SignedS3Test, ValidCredentialsOutliveAFailedRefreshAndExpiredOnesNever) {
  start_credentials(3600);  // due after 55 minutes, expired after 60
  use_container();
  const std::unique_ptr<remote::ObjectReader> r = reader();
  const auto index = *remote::ObjectUrl::parse("s3://data/index.json");
  std::vector<std::uint8_t> out;
  ASSERT_TRUE(r->read_if_present(index, out, 1 << 20));
  server_->fail_container();  // the agent goes down
  aws_.advance(seconds(3400));
  // The refresh fails; the old ones still sign.
  ASSERT_TRUE(r->read_if_present(index, out, 1 << 20));
  aws_.advance(seconds(3600));
  const std::string e = read_error(*r);
  EXPECT_NE(e.find("container credentials at " + server_url() + "/container"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("HTTP 500"), std::string::npos) << e;
  EXPECT_EQ(issued("container"), 1);
}

TEST_F(SignedS3Test, UnsignedRequestsOnlyWhenAskedFor) {
  // The S3 server wants signed requests: an unsigned one is its refusal (rclone:
  // 400 UnsupportedAlgorithm), not a credentials error.
  aws_.set("AWS_NO_SIGN_REQUEST", "true");
  const std::string e = read_error();
  EXPECT_NE(e.find("GET s3://data/index.json: HTTP 400"), std::string::npos) << e;
  EXPECT_EQ(e.find("no AWS credentials"), std::string::npos) << e;
  aws_.unset("AWS_NO_SIGN_REQUEST");
  const std::string a = read_error(*reader(/*anonymous=*/true));
  EXPECT_NE(a.find("GET s3://data/index.json: HTTP 400"), std::string::npos) << a;
}

// Credentials found the way cloud jobs get them, end to end: a TarShards over
// s3:// and its workers, the credential server handing out rclone's key with a
// new session token each time.
class S3CredentialsTest : public SignedS3Test {
 protected:
  void SetUp() override {
    SignedS3Test::SetUp();
    if (IsSkipped()) return;
    process_ = std::make_unique<ProcessAws>(root_ / "home");
    process_->set("AWS_ENDPOINT_URL", s3_->endpoint());
    process_->set("AWS_REGION", "us-east-1");
  }
  void TearDown() override { process_.reset(); }

  std::unique_ptr<ProcessAws> process_;
};

TEST_F(S3CredentialsTest, EachPlaceCloudJobsGetCredentialsFromSignsTheRequests) {
  start_credentials();
  const TarShards local(root_ / "data", parse_transform_spec(kTransform));
  const Epoch want = run_epoch(local, 0, 0);
  write_file("jwt", "web-identity-jwt\n");
  write_file("credentials",
             "[reader]\naws_access_key_id = AKIDTEST\n"
             "aws_secret_access_key = s3cr3t-key\n");
  write_file("auth", "container-auth");
  const std::vector<std::pair<std::string, std::map<std::string, std::string>>> sources =
      {
          {"sts",
           {{"AWS_WEB_IDENTITY_TOKEN_FILE", root_ / "jwt"},
            {"AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/reader"},
            {"AWS_ENDPOINT_URL_STS", server_url()}}},
          {"profile",
           {{"AWS_SHARED_CREDENTIALS_FILE", root_ / "credentials"},
            {"AWS_PROFILE", "reader"}}},
          {"container",
           {{"AWS_CONTAINER_CREDENTIALS_FULL_URI", server_url() + "/container"},
            {"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", root_ / "auth"}}},
          {"imds",
           {{"AWS_EC2_METADATA_SERVICE_ENDPOINT", server_url()},
            {"AWS_EC2_METADATA_DISABLED", ""}}},
      };
  for (const auto& [kind, variables] : sources) {
    for (const auto& [name, value] : variables) process_->set(name, value);
    const TarShards remote("s3://data/", parse_transform_spec(kTransform),
                           cached_in(root_ / ("cache-" + kind)));
    EXPECT_TRUE(run_epoch(remote, 0, 0) == want) << kind;
    // An hour to live: found once for the index and every shard after it.
    if (kind != "profile") EXPECT_EQ(issued(kind), 1) << kind;
    for (const auto& [name, value] : variables) process_->unset(name);
    process_->set("AWS_EC2_METADATA_DISABLED", "true");
  }
  // All of them at once: the first in the AWS CLI's order, web identity, is used.
  for (const auto& [kind, variables] : sources)
    for (const auto& [name, value] : variables) process_->set(name, value);
  const TarShards remote("s3://data/", parse_transform_spec(kTransform),
                         cached_in(root_ / "cache-all"));
  EXPECT_TRUE(run_epoch(remote, 0, 0) == want);
  EXPECT_EQ(issued("sts"), 2);
  EXPECT_EQ(issued("container") + issued("imds"), 2);  // the two runs above only
}

TEST_F(S3CredentialsTest, CredentialsAboutToExpireAreFetchedAgainInEveryWorker) {
  // Two seconds to live: due again after one (half their life), in the process
  // that built the data set and in each worker forked after it.
  start_credentials(2);
  write_file("auth", "container-auth");
  process_->set("AWS_CONTAINER_CREDENTIALS_FULL_URI", server_url() + "/container");
  process_->set("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", root_ / "auth");
  const TarShards local(root_ / "data", parse_transform_spec(kTransform));
  const TarShards remote("s3://data/", parse_transform_spec(kTransform),
                         cached_in(root_ / "cache"));
  EXPECT_EQ(issued("container"), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  EXPECT_TRUE(run_epoch(remote, 2, 0) == run_epoch(local, 0, 0));
  EXPECT_GE(issued("container"), 3);  // each worker found them again
}

// moto as STS and S3 (tests/remote/moto_server.py): web identity credentials
// from its STS, every S3 request's signature, session token and expiry checked
// against the real time.
class MotoCredentialsTest : public StandardChainTest {
 protected:
  void SetUp() override {
    const std::string missing =
        testing_util::server_missing(testing_util::moto_python(), "moto");
    if (!missing.empty()) GTEST_SKIP() << missing;
    StandardChainTest::SetUp();
    testing_util::write_packed(root_);
  }
  void TearDown() override { process_.reset(); }

  // Starts moto; its credentials live `ttl` seconds. The credential chain finds
  // them through web identity, as an EKS pod does: in aws_, and in the process's
  // environment for a TarShards.
  void start_moto(int ttl) {
    moto_ = std::make_unique<testing_util::MotoServer>(
        root_ / "data", ttl, root_ / "sts.log", "web-identity-jwt", root_ / "moto.out");
    write_file("jwt", "web-identity-jwt");
    process_ = std::make_unique<ProcessAws>(root_ / "home");
    const std::map<std::string, std::string> variables = {
        {"AWS_ENDPOINT_URL", moto_->endpoint()},
        {"AWS_ENDPOINT_URL_STS", moto_->endpoint()},
        {"AWS_REGION", "us-east-1"},
        {"AWS_WEB_IDENTITY_TOKEN_FILE", root_ / "jwt"},
        {"AWS_ROLE_ARN", testing_util::kMotoRole}};
    for (const auto& [name, value] : variables) {
      aws_.set(name, value);
      process_->set(name, value);
    }
  }
  // The credentials moto's STS handed out, in order: {key, secret, token}.
  std::vector<std::array<std::string, 3>> handed_out() const {
    std::vector<std::array<std::string, 3>> out;
    std::ifstream in(root_ / "sts.log");
    for (std::string kind, key, secret, token; in >> kind >> key >> secret >> token;)
      out.push_back({key, secret, token});
    return out;
  }

  std::unique_ptr<testing_util::MotoServer> moto_;
  std::unique_ptr<ProcessAws> process_;
};

TEST_F(MotoCredentialsTest, WebIdentityCredentialsAreRenewedBeforeTheServerRefusesThem) {
  start_moto(4);  // due again after 2 s, refused after 4
  const TarShards local(root_ / "data", parse_transform_spec(kTransform));
  const Epoch want = run_epoch(local, 0, 0);
  // The process that built the data set, and each worker forked from it after
  // the credentials fell due, fetch new ones before signing.
  const TarShards remote("s3://data/", parse_transform_spec(kTransform),
                         cached_in(root_ / "cache"));
  ASSERT_EQ(handed_out().size(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(2300));
  EXPECT_TRUE(run_epoch(remote, 2, 0) == want);
  EXPECT_GE(handed_out().size(), 3u);
  // A reader that lives past several lifetimes signs every request with valid ones.
  const remote::ObjectReader reader;
  const auto index = *remote::ObjectUrl::parse("s3://data/index.json");
  std::vector<std::uint8_t> out;
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(reader.read_if_present(index, out, 1 << 20)) << round;
    std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  }
  // The server does refuse what the loader never sends: the first credentials,
  // long expired.
  const std::array<std::string, 3> first = handed_out().front();
  aws_.unset("AWS_WEB_IDENTITY_TOKEN_FILE");
  aws_.set("AWS_ACCESS_KEY_ID", first[0]);
  aws_.set("AWS_SECRET_ACCESS_KEY", first[1]);
  aws_.set("AWS_SESSION_TOKEN", first[2]);
  const std::string e = read_error();
  EXPECT_NE(e.find("GET s3://data/index.json: HTTP 403"), std::string::npos) << e;
}

TEST_F(MotoCredentialsTest, AWrongIdentityTokenIsAnErrorNamingStsNeverAnUnsignedRequest) {
  start_moto(3600);
  write_file("jwt", "someone-else");
  const std::string e = read_error();
  EXPECT_NE(e.find("web identity (role " + std::string(testing_util::kMotoRole) +
                   " through STS at " + moto_->endpoint() + ")"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("403"), std::string::npos) << e;
  EXPECT_TRUE(handed_out().empty());
}

TEST(AwsTimeTest, PlainHttpGoesOnlyToLoopbackLiteralsAndTheContainerAgents) {
  for (const char* url : {"https://sts.example.com/", "http://127.0.0.1:8080/x",
                          "http://127.1.2.3/", "http://localhost/", "http://[::1]:9/"})
    EXPECT_TRUE(remote::plain_http_allowed(url, false)) << url;
  for (const char* url : {"http://169.254.170.2/v2/credentials",
                          "http://169.254.170.23/v1", "http://[fd00:ec2::23]/v1"}) {
    EXPECT_TRUE(remote::plain_http_allowed(url, true)) << url;
    EXPECT_FALSE(remote::plain_http_allowed(url, false)) << url;
  }
  for (const char* url :
       {"http://127.0.0.1.evil.example/", "http://127.x.example/", "http://10.1.2.3/",
        "http://user@evil.example/", "http://[fd00::1]/", "ftp://127.0.0.1/", "127.0.0.1",
        "http://169.254.169.254/"})
    EXPECT_FALSE(remote::plain_http_allowed(url, true)) << url;
}

TEST(AwsTimeTest, TheFormsAwsWritesParse) {
  const auto t = remote::parse_aws_time("2026-12-04T17:00:00Z");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(std::chrono::system_clock::to_time_t(*t), 1796403600);
  EXPECT_EQ(remote::parse_aws_time("2026-12-04T17:00:00.123Z"), t);
  EXPECT_EQ(remote::parse_aws_time("2026-12-04T17:00:00+00:00"), t);
  EXPECT_FALSE(remote::parse_aws_time("2026-12-04 17:00:00"));
  EXPECT_FALSE(remote::parse_aws_time("2026-12-04T17:00:00+02:00"));
  EXPECT_FALSE(remote::parse_aws_time(""));
  EXPECT_FALSE(remote::parse_aws_time("2026-13-04T17:00:00Z"));
  EXPECT_FALSE(remote::parse_aws_time("2026-12-04T25:00:00Z"));
}

}  // namespace
}  // namespace seedloader

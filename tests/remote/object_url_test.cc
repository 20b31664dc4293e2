// ObjectUrl parsing and display, and S3Config from the AWS variables (given
// through FakeAws, never the process's) and the credentials file: what a user
// writes maps to the request made, and no secret reaches a message.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>

#include "remote/http_client.h"
#include "remote/object_url.h"
#include "remote/s3_config.h"
#include "seedloader/error.h"
#include "tests/common/temp_dir.h"
#include "tests/remote/fake_aws.h"

namespace seedloader::remote {
namespace {

using testing_util::TempDir;

TEST(ObjectUrlTest, ParsesTheThreeSchemesAndLeavesPathsAlone) {
  EXPECT_FALSE(ObjectUrl::parse("/data/shards/").has_value());
  EXPECT_FALSE(ObjectUrl::parse("shards/{000..009}.tar").has_value());

  const ObjectUrl s3 = *ObjectUrl::parse("s3://bucket/a/b/");
  EXPECT_EQ(s3.scheme, ObjectUrl::Scheme::kS3);
  EXPECT_EQ(s3.host, "bucket");
  EXPECT_EQ(s3.path, "a/b/");
  EXPECT_EQ(s3.sibling("index.json").display(), "s3://bucket/a/b/index.json");

  const ObjectUrl http = *ObjectUrl::parse("http://127.0.0.1:8080/x/index.json");
  EXPECT_EQ(http.host, "127.0.0.1:8080");
  EXPECT_EQ(http.path, "/x/index.json");
  EXPECT_EQ(http.sibling("000003.tar").display(), "http://127.0.0.1:8080/x/000003.tar");
  EXPECT_EQ(ObjectUrl::parse("https://host")->display(), "https://host/");
}

TEST(ObjectUrlTest, APasswordOfDigitsBeforeAnUnencodedSlashIsRefusedUnshown) {
  try {
    ObjectUrl::parse("http://bob:2024/x@host/data/");
    FAIL() << "parsed";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).find("2024"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("encode '/' and '@'"), std::string::npos);
  }
  EXPECT_EQ(ObjectUrl::parse("http://host:80/a/b@c")->path, "/a/b@c");
}

TEST(ObjectUrlTest, ASiblingNameIsOneSegmentWhateverItHolds) {
  const ObjectUrl http = *ObjectUrl::parse("http://host/pack/index.json");
  EXPECT_EQ(http.sibling("000001.tar").path, "/pack/000001.tar");
  // Encoded, so a server that decodes the path finds no other place in it.
  EXPECT_EQ(http.sibling("..%2fsecret.tar").path, "/pack/..%252fsecret.tar");
  EXPECT_EQ(http.sibling("../secret.tar").path, "/pack/..%2Fsecret.tar");
  EXPECT_EQ(http.sibling("..").path, "/pack/%2E%2E");
  EXPECT_EQ(http.sibling(std::string("a\0b", 3)).path, "/pack/a%00b");
  // An S3 key is raw bytes: S3Config::http_url() encodes them for the request.
  EXPECT_EQ(ObjectUrl::parse("s3://b/pack/")->sibling("a b").path, "pack/a b");
}

TEST(ObjectUrlTest, CredentialsInAnHttpUrlAreNeverDisplayed) {
  const ObjectUrl url = *ObjectUrl::parse("https://alice:s3cr3t@host/data/");
  EXPECT_EQ(url.userinfo, "alice:s3cr3t");
  EXPECT_EQ(url.display(), "https://host/data/");
  EXPECT_EQ(url.sibling("a.tar").display().find("s3cr3t"), std::string::npos);
}

TEST(ObjectUrlTest, MalformedUrlsAreConfigErrorsWithoutTheirRest) {
  const std::map<std::string, std::string> cases = {
      {"ftp://host/x", "unknown scheme 'ftp'"},
      {"s3:///key", "no bucket"},
      {"http:///x", "no host"},
      {"https://host/x?sig=s3cr3t", "query or fragment"},
      {"s3://key:s3cr3t@bucket/x", "not the URL"},
      {"https://u:s3cr3t/more@host/x", "not a number"},
  };
  for (const auto& [text, message] : cases) {
    try {
      ObjectUrl::parse(text);
      ADD_FAILURE() << text << " parsed";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(message), std::string::npos) << what;
      EXPECT_EQ(what.find("s3cr3t"), std::string::npos) << what;
    }
  }
}

// S3Config read from `values` alone, the metadata service disabled (no request
// leaves the machine).
S3Config config_of(const std::map<std::string, std::string>& values) {
  testing_util::FakeAws aws;
  aws.set("AWS_EC2_METADATA_DISABLED", "true");
  for (const auto& [name, value] : values) aws.set(name, value);
  const HttpClient http;
  return S3Config::from_environment(aws.env(), http, false);
}

TEST(S3ConfigTest, VariablesWinAndTheEndpointMakesRequestsPathStyle) {
  const S3Config c = config_of({{"AWS_ACCESS_KEY_ID", "AKID"},
                                {"AWS_SECRET_ACCESS_KEY", "SECRET"},
                                {"AWS_SESSION_TOKEN", "TOKEN"},
                                {"AWS_DEFAULT_REGION", "eu-west-1"},
                                {"AWS_ENDPOINT_URL", "http://other:1"},
                                {"AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000/"}});
  EXPECT_EQ(c.access_key, "AKID");
  EXPECT_EQ(c.secret_key, "SECRET");
  EXPECT_EQ(c.session_token, "TOKEN");
  EXPECT_EQ(c.region, "eu-west-1");
  EXPECT_EQ(c.http_url(*ObjectUrl::parse("s3://bkt/dir/a b+.tar")),
            "http://127.0.0.1:9000/bkt/dir/a%20b%2B.tar");
}

TEST(S3ConfigTest, AwsItselfIsAskedVirtualHostedInItsRegion) {
  const S3Config c = config_of({{"AWS_REGION", "ap-south-1"},
                                {"HOME", "/nonexistent"},
                                {"AWS_NO_SIGN_REQUEST", "true"}});
  EXPECT_FALSE(c.signed_requests());
  EXPECT_EQ(c.http_url(*ObjectUrl::parse("s3://bkt/k.tar")),
            "https://bkt.s3.ap-south-1.amazonaws.com/k.tar");
  EXPECT_EQ(c.http_url(*ObjectUrl::parse("s3://my.bkt/k.tar")),
            "https://s3.ap-south-1.amazonaws.com/my.bkt/k.tar");
}

TEST(S3ConfigTest, AProfileComesFromTheCredentialsFile) {
  TempDir dir;
  {
    std::ofstream f(dir / "credentials");
    f << "[default]\naws_access_key_id = D\naws_secret_access_key = DS\n\n"
      << "# a comment\n[team]\naws_access_key_id=T\naws_secret_access_key=TS\n"
      << "aws_session_token = TT\n[broken]\naws_access_key_id = B\n";
  }
  EXPECT_EQ(config_of({{"AWS_SHARED_CREDENTIALS_FILE", dir / "credentials"}}).access_key,
            "D");
  const S3Config c = config_of(
      {{"AWS_SHARED_CREDENTIALS_FILE", dir / "credentials"}, {"AWS_PROFILE", "team"}});
  EXPECT_EQ(c.access_key, "T");
  EXPECT_EQ(c.secret_key, "TS");
  EXPECT_EQ(c.session_token, "TT");
  for (const char* profile : {"missing", "broken"}) {
    try {
      config_of({{"AWS_SHARED_CREDENTIALS_FILE", dir / "credentials"},
                 {"AWS_PROFILE", profile}});
      ADD_FAILURE() << profile;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(profile), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find("DS"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace seedloader::remote

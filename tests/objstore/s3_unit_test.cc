// The S3 store's pure parts, without a server: Signature V4 against the examples that AWS
// documents for S3 ("Signature Calculations for the Authorization Header"), encodings, the XML
// answers, and the settings OpenS3Store refuses.
#include <gtest/gtest.h>

#include "objstore/object_store.h"
#include "objstore/s3_xml.h"
#include "objstore/sigv4.h"

namespace dbs::s3 {
namespace {

const Credentials kExampleCreds{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                                ""};
constexpr char kEmptySha[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::string SignatureOf(const std::string& auth) {
  const size_t at = auth.find("Signature=");
  return at == std::string::npos ? std::string() : auth.substr(at + 10);
}

TEST(SigV4, AwsExampleGetObjectWithRange) {
  RequestToSign r;
  r.method = "GET";
  r.encoded_path = "/test.txt";
  r.headers = {{"host", "examplebucket.s3.amazonaws.com"}, {"range", "bytes=0-9"}};
  r.payload_sha256 = kEmptySha;
  const std::string auth = SignV4(&r, kExampleCreds, "us-east-1", "20130524T000000Z");
  EXPECT_EQ(auth,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(r.headers["x-amz-date"], "20130524T000000Z");
  EXPECT_EQ(r.headers["x-amz-content-sha256"], kEmptySha);
}

TEST(SigV4, AwsExamplePutObject) {
  const std::string body = "Welcome to Amazon S3.";
  RequestToSign r;
  r.method = "PUT";
  r.encoded_path = "/" + UriEncode("test$file.text", true);
  EXPECT_EQ(r.encoded_path, "/test%24file.text");
  r.headers = {{"host", "examplebucket.s3.amazonaws.com"},
               {"date", "Fri, 24 May 2013 00:00:00 GMT"},
               {"x-amz-storage-class", "REDUCED_REDUNDANCY"}};
  r.payload_sha256 = Sha256Hex(body);
  EXPECT_EQ(r.payload_sha256, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  EXPECT_EQ(SignatureOf(SignV4(&r, kExampleCreds, "us-east-1", "20130524T000000Z")),
            "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd");
}

TEST(SigV4, AwsExampleListObjectsQuery) {
  RequestToSign r;
  r.method = "GET";
  r.encoded_path = "/";
  r.query = {{"prefix", "J"}, {"max-keys", "2"}};  // sorted by the signer
  r.headers = {{"host", "examplebucket.s3.amazonaws.com"}};
  r.payload_sha256 = kEmptySha;
  EXPECT_EQ(SignatureOf(SignV4(&r, kExampleCreds, "us-east-1", "20130524T000000Z")),
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
  EXPECT_EQ(CanonicalQuery(r.query), "max-keys=2&prefix=J");
}

TEST(SigV4, AwsExampleSubresourceWithoutValue) {
  RequestToSign r;
  r.method = "GET";
  r.encoded_path = "/";
  r.query = {{"lifecycle", ""}};
  r.headers = {{"host", "examplebucket.s3.amazonaws.com"}};
  r.payload_sha256 = kEmptySha;
  EXPECT_EQ(SignatureOf(SignV4(&r, kExampleCreds, "us-east-1", "20130524T000000Z")),
            "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543");
}

TEST(SigV4, SessionTokenIsSignedAndSecretNeverAppears) {
  Credentials c = kExampleCreds;
  c.session_token = "token/with+chars=";
  RequestToSign r;
  r.method = "GET";
  r.encoded_path = "/b/k";
  r.headers = {{"host", "h"}};
  r.payload_sha256 = kEmptySha;
  const std::string auth = SignV4(&r, c, "eu-west-1", "20260102T030405Z");
  EXPECT_NE(auth.find("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token"),
            std::string::npos)
      << auth;
  EXPECT_EQ(r.headers["x-amz-security-token"], c.session_token);
  EXPECT_NE(auth.find("/20260102/eu-west-1/s3/aws4_request"), std::string::npos);
  EXPECT_EQ(auth.find(c.secret_key), std::string::npos);
}

TEST(SigV4, Encoding) {
  EXPECT_EQ(UriEncode("a b/c+d~e_f.g-h", true), "a%20b/c%2Bd~e_f.g-h");
  EXPECT_EQ(UriEncode("a/b", false), "a%2Fb");
  EXPECT_EQ(UriEncode("é*'()!", true), "%C3%A9%2A%27%28%29%21");
  EXPECT_EQ(CanonicalQuery({{"uploads", ""}, {"prefix", "a b/"}}), "prefix=a%20b%2F&uploads=");
  std::string b64, hex;
  Md5("", &b64, &hex);
  EXPECT_EQ(hex, "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(b64, "1B2M2Y8AsgTpgAmY7PhCfg==");
  EXPECT_EQ(AmzDateNow().size(), 16u);
}

TEST(S3Xml, ListObjectsV2) {
  const std::string body =
      R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>b</Name><Prefix>p/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>
  <IsTruncated>true</IsTruncated><NextContinuationToken>tok+/=</NextContinuationToken>
  <Contents><Key>p/a &amp; b.csv</Key><LastModified>2026-11-02T10:11:12.345Z</LastModified>
    <ETag>"0123"</ETag><Size>42</Size><StorageClass>STANDARD</StorageClass></Contents>
  <CommonPrefixes><Prefix>p/sub/</Prefix></CommonPrefixes>
</ListBucketResult>)";
  Result<ListPage> page = ParseListObjectsV2(body);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_EQ(page->objects[0].key, "p/a & b.csv");
  EXPECT_EQ(page->objects[0].size, 42u);
  EXPECT_EQ(page->objects[0].etag, "0123");
  EXPECT_EQ(page->objects[0].modified_ms, 1793614272345);
  EXPECT_EQ(page->prefixes, std::vector<std::string>{"p/sub/"});
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_token, "tok+/=");
}

TEST(S3Xml, ErrorsAndMalformedAnswers) {
  XmlError e = ParseError(
      "<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>gone</Message></Error>");
  EXPECT_EQ(e.code, "NoSuchBucket");
  EXPECT_EQ(e.message, "gone");
  EXPECT_TRUE(ParseError("").code.empty());
  EXPECT_TRUE(ParseError("<ListBucketResult/>").code.empty());
  for (const char* bad :
       {"", "<ListBucketResult>", "not xml", "<a><b></a>",
        "<ListBucketResult><Contents><Size>x</Size></Contents></ListBucketResult>", "<Other/>"}) {
    EXPECT_EQ(ParseListObjectsV2(bad).status().code(), StatusCode::kCorruption) << bad;
  }
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "<a>";
  EXPECT_FALSE(ParseListObjectsV2(deep).ok());
  EXPECT_EQ(*ParseUploadId("<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key>"
                           "<UploadId>u-1</UploadId></InitiateMultipartUploadResult>"),
            "u-1");
  EXPECT_FALSE(ParseUploadId("<InitiateMultipartUploadResult/>").ok());
  Result<UploadsPage> up = ParseListMultipartUploads(
      "<ListMultipartUploadsResult><IsTruncated>false</IsTruncated><Upload><Key>k</Key>"
      "<UploadId>u</UploadId><Initiated>2026-01-01T00:00:00.000Z</Initiated></Upload>"
      "</ListMultipartUploadsResult>");
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  ASSERT_EQ(up->uploads.size(), 1u);
  EXPECT_EQ(up->uploads[0].upload_id, "u");
  EXPECT_EQ(up->uploads[0].initiated_ms, 1767225600000);
  EXPECT_EQ(ParseTimeMs("Mon, 02 Nov 2026 10:11:12 GMT"), 1793614272000);
  EXPECT_EQ(ParseTimeMs("garbage"), 0);
  EXPECT_EQ(XmlEscape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
}

TEST(S3Settings, OpenRefusesBadSettings) {
  S3Settings good;
  good.endpoint = "http://127.0.0.1:9000";
  good.bucket = "my-bucket";
  good.access_key = "AK";
  good.secret_key = "SECRET-never-shown";
  ASSERT_TRUE(OpenS3Store(good).ok());
  auto refused = [&](S3Settings s) {
    Result<std::unique_ptr<ObjectStore>> r = OpenS3Store(s);
    EXPECT_FALSE(r.ok());
    if (r.ok()) return;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().find("SECRET-never-shown"), std::string::npos);
  };
  for (const char* ep :
       {"127.0.0.1:9000", "ftp://host", "http://", "http://u:p@host", "http://host/?x"}) {
    S3Settings s = good;
    s.endpoint = ep;
    refused(s);
  }
  for (const std::string& b : {std::string(), std::string("ab"), std::string("Upper"),
                               std::string("a/b"), std::string(64, 'a')}) {
    S3Settings s = good;
    s.bucket = b;
    refused(s);
  }
  S3Settings s = good;
  s.secret_key.clear();
  refused(s);
  s = good;
  s.part_size = 1 << 20;
  refused(s);
  s = good;
  s.prefix = "a/../b";
  refused(s);
  s = good;
  s.bucket = "under_score";
  s.path_style = false;
  refused(s);
  s = good;
  s.prefix = "/root/inside/";
  Result<std::unique_ptr<ObjectStore>> r = OpenS3Store(s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->Describe(), "s3://my-bucket/root/inside at http://127.0.0.1:9000");
}

}  // namespace
}  // namespace dbs::s3

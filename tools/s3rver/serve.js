// Starts s3rver (the pinned npm package @20minutes/s3rver) for the test fixture
// (tests/support/servers.h, S3Server): one data folder, loopback only, and the given access key
// and secret instead of the package's built-in pair. The package ships no executable, so this
// is its command line:
//   node serve.js --access-key AK --secret-key SK -d DIR -a 127.0.0.1 -p PORT
//                 [--service-endpoint HOST] [--key K --cert C] [--allow-mismatched-signatures]
'use strict';
const Account = require('@20minutes/s3rver/lib/models/account');
const { parseAsync } = require('@20minutes/s3rver/lib/cli');

const argv = process.argv.slice();
function take(flag) {
  const i = argv.indexOf(flag);
  if (i < 0 || i + 1 >= argv.length) return undefined;
  const v = argv[i + 1];
  argv.splice(i, 2);
  return v;
}
const accessKey = take('--access-key');
const secretKey = take('--secret-key');
if (!accessKey || !secretKey) {
  console.error('serve.js: --access-key and --secret-key are required');
  process.exit(2);
}
// The package's filesystem store, mended for concurrent requests. Its deleteObject removes the
// key's parent folders once they look empty with a *recursive* removal, so an object that
// another request writes into such a folder in between is deleted with it (two writers staging
// and deleting objects under one prefix lost a freshly written object this way, and got HTTP
// 500 for the folder removed twice). S3 has no folders: here a folder is removed only while it
// is empty (rmdir, never recursive). A write whose folder is removed between its creation and
// the write still fails with HTTP 500, which S3 clients retry (ours does).
const path = require('node:path');
const fsp = require('node:fs').promises;
const FilesystemStore = require('@20minutes/s3rver/lib/stores/filesystem');
FilesystemStore.prototype.deleteObject = async function deleteObject(bucket, key) {
  await Promise.all(
    ['object', 'object.md5', 'metadata.json'].map((r) =>
      fsp.unlink(this.getResourcePath(bucket, key, r)).catch((err) => {
        if (err.code !== 'ENOENT') throw err;
      })
    )
  );
  const bucketPath = this.getBucketPath(bucket);
  const parts = key.split('/');
  parts.pop();
  for (; parts.length; parts.pop()) {
    try {
      await fsp.rmdir(path.join(bucketPath, ...parts));
    } catch (err) {
      if (err.code === 'ENOTEMPTY' || err.code === 'EEXIST' || err.code === 'ENOENT') break;
      throw err;
    }
  }
};

Account.DUMMY_ACCOUNT.revokeAccessKey('S3RVER');
Account.DUMMY_ACCOUNT.createKeyPair(accessKey, secretKey);

parseAsync(argv).catch((err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});

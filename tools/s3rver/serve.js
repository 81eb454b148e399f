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
Account.DUMMY_ACCOUNT.revokeAccessKey('S3RVER');
Account.DUMMY_ACCOUNT.createKeyPair(accessKey, secretKey);

parseAsync(argv).catch((err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});

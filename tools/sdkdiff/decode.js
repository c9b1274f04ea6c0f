// Decodes Drift events as the protocol's official TypeScript SDK does, for the Go chain package's
// differential test (platform/chain/drift, TestSDKDecodesAlike). stdin: one base64 event payload a
// line; stdout: one JSON line each, {"name", "data"} in the chain samples' conventions (see sdk.js),
// or {"error"} when the SDK cannot decode it.
'use strict';
const { program, norm, eachLine } = require('./sdk');

eachLine((line) => {
  const e = program.coder.events.decode(line);
  return e ? { name: e.name, data: norm(e.data) } : { error: 'not an event' };
});

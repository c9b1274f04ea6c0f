// Parses whole transaction logs as the protocol's official TypeScript SDK does (parseLogsWithRaw,
// the parser of its EventSubscriber), for the Go log parser's differential test
// (platform/chain/txlog, TestSDKParsesAlike). stdin: one JSON array of log messages a line; stdout:
// one JSON line each, {"events": [{"name", "data"}]} in the conventions of sdk.js, or {"error"}.
'use strict';
const path = require('path');
const { sdk, program, norm, eachLine } = require('./sdk');
const { parseLogsWithRaw } = require(path.join(sdk, 'lib/node/events/parse'));

eachLine((line) => {
  const { events } = parseLogsWithRaw(program, JSON.parse(line));
  return { events: events.map((e) => ({ name: e.name, data: norm(e.data) })) };
});

// Parses whole transaction logs as the protocol's official TypeScript SDK does (parseLogsWithRaw,
// the parser of its EventSubscriber), for the Go log parser's differential test
// (platform/chain/txlog, TestSDKParsesAlike). stdin: one JSON array of log messages a line; stdout:
// one JSON line each, {"events": [{"name", "data"}]} in the conventions of sdk.js, or {"error"}.
'use strict';
const path = require('path');
const readline = require('readline');
const { sdk, program, norm } = require('./sdk');
const { parseLogsWithRaw } = require(path.join(sdk, 'lib/node/events/parse'));

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on('line', (line) => {
  let out;
  try {
    const { events } = parseLogsWithRaw(program, JSON.parse(line));
    out = { events: events.map((e) => ({ name: e.name, data: norm(e.data) })) };
  } catch (err) {
    out = { error: String(err) };
  }
  process.stdout.write(JSON.stringify(out) + '\n');
});

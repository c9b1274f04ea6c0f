// The protocol's official TypeScript SDK set up offline (a Connection that is never used), and the
// values it decodes written in the chain samples' conventions: 64- and 128-bit integers as decimal
// strings, keys in base58, byte arrays in hex, enums by variant name in lower case.
'use strict';
const path = require('path');
const sdk = path.dirname(require.resolve('@drift-labs/sdk/package.json'));
// The SDK's own anchor (0.29), not whatever another package hoisted.
const anchor = require(require.resolve('@coral-xyz/anchor', { paths: [sdk] }));
const web3 = require(require.resolve('@solana/web3.js', { paths: [sdk] }));
const idl = require(path.join(sdk, 'lib/node/idl/drift.json'));

const provider = new anchor.AnchorProvider(new web3.Connection('http://127.0.0.1:9'),
  new anchor.Wallet(web3.Keypair.generate()), {});
const program = new anchor.Program(idl, new web3.PublicKey('dRiftyHA39MWEi3m9aunc5MzRF1JYuBsbn6VPcn33UH'), provider);

function norm(v) {
  if (v === null || v === undefined) return null;
  if (anchor.BN.isBN(v)) return v.toString(10);
  if (v instanceof web3.PublicKey) return v.toBase58();
  if (Array.isArray(v)) {
    if (v.length > 0 && v.every((x) => typeof x === 'number' && x >= 0 && x < 256 && Number.isInteger(x))) {
      return Buffer.from(v).toString('hex');
    }
    return v.map(norm);
  }
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return Buffer.from(v).toString('hex');
  if (typeof v === 'object') {
    const keys = Object.keys(v);
    // An enum decodes as {variant: {}}, the variant's IDL name camel-cased by anchor: lower case
    // on both sides compares the variant and not the casing ("AMM" or "Amm").
    if (keys.length === 1 && typeof v[keys[0]] === 'object' && v[keys[0]] !== null &&
        !anchor.BN.isBN(v[keys[0]]) && !(v[keys[0]] instanceof web3.PublicKey) &&
        !Array.isArray(v[keys[0]]) && Object.keys(v[keys[0]]).length === 0) {
      return keys[0].toLowerCase();
    }
    const out = {};
    for (const k of keys) out[k] = norm(v[k]);
    return out;
  }
  return v;
}

// eachLine answers every line of stdin with one JSON line of stdout: what fn returns for it, or
// {"error"} when fn throws (the SDK refusing an input is an answer, not a failure of the script).
function eachLine(fn) {
  const rl = require('readline').createInterface({ input: process.stdin, crlfDelay: Infinity });
  rl.on('line', (line) => {
    let out;
    try {
      out = fn(line.trim());
    } catch (err) {
      out = { error: String(err) };
    }
    process.stdout.write(JSON.stringify(out) + '\n');
  });
}

module.exports = { anchor, web3, sdk, program, norm, eachLine };

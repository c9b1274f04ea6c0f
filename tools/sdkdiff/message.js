// Compiles and serializes transactions as web3.js (the one the protocol's SDK resolves) does, for
// the Go transaction compiler's differential test (platform/chain/solana, TestWeb3CompilesAlike).
// stdin: one JSON case a line:
//   {"payer", "blockhash" (base58), "instructions": [{"programId", "keys": [{"pubkey", "isSigner",
//    "isWritable"}], "data" (hex)}], "tables": [{"key", "data" (base64 account data)}],
//    "kind": "v0" | "legacy" (TransactionMessage.compileToLegacyMessage) | "transaction" (the
//    older Transaction class), "seeds": [hex ed25519 seeds of keys that sign]}
// stdout: one JSON line each, {"tables": [the lookup table metadata web3.js decoded], "tx" (base64
// of serialize())}, or "error" in place of "tx" when web3.js refuses the case.
'use strict';
const { web3, eachLine } = require('./sdk');

const key = (s) => new web3.PublicKey(s);

eachLine((line) => {
  const c = JSON.parse(line);
  const instructions = c.instructions.map((ix) => new web3.TransactionInstruction({
    programId: key(ix.programId),
    keys: ix.keys.map((k) => ({ pubkey: key(k.pubkey), isSigner: k.isSigner, isWritable: k.isWritable })),
    data: Buffer.from(ix.data, 'hex'),
  }));
  const signers = (c.seeds || []).map((s) => web3.Keypair.fromSeed(Buffer.from(s, 'hex')));
  const tables = (c.tables || []).map((t) => new web3.AddressLookupTableAccount({
    key: key(t.key),
    state: web3.AddressLookupTableAccount.deserialize(Buffer.from(t.data, 'base64')),
  }));
  const out = {
    tables: tables.map((t) => ({
      deactivationSlot: t.state.deactivationSlot.toString(),
      lastExtendedSlot: String(t.state.lastExtendedSlot),
      lastExtendedSlotStartIndex: t.state.lastExtendedSlotStartIndex,
      authority: t.state.authority ? t.state.authority.toBase58() : null,
      addresses: t.state.addresses.length,
    })),
  };
  // web3.js refusing the case is the answer, beside the tables it read.
  try {
    out.tx = Buffer.from(serialize(c, instructions, signers, tables)).toString('base64');
  } catch (err) {
    out.error = String(err);
  }
  return out;
});

function serialize(c, instructions, signers, tables) {
  if (c.kind === 'transaction') {
    const tx = new web3.Transaction({ feePayer: key(c.payer), recentBlockhash: c.blockhash });
    tx.add(...instructions);
    if (signers.length > 0) tx.sign(...signers);
    return tx.serialize({ requireAllSignatures: false, verifySignatures: false });
  }
  const msg = new web3.TransactionMessage({ payerKey: key(c.payer), recentBlockhash: c.blockhash, instructions });
  const compiled = c.kind === 'legacy' ? msg.compileToLegacyMessage() : msg.compileToV0Message(tables);
  const tx = new web3.VersionedTransaction(compiled);
  if (signers.length > 0) tx.sign(signers);
  return tx.serialize();
}

// Builds the /tx routes' instructions with the protocol's official TypeScript SDK, the oracle of
// platform/chain/drift/txbuild's differential test (TestInstructionsAsSDK). stdin: one JSON case a
// line, written by that test; stdout: one JSON line each, {"ixs":[{programId, keys:[{pubkey,
// isSigner, isWritable}], data (base64)}]} as the DriftClient builders return them, or {"error"}.
//
// Each case gets a DriftClient on a Connection that is never called, its wallet the case's signer,
// and its account getters answering from the case's fixtures, as the SDK's own tests do
// (sdk/tests/user/helpers.ts): User and SpotMarket as base64 of their account data, decoded by the
// SDK's coder; PerpMarket as the fields the builders read, because this SDK's IDL lays the
// PerpMarket account out differently from the program's IDL the Go package is generated from.
'use strict';
const path = require('path');
const { web3, anchor, sdk, program } = require('./sdk');
const spl = require(require.resolve('@solana/spl-token', { paths: [sdk] }));
const drift = require('@drift-labs/sdk');
const { BN } = anchor;

const programID = program.programId;
const connection = new web3.Connection('http://127.0.0.1:9');

function pk(s) {
  return new web3.PublicKey(s);
}

function wallet(publicKey) {
  return {
    publicKey,
    signTransaction: async (tx) => tx,
    signAllTransactions: async (txs) => txs,
  };
}

// client is a DriftClient whose markets and user come from the case c.
function client(c, signer, user) {
  const spots = new Map();
  for (const b64 of c.spots || []) {
    const m = program.coder.accounts.decode('SpotMarket', Buffer.from(b64, 'base64'));
    spots.set(m.marketIndex, m);
  }
  const perps = new Map();
  for (const p of c.perps || []) {
    perps.set(p.marketIndex, {
      pubkey: pk(p.pubkey),
      marketIndex: p.marketIndex,
      quoteSpotMarketIndex: p.quoteSpotMarketIndex,
      amm: { oracle: pk(p.oracle), oracleSource: { [p.oracleSource]: {} } },
    });
  }
  const dc = new drift.DriftClient({
    connection,
    wallet: wallet(signer),
    programID,
    activeSubAccountId: user ? user.subAccountId : 0,
    skipLoadUsers: true,
  });
  const spot = (i) => {
    const m = spots.get(i);
    if (!m) throw new Error(`fixture: no spot market ${i}`);
    return m;
  };
  const perp = (i) => {
    const m = perps.get(i);
    if (!m) throw new Error(`fixture: no perp market ${i}`);
    return m;
  };
  dc.getSpotMarketAccount = spot;
  dc.getQuoteSpotMarketAccount = () => spot(0);
  dc.getPerpMarketAccount = perp;
  if (user) {
    const userPk = drift.getUserAccountPublicKeySync(programID, user.authority, user.subAccountId);
    dc.getUser = () => ({
      userAccountPublicKey: userPk,
      getUserAccount: () => user,
      getUserAccountAndSlot: () => ({ data: user, slot: 0 }),
      fetchAccounts: async () => {},
    });
  }
  return dc;
}

function orderParams(o) {
  const p = {
    marketIndex: o.marketIndex,
    marketType: drift.MarketType.PERP,
    direction: o.direction === 'long' ? drift.PositionDirection.LONG : drift.PositionDirection.SHORT,
    baseAssetAmount: new BN(o.baseAssetAmount),
    price: new BN(o.price),
    reduceOnly: o.reduceOnly,
    postOnly: o.postOnly ? drift.PostOnlyParams.MUST_POST_ONLY : drift.PostOnlyParams.NONE,
  };
  if (o.highLeverageMode) p.bitFlags = drift.OrderParamsBitFlag.UpdateHighLeverageMode;
  if (o.auction) {
    p.auctionDuration = o.auction.duration;
    p.auctionStartPrice = new BN(o.auction.startPrice);
    p.auctionEndPrice = new BN(o.auction.endPrice);
    if (o.auction.oraclePriceOffset !== undefined) p.oraclePriceOffset = o.auction.oraclePriceOffset;
    if (o.auction.maxTs !== undefined) p.maxTs = new BN(o.auction.maxTs);
  }
  return o.type === 'limit' ? drift.getLimitOrderParams(p) : drift.getMarketOrderParams(p);
}

async function build(c) {
  const user = c.user ? program.coder.accounts.decode('User', Buffer.from(c.user, 'base64')) : null;
  const sub = user ? user.subAccountId : 0;
  switch (c.kind) {
    case 'deposit':
    case 'withdraw': {
      const dc = client(c, user.authority, user);
      const m = dc.getSpotMarketAccount(c.marketIndex);
      const tokenProgram = (m.tokenProgramFlag & 1) !== 0 ? spl.TOKEN_2022_PROGRAM_ID : spl.TOKEN_PROGRAM_ID;
      const ata = spl.getAssociatedTokenAddressSync(m.mint, user.authority, true, tokenProgram);
      const amount = new BN(c.amount);
      if (c.kind === 'deposit') {
        return [await dc.getDepositInstruction(amount, c.marketIndex, ata, sub, false, true)];
      }
      return [await dc.getWithdrawIx(amount, c.marketIndex, ata, true, sub)];
    }
    case 'place': {
      const dc = client(c, user.authority, user);
      const ixs = [];
      if (c.order.maxLeverage) {
        // The route's rule for the margin ratio, round(1e4 / leverage).
        const ratio = Math.round(1e4 / c.order.maxLeverage);
        ixs.push(await dc.getUpdateUserPerpPositionCustomMarginRatioIx(c.order.marketIndex, ratio, sub));
      }
      ixs.push(await dc.getPlaceOrdersIx([orderParams(c.order)], sub));
      return ixs;
    }
    case 'leverage': {
      const dc = client(c, user.authority, user);
      return [await dc.getUpdateUserPerpPositionCustomMarginRatioIx(c.marketIndex, c.marginRatio, sub)];
    }
    case 'cancel': {
      const dc = client(c, user.authority, user);
      if (c.orderIds && c.orderIds.length > 0) {
        return [await dc.getCancelOrdersByIdsIx(c.orderIds, sub)];
      }
      return [await dc.getCancelOrdersIx(null, null, null, sub)];
    }
    case 'settle': {
      const dc = client(c, user.authority, user);
      const userPk = drift.getUserAccountPublicKeySync(programID, user.authority, sub);
      return [await dc.settleMultiplePNLsIx(userPk, user, c.marketIndexes, drift.SettlePnlMode.TRY_SETTLE)];
    }
    case 'builderInit': {
      const builder = pk(c.builder);
      const dc = client(c, builder, null);
      return [await dc.getInitializeRevenueShareIx(builder)];
    }
    case 'builderApprove': {
      const authority = pk(c.authority);
      const dc = client(c, authority, null);
      const ixs = [];
      if (!c.escrowExists) {
        ixs.push(await dc.getInitializeRevenueShareEscrowIx(authority, c.numOrders, { payer: authority }));
      }
      ixs.push(await dc.getChangeApprovedBuilderIx(pk(c.builder), c.maxFeeTenthBps, c.maxFeeTenthBps !== 0,
        { authority, payer: authority }));
      return ixs;
    }
  }
  throw new Error(`unknown case kind ${c.kind}`);
}

function out(ix) {
  return {
    programId: ix.programId.toBase58(),
    keys: ix.keys.map((k) => ({ pubkey: k.pubkey.toBase58(), isSigner: k.isSigner, isWritable: k.isWritable })),
    data: Buffer.from(ix.data).toString('base64'),
  };
}

// transaction compiles the instructions behind the compute budget into a v0 message with the
// case's lookup tables, as the service's transactions are, and serializes it unsigned.
function transaction(t, ixs) {
  const all = [web3.ComputeBudgetProgram.setComputeUnitLimit({ units: t.computeUnits })];
  if (t.computeUnitPrice > 0) {
    all.push(web3.ComputeBudgetProgram.setComputeUnitPrice({ microLamports: t.computeUnitPrice }));
  }
  all.push(...ixs);
  const tables = (t.tables || []).map((tb) => new web3.AddressLookupTableAccount({
    key: pk(tb.key),
    state: {
      deactivationSlot: BigInt('18446744073709551615'),
      lastExtendedSlot: 0,
      lastExtendedSlotStartIndex: 0,
      addresses: tb.addresses.map(pk),
    },
  }));
  const message = new web3.TransactionMessage({
    payerKey: pk(t.payer),
    recentBlockhash: t.blockhash,
    instructions: all,
  }).compileToV0Message(tables);
  return Buffer.from(new web3.VersionedTransaction(message).serialize()).toString('base64');
}

// The cases run one after the other, in order: a line of output per line of input.
async function main() {
  const rl = require('readline').createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (line.trim() === '') continue;
    let res;
    try {
      const c = JSON.parse(line);
      const ixs = await build(c);
      res = { ixs: ixs.map(out) };
      if (c.tx) res.tx = transaction(c.tx, ixs);
    } catch (err) {
      res = { error: String(err && err.stack ? err.stack : err) };
    }
    process.stdout.write(JSON.stringify(res) + '\n');
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

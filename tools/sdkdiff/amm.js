// Reads PerpMarket accounts as the protocol's official TypeScript SDK does, for the records
// package's differential test (platform/chain/records, TestPerpMarketStateAsSDK). stdin: one base64
// PerpMarket account a line; stdout: one JSON line each with the market-state quantities the SDK
// gives for it, integers as decimal strings, or {"error"} when the SDK cannot decode it.
//
// Prices come from the SDK's own math on the account alone: calculateReservePrice without oracle
// data (no projected repeg) and calculatePrice of the bid and ask reserves the program stored.
'use strict';
const path = require('path');
const { program, sdk, eachLine } = require('./sdk');
const { calculatePrice } = require(path.join(sdk, 'lib/node/math/amm.js'));
const { calculateReservePrice } = require(path.join(sdk, 'lib/node/math/market.js'));
const { decodeName } = require(path.join(sdk, 'lib/node/userName.js'));

function state(m) {
  const a = m.amm;
  return {
    marketIndex: m.marketIndex,
    symbol: decodeName(m.name).trim(),
    oraclePrice: a.historicalOracleData.lastOraclePrice.toString(),
    markPrice: calculateReservePrice(m, undefined).toString(),
    bidPrice: calculatePrice(a.bidBaseAssetReserve, a.bidQuoteAssetReserve, a.pegMultiplier).toString(),
    askPrice: calculatePrice(a.askBaseAssetReserve, a.askQuoteAssetReserve, a.pegMultiplier).toString(),
    longSpread: String(a.longSpread),
    shortSpread: String(a.shortSpread),
    baseAssetAmountWithAmm: a.baseAssetAmountWithAmm.toString(),
    baseAssetAmountLong: a.baseAssetAmountLong.toString(),
    baseAssetAmountShort: a.baseAssetAmountShort.toString(),
    openInterest: a.baseAssetAmountLong.abs().add(a.baseAssetAmountShort.abs()).toString(),
    fundingRateLong: a.lastFundingRateLong.toString(),
    fundingRateShort: a.lastFundingRateShort.toString(),
  };
}

eachLine((line) => state(program.coder.accounts.decode('PerpMarket', Buffer.from(line, 'base64'))));

// Reads SpotMarket accounts as the protocol's official TypeScript SDK does, for the records
// package's differential test (platform/chain/records, TestSpotMarketStateAsSDK). stdin: one base64
// SpotMarket account a line; stdout: one JSON line each with the lending quantities the SDK's
// math/spotBalance gives for it, integers as decimal strings, or {"error"} when the SDK cannot
// decode the account or compute its rates.
'use strict';
const path = require('path');
const { program, sdk, eachLine } = require('./sdk');
const { getTokenAmount, calculateDepositRate, calculateBorrowRate } = require(path.join(sdk, 'lib/node/math/spotBalance.js'));
const { SpotBalanceType } = require(path.join(sdk, 'lib/node/types.js'));
const { decodeName } = require(path.join(sdk, 'lib/node/userName.js'));

function state(m) {
  return {
    marketIndex: m.marketIndex,
    symbol: decodeName(m.name).trim(),
    oraclePrice: m.historicalOracleData.lastOraclePrice.toString(),
    decimals: m.decimals,
    depositBalance: getTokenAmount(m.depositBalance, m, SpotBalanceType.DEPOSIT).toString(),
    borrowBalance: getTokenAmount(m.borrowBalance, m, SpotBalanceType.BORROW).toString(),
    depositRate: calculateDepositRate(m).toString(),
    borrowRate: calculateBorrowRate(m).toString(),
  };
}

eachLine((line) => state(program.coder.accounts.decode('SpotMarket', Buffer.from(line, 'base64'))));

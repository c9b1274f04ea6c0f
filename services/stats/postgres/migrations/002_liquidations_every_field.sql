-- Liquidation records carry every sub-record's fields and bitFlags (events.Liquidation), as the
-- protocol's data API emits them: the fields of the sub-records other than the record's type are
-- zeros, and perpBankruptcy_clawbackUser is null when there is none. Records stored before then hold
-- their own sub-record only, and bitFlags only when it was not 0: they get the fields they lack, with
-- the values they hold kept. Their keys come out in jsonb's order; clients read fields by name.
WITH d(defaults) AS (SELECT '{
    "bitFlags": 0, "liquidatePerp_marketIndex": 0, "liquidatePerp_oraclePrice": "0",
    "liquidatePerp_baseAssetAmount": "0", "liquidatePerp_quoteAssetAmount": "0",
    "liquidatePerp_lpShares": "0", "liquidatePerp_fillRecordId": "0", "liquidatePerp_userOrderId": "0",
    "liquidatePerp_liquidatorOrderId": "0", "liquidatePerp_liquidatorFee": "0", "liquidatePerp_ifFee": "0",
    "liquidateSpot_assetMarketIndex": 0, "liquidateSpot_assetPrice": "0", "liquidateSpot_assetTransfer": "0",
    "liquidateSpot_liabilityMarketIndex": 0, "liquidateSpot_liabilityPrice": "0",
    "liquidateSpot_liabilityTransfer": "0", "liquidateSpot_ifFee": "0",
    "liquidateBorrowForPerpPnl_perpMarketIndex": 0, "liquidateBorrowForPerpPnl_marketOraclePrice": "0",
    "liquidateBorrowForPerpPnl_pnlTransfer": "0", "liquidateBorrowForPerpPnl_liabilityMarketIndex": 0,
    "liquidateBorrowForPerpPnl_liabilityPrice": "0", "liquidateBorrowForPerpPnl_liabilityTransfer": "0",
    "liquidatePerpPnlForDeposit_perpMarketIndex": 0, "liquidatePerpPnlForDeposit_marketOraclePrice": "0",
    "liquidatePerpPnlForDeposit_pnlTransfer": "0", "liquidatePerpPnlForDeposit_assetMarketIndex": 0,
    "liquidatePerpPnlForDeposit_assetPrice": "0", "liquidatePerpPnlForDeposit_assetTransfer": "0",
    "perpBankruptcy_marketIndex": 0, "perpBankruptcy_pnl": "0", "perpBankruptcy_ifPayment": "0",
    "perpBankruptcy_clawbackUser": null, "perpBankruptcy_clawbackUserPayment": "0",
    "perpBankruptcy_cumulativeFundingRateDelta": "0", "spotBankruptcy_marketIndex": 0,
    "spotBankruptcy_borrowAmount": "0", "spotBankruptcy_ifPayment": "0",
    "spotBankruptcy_cumulativeDepositInterestDelta": "0"
}'::jsonb)
UPDATE liquidations l
SET record = (d.defaults || l.record::jsonb)::json
FROM d
WHERE NOT l.record::jsonb ?& ARRAY(SELECT jsonb_object_keys(d.defaults));

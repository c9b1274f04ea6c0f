-- The AMM schema: every market's per-slot states as they arrive, kept for the raw retention in daily
-- partitions, and the rollup the answers read, kept for good.

CREATE TABLE markets (
    symbol        text PRIMARY KEY,
    market_index  int  NOT NULL,
    market_type   text NOT NULL,
    market_filter text NOT NULL
);

-- One row per market and slot, the values the series show in protocol integers (spot markets have
-- an oracle price only). Partitioned by day on ts (unix seconds): the service declares the period
-- and drops the days past TIDEMARK_AMM_RAW_RETENTION. No answer reads it: it is what the rollup is
-- computed from, kept to recompute or audit it.
CREATE TABLE states (
    ts            bigint NOT NULL,
    slot          bigint NOT NULL,
    symbol        text   NOT NULL,
    oracle_price  bigint NOT NULL,
    bid_price     bigint,
    ask_price     bigint,
    long_spread   bigint,
    short_spread  bigint,
    amm_position  bigint,
    open_interest bigint,
    PRIMARY KEY (symbol, ts, slot)
) PARTITION BY RANGE (ts);

-- The last state of every 20-second bucket, in chunks of an hour per market and row (the slots, then
-- each series): the format is described in services/amm/rollup.go. A chunk is at most 2.9 KB: with
-- toast_tuple_target at its largest every one stays in its heap row, uncompressed, so an answer reads
-- it without a TOAST lookup or a decompression.
CREATE TABLE rollup (
    symbol text     NOT NULL,
    row    smallint NOT NULL,
    start  bigint   NOT NULL,
    chunk  bytea    NOT NULL,
    PRIMARY KEY (symbol, row, start)
) WITH (toast_tuple_target = 8160);
ALTER TABLE rollup ALTER COLUMN chunk SET STORAGE EXTERNAL;

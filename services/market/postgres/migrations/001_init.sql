-- Event tables keep the API record verbatim in `record` (json keeps the bytes as encoded, so reads
-- never re-encode) beside the columns that identify, filter and order it. Every list is read by
-- (filter, ts, tx_sig, tx_sig_index), newest first for rolling pages and oldest first for dated ones.
-- Partitions are monthly on ts (unix seconds) and created ahead by the service.

CREATE TABLE markets (
    symbol        text PRIMARY KEY,
    market_index  int  NOT NULL,
    market_type   text NOT NULL,
    market_filter text NOT NULL
);

CREATE TABLE fills (
    ts             bigint NOT NULL,
    tx_sig         text   NOT NULL,
    tx_sig_index   int    NOT NULL,
    slot           bigint NOT NULL,
    symbol         text   NOT NULL,
    market_index   int    NOT NULL,
    market_type    text   NOT NULL,
    fill_record_id bigint NOT NULL,
    taker          text   NOT NULL,
    maker          text   NOT NULL,
    record         json   NOT NULL,
    PRIMARY KEY (ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);
CREATE INDEX fills_symbol_key ON fills (symbol, ts, tx_sig, tx_sig_index);

CREATE TABLE funding_rates (
    ts           bigint NOT NULL,
    tx_sig       text   NOT NULL,
    tx_sig_index int    NOT NULL,
    slot         bigint NOT NULL,
    symbol       text   NOT NULL,
    market_index int    NOT NULL,
    record_id    text   NOT NULL,
    record       json   NOT NULL,
    PRIMARY KEY (ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);
CREATE INDEX funding_rates_symbol_key ON funding_rates (symbol, ts, tx_sig, tx_sig_index);

CREATE TABLE insurance_fund (
    ts                bigint NOT NULL,
    tx_sig            text   NOT NULL,
    tx_sig_index      int    NOT NULL,
    slot              bigint NOT NULL,
    symbol            text   NOT NULL,
    spot_market_index int    NOT NULL,
    record            json   NOT NULL,
    PRIMARY KEY (ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);
CREATE INDEX insurance_fund_symbol_key ON insurance_fund (symbol, ts, tx_sig, tx_sig_index);

CREATE TABLE if_stakes (
    ts             bigint NOT NULL,
    tx_sig         text   NOT NULL,
    tx_sig_index   int    NOT NULL,
    slot           bigint NOT NULL,
    symbol         text   NOT NULL,
    market_index   int    NOT NULL,
    user_authority text   NOT NULL,
    record         json   NOT NULL,
    PRIMARY KEY (ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);
CREATE INDEX if_stakes_symbol_key ON if_stakes (symbol, ts, tx_sig, tx_sig_index);

-- A swap belongs to both of its markets; the two indexes let either side page by keyset.
CREATE TABLE swaps (
    ts           bigint NOT NULL,
    tx_sig       text   NOT NULL,
    tx_sig_index int    NOT NULL,
    slot         bigint NOT NULL,
    in_symbol    text   NOT NULL,
    out_symbol   text   NOT NULL,
    "user"       text   NOT NULL,
    record       json   NOT NULL,
    PRIMARY KEY (ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);
CREATE INDEX swaps_in_key ON swaps (in_symbol, ts, tx_sig, tx_sig_index);
CREATE INDEX swaps_out_key ON swaps (out_symbol, ts, tx_sig, tx_sig_index);

-- Deposits and rewards are one protocol record; category splits them so each list has its own index
-- prefix (rewards are rare, and a filter after the index would scan every deposit to find them).
CREATE TABLE deposits (
    ts           bigint NOT NULL,
    tx_sig       text   NOT NULL,
    tx_sig_index int    NOT NULL,
    slot         bigint NOT NULL,
    symbol       text   NOT NULL,
    category     text   NOT NULL CHECK (category IN ('deposit', 'reward')),
    "user"       text   NOT NULL,
    record       json   NOT NULL,
    PRIMARY KEY (ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);
CREATE INDEX deposits_symbol_key ON deposits (symbol, category, ts, tx_sig, tx_sig_index);

-- One row per traded bucket. Opens are derived at read time from the previous bucket's close; first_*
-- is kept for a market's very first bucket. (first_ts, first_id) and (last_ts, last_id) order fills
-- inside a bucket so that out-of-order batches converge to the same candle.
CREATE TABLE candles (
    symbol       text             NOT NULL,
    resolution   text             NOT NULL,
    ts           bigint           NOT NULL,
    first_ts     bigint           NOT NULL,
    first_id     bigint           NOT NULL,
    fill_first   double precision NOT NULL,
    oracle_first double precision NOT NULL,
    fill_high    double precision NOT NULL,
    fill_low     double precision NOT NULL,
    oracle_high  double precision NOT NULL,
    oracle_low   double precision NOT NULL,
    last_ts      bigint           NOT NULL,
    last_id      bigint           NOT NULL,
    fill_close   double precision NOT NULL,
    oracle_close double precision NOT NULL,
    quote_volume numeric          NOT NULL,
    base_volume  numeric          NOT NULL,
    PRIMARY KEY (symbol, resolution, ts)
);

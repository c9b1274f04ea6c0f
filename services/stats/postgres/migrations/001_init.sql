-- The stats schema keeps exchange-wide aggregates, each maintained at ingest from the rows a batch
-- inserted (a replayed batch inserts none and so moves nothing), and the latest state of what the
-- protocol samples (market states, vaults, parameters), each row replaced only by a newer sample.
--
-- Lock domains: every aggregate table a sink updates is updated by that sink only, so that two
-- writers' transactions (each running its sinks in one order, each sink its rows in key order) cannot
-- deadlock. The wallets' aggregates are updated by no sink: the sinks append deltas of accounts, which
-- one background fold a second moves into the wallets' rows (see postgres/fold.go).

CREATE TABLE markets (
    symbol        text PRIMARY KEY,
    market_index  int  NOT NULL,
    market_type   text NOT NULL,
    market_filter text NOT NULL
);

-- Fills, the facts the trading aggregates derive from. price is the fill price (quote per base, 1e6).
CREATE TABLE fills (
    ts             bigint  NOT NULL,
    tx_sig         text    NOT NULL,
    tx_sig_index   int     NOT NULL,
    slot           bigint  NOT NULL,
    symbol         text    NOT NULL,
    fill_record_id bigint  NOT NULL,
    taker          text    NOT NULL,
    maker          text    NOT NULL,
    quote          numeric NOT NULL,
    base           numeric NOT NULL,
    price          bigint  NOT NULL,
    oracle_price   bigint  NOT NULL,
    PRIMARY KEY (ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);

-- A market's trading per minute and per hour (ts is the bucket's start). Rolling windows are read as
-- the hours inside them plus the minutes before their first whole hour, index-only where the pages
-- are settled: the key carries what the sums read. close is the price of the bucket's last fill in
-- (last_ts, last_id) order, so batches arriving out of order converge to the same bucket.
CREATE TABLE trade_minutes (
    symbol       text    NOT NULL,
    ts           bigint  NOT NULL,
    fills        int     NOT NULL,
    quote        numeric NOT NULL,
    base         numeric NOT NULL,
    fill_high    bigint  NOT NULL,
    fill_low     bigint  NOT NULL,
    oracle_high  bigint  NOT NULL,
    oracle_low   bigint  NOT NULL,
    last_ts      bigint  NOT NULL,
    last_id      bigint  NOT NULL,
    last_slot    bigint  NOT NULL,
    close        bigint  NOT NULL,
    close_oracle bigint  NOT NULL,
    PRIMARY KEY (symbol, ts) INCLUDE (fills, quote, base, fill_high, fill_low, oracle_high, oracle_low)
);
CREATE TABLE trade_hours (LIKE trade_minutes INCLUDING ALL);

-- The newest state sample of each market (by slot).
CREATE TABLE market_states (
    symbol        text   PRIMARY KEY,
    market_index  int    NOT NULL,
    market_type   text   NOT NULL,
    ts            bigint NOT NULL,
    slot          bigint NOT NULL,
    oracle_price  bigint NOT NULL,
    mark_price    bigint,
    oi_long       text,
    oi_short      text,
    open_interest text,
    funding_long  text,
    funding_short text,
    decimals      int
);

-- A spot market's lending per hour: the hour's last state sample (by slot).
CREATE TABLE spot_rates (
    symbol          text   NOT NULL,
    ts              bigint NOT NULL,
    slot            bigint NOT NULL,
    deposit_rate    text,
    borrow_rate     text,
    deposit_balance text,
    borrow_balance  text,
    PRIMARY KEY (symbol, ts)
);

-- A spot market's balances per hour as its deposits report them: the hour's last deposit record.
CREATE TABLE spot_balances (
    symbol          text   NOT NULL,
    ts              bigint NOT NULL,
    slot            bigint NOT NULL,
    tx_sig          text   NOT NULL,
    tx_sig_index    int    NOT NULL,
    deposit_balance text   NOT NULL,
    borrow_balance  text   NOT NULL,
    PRIMARY KEY (symbol, ts)
);

-- Funding rate updates; rate_pct is fundingRate as a percent of the oracle TWAP (the hourly rate).
CREATE TABLE funding_rates (
    ts           bigint NOT NULL,
    tx_sig       text   NOT NULL,
    tx_sig_index int    NOT NULL,
    slot         bigint NOT NULL,
    symbol       text   NOT NULL,
    market_index int    NOT NULL,
    rate_long    text   NOT NULL,
    rate_short   text   NOT NULL,
    rate_pct     double precision NOT NULL,
    PRIMARY KEY (ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);
CREATE INDEX funding_rates_symbol ON funding_rates (symbol, ts) INCLUDE (rate_pct);

-- Liquidation records as the API emits them. amount is what the record liquidated: quote (1e6) when
-- value_market is null; otherwise an amount of that spot market's token, times value_price (1e6)
-- when the record states a price, else to be valued at the market's oracle. if_payment likewise for
-- bankruptcies.
CREATE TABLE liquidations (
    ts               bigint  NOT NULL,
    tx_sig           text    NOT NULL,
    tx_sig_index     int     NOT NULL,
    slot             bigint  NOT NULL,
    liquidation_type text    NOT NULL,
    bankruptcy       boolean NOT NULL,
    value_market     int,
    priced           boolean NOT NULL,
    amount           numeric NOT NULL,
    if_payment       numeric,
    record           json    NOT NULL,
    PRIMARY KEY (ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);
CREATE INDEX liquidations_bankruptcies ON liquidations (ts, tx_sig, tx_sig_index) WHERE bankruptcy;

-- Insurance fund movements; vault_after and total_shares are the fund's after the record.
CREATE TABLE insurance_fund (
    ts                bigint  NOT NULL,
    tx_sig            text    NOT NULL,
    tx_sig_index      int     NOT NULL,
    slot              bigint  NOT NULL,
    symbol            text    NOT NULL,
    spot_market_index int     NOT NULL,
    amount            numeric NOT NULL,
    vault_after       numeric NOT NULL,
    total_shares      numeric NOT NULL,
    record            json    NOT NULL,
    PRIMARY KEY (ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);
CREATE INDEX insurance_fund_market ON insurance_fund (spot_market_index, ts, slot);

-- Insurance fund stakes; the fund's vault and shares after each.
CREATE TABLE if_stakes (
    ts           bigint  NOT NULL,
    tx_sig       text    NOT NULL,
    tx_sig_index int     NOT NULL,
    slot         bigint  NOT NULL,
    market_index int     NOT NULL,
    vault_after  numeric NOT NULL,
    total_shares numeric NOT NULL,
    user_shares  numeric NOT NULL,
    PRIMARY KEY (ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);
CREATE INDEX if_stakes_market ON if_stakes (market_index, ts, slot);

CREATE TABLE swaps (
    ts           bigint NOT NULL,
    tx_sig       text   NOT NULL,
    tx_sig_index int    NOT NULL,
    slot         bigint NOT NULL,
    record       json   NOT NULL,
    PRIMARY KEY (ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);

-- The newest state of each vault (by slot), as protocol.vaults carries it.
CREATE TABLE vaults (
    vault  text   PRIMARY KEY,
    ts     bigint NOT NULL,
    slot   bigint NOT NULL,
    record json   NOT NULL
);

-- The newest parameter blob.
CREATE TABLE params (
    id     int    PRIMARY KEY CHECK (id = 1),
    ts     bigint NOT NULL,
    params json   NOT NULL
);

-- Which wallet owns each account (protocol.new-users).
CREATE TABLE accounts (
    account   text PRIMARY KEY,
    authority text NOT NULL
);

-- Settlements of P&L, the leaderboards' pnl.
CREATE TABLE settlements (
    ts           bigint  NOT NULL,
    tx_sig       text    NOT NULL,
    tx_sig_index int     NOT NULL,
    account      text    NOT NULL,
    pnl          numeric NOT NULL,
    PRIMARY KEY (ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);

-- A wallet's maker and taker volume and settled P&L (quote 1e6) in a UTC calendar month (month: its
-- first instant, unix seconds), written by the fold alone. Each leaderboard reads one partial index in
-- rank order; a rank is one plus the count of wallets strictly ahead, so ties share a rank.
CREATE TABLE wallet_months (
    month        bigint  NOT NULL,
    authority    text    NOT NULL,
    maker_volume numeric NOT NULL DEFAULT 0,
    taker_volume numeric NOT NULL DEFAULT 0,
    volume       numeric GENERATED ALWAYS AS (maker_volume + taker_volume) STORED,
    pnl          numeric NOT NULL DEFAULT 0,
    PRIMARY KEY (month, authority)
);
CREATE INDEX wallet_months_maker ON wallet_months (month, maker_volume DESC, authority) WHERE maker_volume > 0;
CREATE INDEX wallet_months_taker ON wallet_months (month, taker_volume DESC, authority) WHERE taker_volume > 0;
CREATE INDEX wallet_months_volume ON wallet_months (month, volume DESC, authority) WHERE volume > 0;
CREATE INDEX wallet_months_pnl ON wallet_months (month, pnl DESC, authority) WHERE pnl <> 0;

-- How many wallets each leaderboard of a month lists (board: pnl, volume, maker or taker), counted by
-- the fold in the transaction that moves them.
CREATE TABLE board_sizes (
    month   bigint NOT NULL,
    board   text   NOT NULL,
    wallets bigint NOT NULL,
    PRIMARY KEY (month, board)
);

-- What the fills and settlements of each batch did to their accounts' months, appended by the sinks
-- in the transactions that inserted them and moved to the wallets by the fold. No index: the fold
-- takes the whole table every time.
CREATE TABLE volume_deltas (
    month        bigint  NOT NULL,
    account      text    NOT NULL,
    maker_volume numeric NOT NULL,
    taker_volume numeric NOT NULL
);
CREATE TABLE pnl_deltas (
    month   bigint  NOT NULL,
    account text    NOT NULL,
    pnl     numeric NOT NULL
);

-- What accounts whose wallet is not known yet did, waiting in the fold for their new-user records.
CREATE TABLE pending_volumes (
    month        bigint  NOT NULL,
    account      text    NOT NULL,
    maker_volume numeric NOT NULL,
    taker_volume numeric NOT NULL,
    PRIMARY KEY (month, account)
);
CREATE TABLE pending_pnl (
    month   bigint  NOT NULL,
    account text    NOT NULL,
    pnl     numeric NOT NULL,
    PRIMARY KEY (month, account)
);
CREATE INDEX pending_volumes_account ON pending_volumes (account);
CREATE INDEX pending_pnl_account ON pending_pnl (account);

-- The last message published to each edge topic for each market: what a WebSocket edge replica
-- warms its snapshot from, and what the next publication is compared with.
CREATE TABLE edge_published (
    topic        text        NOT NULL,
    symbol       text        NOT NULL,
    value        json        NOT NULL,
    published_at timestamptz NOT NULL,
    PRIMARY KEY (topic, symbol)
);

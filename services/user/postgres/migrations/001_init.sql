-- The user schema keeps each subaccount's history. Event tables keep the API record verbatim in a
-- json column beside the columns that identify, filter and order it, are partitioned by month on ts
-- (created ahead by the kit) and are read by (account, ..., ts, tx_sig, tx_sig_index).

-- Markets learnt from the events, so that a symbol can be checked and an export's market resolved.
CREATE TABLE markets (
    symbol        text PRIMARY KEY,
    market_index  int  NOT NULL,
    market_type   text NOT NULL,
    market_filter text NOT NULL
);

-- A fill is stored once per account it belongs to: its taker's and its maker's. record is the fill
-- with user set to the account; position, set on the fills that reduced, closed or flipped the
-- account's perp position, is the closed-position record of /positions (the fill and the position
-- before it), so that a closed position costs no row of its own. base_after and quote_entry_after are
-- the perp position once the fill is applied: a fill that arrives late has its market's positions
-- derived again from the row before it, not from the account's first fill. Positions move in fill
-- order (ts, then the market's fill record id: user.FillOrder), not in signature order.
CREATE TABLE fills (
    account      text    NOT NULL,
    ts           bigint  NOT NULL,
    tx_sig       text    NOT NULL,
    tx_sig_index int     NOT NULL,
    slot         bigint  NOT NULL,
    symbol       text    NOT NULL,
    prediction   boolean NOT NULL,
    order_id     text    NOT NULL,
    record       json    NOT NULL,
    position     json,
    base_after        numeric,
    quote_entry_after numeric,
    fill_record_id    bigint  NOT NULL,
    PRIMARY KEY (account, ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);
CREATE INDEX fills_symbol_key ON fills (account, symbol, ts, tx_sig, tx_sig_index);
CREATE INDEX fills_order_key ON fills (account, order_id, ts);
CREATE INDEX fills_prediction_key ON fills (account, ts, tx_sig, tx_sig_index) WHERE prediction;
CREATE INDEX fills_position_key ON fills (account, ts, tx_sig, tx_sig_index) WHERE position IS NOT NULL;

-- Each account's perp position per market after the last fill applied (base 1e9, quote entry 1e6),
-- and that fill's place in fill order: a fill older than it means the positions after it are
-- derived again.
CREATE TABLE position_state (
    account      text    NOT NULL,
    symbol       text    NOT NULL,
    base         numeric NOT NULL,
    quote_entry  numeric NOT NULL,
    last_ts      bigint  NOT NULL,
    last_fill_record_id bigint NOT NULL,
    PRIMARY KEY (account, symbol)
);

-- Orders as their records last told them (the record with the newest lastUpdatedTs wins), or as
-- their place action, until a record arrives. Their state is folded when read, from this, the
-- order's actions and its fills.
CREATE TABLE orders (
    account         text   NOT NULL,
    order_id        text   NOT NULL,
    placed_ts       bigint NOT NULL,
    market_filter   text   NOT NULL,
    symbol          text   NOT NULL,
    from_record     boolean NOT NULL,
    record_updated  bigint NOT NULL, -- the record's lastUpdatedTs; 0 for a place action
    record          json   NOT NULL,  -- the order record, or the place action
    PRIMARY KEY (account, order_id)
);
CREATE INDEX orders_list_key ON orders (account, market_filter, placed_ts, order_id);
CREATE INDEX orders_symbol_key ON orders (account, symbol, placed_ts, order_id);

-- Order actions other than fills (place, cancel, trigger, expire), by the account that acts.
CREATE TABLE order_actions (
    account      text   NOT NULL,
    order_id     text   NOT NULL,
    ts           bigint NOT NULL,
    tx_sig       text   NOT NULL,
    tx_sig_index int    NOT NULL,
    slot         bigint NOT NULL,
    action       text   NOT NULL,
    explanation  text   NOT NULL,
    record       json   NOT NULL,
    PRIMARY KEY (account, order_id, ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);

CREATE TABLE swaps (
    account      text   NOT NULL,
    ts           bigint NOT NULL,
    tx_sig       text   NOT NULL,
    tx_sig_index int    NOT NULL,
    in_symbol    text   NOT NULL,
    out_symbol   text   NOT NULL,
    record       json   NOT NULL,
    PRIMARY KEY (account, ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);

-- Deposits and rewards are one protocol record; category splits them so each list has its own index
-- prefix.
CREATE TABLE deposits (
    account      text   NOT NULL,
    category     text   NOT NULL CHECK (category IN ('deposit', 'reward')),
    ts           bigint NOT NULL,
    tx_sig       text   NOT NULL,
    tx_sig_index int    NOT NULL,
    symbol       text   NOT NULL,
    record       json   NOT NULL,
    PRIMARY KEY (account, category, ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);

-- Settlements, funding payments and perp LP records of one perp market each.
CREATE TABLE settle_pnl (
    account      text   NOT NULL,
    ts           bigint NOT NULL,
    tx_sig       text   NOT NULL,
    tx_sig_index int    NOT NULL,
    market_index int    NOT NULL,
    record       json   NOT NULL,
    PRIMARY KEY (account, ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);

CREATE TABLE funding_payments (
    account      text   NOT NULL,
    ts           bigint NOT NULL,
    tx_sig       text   NOT NULL,
    tx_sig_index int    NOT NULL,
    market_index int    NOT NULL,
    record       json   NOT NULL,
    PRIMARY KEY (account, ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);

CREATE TABLE lp (
    account      text   NOT NULL,
    ts           bigint NOT NULL,
    tx_sig       text   NOT NULL,
    tx_sig_index int    NOT NULL,
    market_index int    NOT NULL,
    record       json   NOT NULL,
    PRIMARY KEY (account, ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);

-- Liquidations of the liquidated account, with the perp and the spot market they concern (either
-- may be none).
CREATE TABLE liquidations (
    account      text   NOT NULL,
    ts           bigint NOT NULL,
    tx_sig       text   NOT NULL,
    tx_sig_index int    NOT NULL,
    perp_market  int,
    spot_market  int,
    record       json   NOT NULL,
    PRIMARY KEY (account, ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);

-- Periodic snapshots of each account (kind trading, earn or vault): record is the API's entry.
CREATE TABLE snapshots (
    account text   NOT NULL,
    kind    text   NOT NULL,
    ts      bigint NOT NULL,
    record  json   NOT NULL,
    PRIMARY KEY (account, kind, ts)
);

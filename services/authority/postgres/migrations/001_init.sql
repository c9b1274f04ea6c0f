-- The authority schema keeps each wallet's views: its accounts and builder accounts, its insurance
-- fund stakes and LP mint/redeem records, and the snapshots of its accounts. Event tables keep the API
-- record verbatim in a json column beside the columns that identify, filter and order it, are
-- partitioned by month on ts (created ahead by the kit) and are read by (authority, ts, tx_sig,
-- tx_sig_index).

-- Spot markets learnt from the stakes, so that an export's market can be checked and resolved.
CREATE TABLE markets (
    symbol        text PRIMARY KEY,
    market_index  int  NOT NULL,
    market_type   text NOT NULL,
    market_filter text NOT NULL
);

-- A wallet's accounts: sub_account_id and name as protocol.new-users told them, NULL for an account
-- known only from its snapshots (it has series, but is not listed and cannot be exported).
CREATE TABLE accounts (
    authority      text NOT NULL,
    account        text NOT NULL,
    sub_account_id int,
    name           text,
    PRIMARY KEY (authority, account)
);
CREATE INDEX accounts_account_key ON accounts (account) WHERE sub_account_id IS NOT NULL;

-- The newest builder revenue share account and revenue share escrow a wallet's records carried,
-- with the position of that record in the chain: an older one never replaces a newer one.
CREATE TABLE builder_accounts (
    authority    text   NOT NULL,
    kind         text   NOT NULL, -- builder or escrow
    slot         bigint NOT NULL,
    ts           bigint NOT NULL,
    tx_sig       text   NOT NULL,
    tx_sig_index int    NOT NULL,
    record       json   NOT NULL,
    PRIMARY KEY (authority, kind)
);

CREATE TABLE if_stakes (
    ts           bigint NOT NULL,
    tx_sig       text   NOT NULL,
    tx_sig_index int    NOT NULL,
    authority    text   NOT NULL,
    market_index int    NOT NULL,
    record       json   NOT NULL,
    PRIMARY KEY (ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);
CREATE INDEX if_stakes_authority_key ON if_stakes (authority, ts, tx_sig, tx_sig_index);

CREATE TABLE lp_mint_redeem (
    ts             bigint NOT NULL,
    tx_sig         text   NOT NULL,
    tx_sig_index   int    NOT NULL,
    authority      text   NOT NULL,
    mint_redeem_id text   NOT NULL,
    record         json   NOT NULL,
    PRIMARY KEY (ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);
CREATE INDEX lp_mint_redeem_authority_key ON lp_mint_redeem (authority, ts, tx_sig, tx_sig_index);

-- Every snapshot of the wallet's accounts (kind trading, earn or vault), and the wallet's own
-- referral snapshots (account ''): record is the API's entry. Hourly series read it, a range of ts
-- of each kind for all the wallet's accounts at once.
CREATE TABLE snapshots (
    authority text   NOT NULL,
    kind      text   NOT NULL,
    account   text   NOT NULL,
    ts        bigint NOT NULL,
    record    json   NOT NULL,
    PRIMARY KEY (authority, kind, ts, account)
) PARTITION BY RANGE (ts);

-- The latest snapshot of each account, kind and UTC day, kept as snapshots arrive: a daily series
-- reads one row per point instead of a day's worth.
CREATE TABLE snapshot_days (
    authority text   NOT NULL,
    kind      text   NOT NULL,
    account   text   NOT NULL,
    day       bigint NOT NULL, -- unix seconds of 00:00 UTC
    ts        bigint NOT NULL,
    record    json   NOT NULL,
    PRIMARY KEY (authority, kind, account, day)
);

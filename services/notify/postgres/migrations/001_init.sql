-- What protocol.new-users says of each account: the wallet that owns it, its name and its delegate.
-- The newest record (by slot) wins, so a changed delegate replaces the old one.
CREATE TABLE accounts (
    account        text   PRIMARY KEY,
    authority      text   NOT NULL,
    sub_account_id int    NOT NULL,
    name           text   NOT NULL,
    delegate       text,            -- NULL: none
    slot           bigint NOT NULL
);

-- The markets the events name (platform/markets), to name a market a record gives by index.
CREATE TABLE markets (
    symbol        text PRIMARY KEY,
    market_index  int  NOT NULL,
    market_type   text NOT NULL,
    market_filter text NOT NULL
);

-- One notification per event and wallet: the event's key (source, tx_sig, tx_sig_index) with the
-- wallet is unique, and the id is derived from it. record is the notification object as the feed
-- serves it (and as edge.notifications carried it when new), rewritten when its status changes;
-- the columns beside it are what the feed filters and orders by. created_at is the event's time,
-- sent_at when the notification was stored and delivered on the app channel; push is queued or
-- skipped.
CREATE TABLE notifications (
    notification_id uuid   PRIMARY KEY,
    authority       text   NOT NULL,
    source          text   NOT NULL,
    tx_sig          text   NOT NULL,
    tx_sig_index    int    NOT NULL,
    account         text   NOT NULL,
    type            text   NOT NULL,
    status          text   NOT NULL,
    push            text   NOT NULL,
    created_at      bigint NOT NULL,
    sent_at         bigint,
    read_at         bigint,
    record          json   NOT NULL,
    UNIQUE (authority, source, tx_sig, tx_sig_index)
);
-- The feed: a wallet's notifications of one status, newest first.
CREATE INDEX notifications_feed ON notifications (authority, status, created_at DESC, notification_id DESC);

-- Occurrences of accounts whose wallet is not known yet (their new-user record has not been
-- ingested): they become notifications when it is.
CREATE TABLE pending (
    account      text   NOT NULL,
    source       text   NOT NULL,
    tx_sig       text   NOT NULL,
    tx_sig_index int    NOT NULL,
    occurrence   json   NOT NULL,
    received_at  bigint NOT NULL,
    PRIMARY KEY (account, source, tx_sig, tx_sig_index)
);

CREATE TABLE preferences (
    authority        text   PRIMARY KEY,
    push_opt_out     text[] NOT NULL,
    updated_at       bigint NOT NULL
);

CREATE TABLE devices (
    authority  text   NOT NULL,
    device_id  text   NOT NULL,
    token      text   NOT NULL,
    platform   text,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    PRIMARY KEY (authority, device_id)
);

-- Every signature a request was accepted with, until its message's ts has left the clock window:
-- the one record all replicas share, so that a signature is accepted once.
CREATE TABLE used_signatures (
    signature  bytea  PRIMARY KEY,
    expires_at bigint NOT NULL
);
CREATE INDEX used_signatures_expiry ON used_signatures (expires_at);

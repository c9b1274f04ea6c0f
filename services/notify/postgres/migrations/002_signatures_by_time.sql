-- The replay record, keyed by the second its message was signed before the signature. Led by the
-- signature, a random value, every insert went to a random page of an index as large as the record;
-- led by the second, the inserts of a moment share the index's last pages, and pruning takes its
-- first ones. The key is as unique as the signature alone: an ed25519 signature verifies for one
-- message only, so a signature always comes with the same ts. expires_at still bounds each record's
-- life by the clock window of the replica that accepted it, so that replicas configured with
-- different windows never drop one another's records early.
CREATE TABLE used_signatures_by_time (
    signed_at  bigint NOT NULL, -- the signed message's ts in whole seconds, rounded down
    signature  bytea  NOT NULL,
    expires_at bigint NOT NULL,
    CONSTRAINT used_signatures_by_time_pkey PRIMARY KEY (signed_at, signature)
);

-- The records kept so far did not store ts, but their expires_at is ceil(ts + window) + 60: with
-- the default window of 300 s, ts rounded down is expires_at - 360 (a whole ts) or - 361. Both keys
-- are kept, so that a replay of either is refused.
INSERT INTO used_signatures_by_time (signed_at, signature, expires_at)
SELECT s.expires_at - d.back, s.signature, s.expires_at
FROM used_signatures s CROSS JOIN (VALUES (360), (361)) AS d(back);

DROP TABLE used_signatures;
ALTER TABLE used_signatures_by_time RENAME TO used_signatures;
ALTER TABLE used_signatures RENAME CONSTRAINT used_signatures_by_time_pkey TO used_signatures_pkey;

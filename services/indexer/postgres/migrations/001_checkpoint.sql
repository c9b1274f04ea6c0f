-- The indexer's progress: the last slot whose every event Kafka acknowledged, one row.
CREATE TABLE checkpoint (
    id         smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    slot       bigint NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- The last fillRecordId of each market at the checkpoint, so that a restart goes on checking for gaps
-- where it stopped. market_type is the program's enum: 0 spot, 1 perp.
CREATE TABLE fill_ids (
    market_type  smallint NOT NULL,
    market_index integer  NOT NULL,
    last_id      bigint   NOT NULL,
    PRIMARY KEY (market_type, market_index)
);

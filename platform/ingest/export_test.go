package ingest

import "context"

// SetAfterDBCommit makes c call f between its Postgres and its Kafka commit; an error from f
// ends Run there, as a crash would.
func SetAfterDBCommit(c *Consumer, f func(ctx context.Context) error) { c.afterDBCommit = f }

// Package faults holds the tests of the mesh under the failures a platform team lives with: Postgres
// failing over to a replica that lagged (or restored from a backup), Postgres stopped at once, and
// the replicas of a consuming service joining, dying mid-batch and leaving while events arrive.
// After each, what the services store, derived state included (candles, order states, aggregates,
// notifications), must equal what a run without faults stores from the same events.
package faults

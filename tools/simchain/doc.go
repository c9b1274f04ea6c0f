// Package simchain holds the test that the simulator's records survive the chain mapping of
// platform/chain/records (record -> Drift event bytes -> record), the ground the simulator stands
// on once it writes its records as the program's events. It has no code of its own.
package simchain

// Package simchain is the simulator playing the chain: a small Solana cluster of one program, Drift,
// whose blocks carry the simulator's records as the program's events and which answers the
// JSON-RPC methods the indexer uses, so that the dev stack and the tests run the production path
// (chain -> indexer -> Kafka) rather than writing the topics directly.
//
// A Chain takes the simulator's messages through Writer: a record of an event topic becomes the
// Drift event records.Event maps it to, in the transaction its txSig names (events in txSigIndex
// order), in the block of its slot; a market state updates the market's PerpMarket or SpotMarket
// account; a new user makes its User account and its wallet's builder accounts; the topics with no
// on-chain source (account snapshots, vaults, params) pass through to the direct writer.
//
// Blocks are keyed by slot and kept as event bytes; getBlock renders a block's JSON when asked,
// with the logs the runtime writes: the program's invoke, compute and success lines, emit_stack
// events as "Program log: " and emit! events as "Program data: ", some transactions calling Drift
// through another program (a jit-proxy at depth 2), some with vault events before Drift's. For an
// indexer to be tested against what mainnet does, the blocks also carry what it must not index,
// all of it derived from the chain's seed: other programs' transactions whose "Program data: "
// lines hold valid Drift event bytes, failed transactions whose events never happened, and
// harmlessly truncated logs ("Log truncated" after the last event). Slots without events have no
// block: the cluster skipped them.
//
// For a builder of the program's transactions the chain also serves what one reads: the State; the
// users' User accounts, moved by their orders, fills, deposits and settlements (an approximation:
// no margin, funding or liquidation), at the records' address and at the PDA; each wallet's
// UserStats, its system account and its associated token accounts (a few missing); the spot
// markets' mints and vaults; two address lookup tables at the mainnet tables' addresses (Markets,
// Users and LookupTables list what tests pick from). simulateTransaction and sendTransaction
// check what a node checks without running the program; a sent transaction is recorded (Sent) and
// changes nothing.
//
// Faults for the indexer's tests (rate limits, timeouts, server errors, skipped slots, truncated
// logs, a missing fill) are set at run time and counted; see Faults and the Chain's fault methods.
package simchain

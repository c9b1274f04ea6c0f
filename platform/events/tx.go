package events

// Tx says where on chain a record was emitted: the transaction (TxSig) and the position of the event
// in it (TxSigIndex), with the transaction's block time (Ts, unix seconds) and slot. (TxSig,
// TxSigIndex) is the record's natural key: one event of one transaction.
//
// Every transaction-borne record embeds Tx as its first field, so that encoding/json promotes its
// fields and the record's JSON starts with ts, txSig, txSigIndex and slot, as the API emits it.
// Records sampled from state rather than emitted by a transaction (MarketState, Vault,
// AccountSnapshot, Params) carry no Tx.
type Tx struct {
	Ts         int64  `json:"ts"`
	TxSig      string `json:"txSig"`
	TxSigIndex int    `json:"txSigIndex"`
	Slot       int64  `json:"slot"`
}

// Transaction is where the record was emitted: every record that embeds Tx has it, so that code
// ordering records as the chain does (by slot, transaction and position) needs no type switch.
func (t Tx) Transaction() Tx { return t }

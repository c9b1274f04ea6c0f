package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/snapshots"
)

// Ingest writes the topics the authority service consumes into its schema.
type Ingest struct {
	schema string
	t      tables
}

// NewIngest writes into schema.
func NewIngest(schema string) *Ingest { return &Ingest{schema: schema, t: tablesOf(schema)} }

// Sinks returns one sink per consumed topic.
func (in *Ingest) Sinks() []ingest.Sink {
	return []ingest.Sink{
		ingest.Records(events.TopicIFStakes, in.writeIFStakes),
		ingest.Records(events.TopicLPMintRedeem, in.writeLPMintRedeem),
		ingest.Records(events.TopicNewUsers, in.writeNewUsers),
		// A snapshot's API entry is encoded as it is decoded, beside the writers.
		ingest.Prepared(events.TopicAccountSnapshots, prepareSnapshot, in.writeSnapshots),
	}
}

// tables are the schema's quoted table names.
type tables struct {
	accounts, builders, snapshotDays string
	markets                          markets.Table
}

func tablesOf(schema string) tables {
	q := func(t string) string { return pg.Table(schema, t) }
	return tables{accounts: q("accounts"), builders: q("builder_accounts"), snapshotDays: q("snapshot_days"),
		markets: markets.In(schema)}
}

func (in *Ingest) writeIFStakes(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.IFStake]) error {
	t := ingest.Table[ingest.Event[*events.IFStake]]{
		Name:    in.schema + ".if_stakes",
		Columns: []string{"ts", "tx_sig", "tx_sig_index", "authority", "market_index", "record"},
		Key:     []string{"ts", "tx_sig", "tx_sig_index"},
		Row: func(e ingest.Event[*events.IFStake]) []any {
			r := e.Record
			return []any{r.Ts, r.TxSig, int32(r.TxSigIndex), r.UserAuthority, int32(r.MarketIndex), e.JSON}
		},
	}
	if _, err := t.Insert(ctx, tx, evs); err != nil {
		return fmt.Errorf("insert IF stakes: %w", err)
	}
	// Stakes are in spot markets' insurance funds; those that name their market teach it.
	return in.t.markets.Save(ctx, tx, markets.Of(evs, func(e ingest.Event[*events.IFStake]) events.Market {
		return events.Market{Symbol: e.Record.Symbol, Index: e.Record.MarketIndex, Type: events.MarketTypeSpot}
	}))
}

func (in *Ingest) writeLPMintRedeem(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.LPMintRedeem]) error {
	t := ingest.Table[ingest.Event[*events.LPMintRedeem]]{
		Name:    in.schema + ".lp_mint_redeem",
		Columns: []string{"ts", "tx_sig", "tx_sig_index", "authority", "mint_redeem_id", "record"},
		Key:     []string{"ts", "tx_sig", "tx_sig_index"},
		Row: func(e ingest.Event[*events.LPMintRedeem]) []any {
			r := e.Record
			return []any{r.Ts, r.TxSig, int32(r.TxSigIndex), r.Authority, r.MintRedeemID, e.JSON}
		},
	}
	if _, err := t.Insert(ctx, tx, evs); err != nil {
		return fmt.Errorf("insert LP mint/redeem records: %w", err)
	}
	return nil
}

// accountKey is one account of one wallet.
type accountKey struct{ authority, account string }

// newAccount is an account as its NewUser record tells it.
type newAccount struct {
	sub  int32
	name string
}

// builderKey is one builder account of a wallet: kind builder or escrow.
type builderKey struct{ authority, kind string }

// builderRow is a builder account as the newest record of a batch carries it.
type builderRow struct {
	slot, ts int64
	sig      string
	sigIndex int32
	record   []byte
}

// newer reports whether r comes after o in the chain.
func (r builderRow) newer(o builderRow) bool {
	return cmp.Or(cmp.Compare(r.slot, o.slot), cmp.Compare(r.ts, o.ts), cmp.Compare(r.sigIndex, o.sigIndex), cmp.Compare(r.sig, o.sig)) > 0
}

// writeNewUsers records each account of its wallet (the first record of an account counts: its id and
// name never change) and the newest builder accounts each wallet's records carried.
func (in *Ingest) writeNewUsers(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.NewUser]) error {
	accounts := map[accountKey]newAccount{}
	builders := map[builderKey]builderRow{}
	keep := func(r *events.NewUser, kind string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %s account: %w", kind, err)
		}
		row := builderRow{slot: r.Slot, ts: r.Ts, sig: r.TxSig, sigIndex: int32(r.TxSigIndex), record: b}
		k := builderKey{r.UserAuthority, kind}
		if old, ok := builders[k]; !ok || row.newer(old) {
			builders[k] = row
		}
		return nil
	}
	for _, e := range evs {
		r := e.Record
		k := accountKey{r.UserAuthority, r.User}
		if _, ok := accounts[k]; !ok {
			accounts[k] = newAccount{sub: int32(r.SubAccountID), name: r.Name}
		}
		if r.BuilderRevenueShareAccount != nil {
			if err := keep(r, "builder", r.BuilderRevenueShareAccount); err != nil {
				return err
			}
		}
		if r.RevenueShareEscrow != nil {
			if err := keep(r, "escrow", r.RevenueShareEscrow); err != nil {
				return err
			}
		}
	}
	// Rows in key order: writers of other partitions may touch the same wallets' rows (a snapshot
	// naming an account), and rows locked in one order cannot deadlock.
	var auths, accts, names []string
	var subs []int32
	for _, k := range slices.SortedFunc(maps.Keys(accounts), compareAccounts) {
		a := accounts[k]
		auths, accts, subs, names = append(auths, k.authority), append(accts, k.account), append(subs, a.sub), append(names, a.name)
	}
	var b pgx.Batch
	b.Queue(`INSERT INTO `+in.t.accounts+` AS a (authority, account, sub_account_id, name)
		SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[])
		ON CONFLICT (authority, account) DO UPDATE SET sub_account_id = excluded.sub_account_id, name = excluded.name
		WHERE a.sub_account_id IS NULL`, auths, accts, subs, names)
	if len(builders) > 0 {
		var bAuth, bKind, bSig []string
		var bSlot, bTs []int64
		var bIdx []int32
		var bRec [][]byte
		for _, k := range slices.SortedFunc(maps.Keys(builders), func(a, b builderKey) int {
			return cmp.Or(cmp.Compare(a.authority, b.authority), cmp.Compare(a.kind, b.kind))
		}) {
			r := builders[k]
			bAuth, bKind, bSlot, bTs, bSig, bIdx, bRec = append(bAuth, k.authority), append(bKind, k.kind), append(bSlot, r.slot),
				append(bTs, r.ts), append(bSig, r.sig), append(bIdx, r.sigIndex), append(bRec, r.record)
		}
		b.Queue(`INSERT INTO `+in.t.builders+` AS b (authority, kind, slot, ts, tx_sig, tx_sig_index, record)
			SELECT a, k, s, t, g, i, r::json FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::int[], $7::text[])
			  AS u(a, k, s, t, g, i, r)
			ON CONFLICT (authority, kind) DO UPDATE SET slot = excluded.slot, ts = excluded.ts, tx_sig = excluded.tx_sig,
			  tx_sig_index = excluded.tx_sig_index, record = excluded.record
			WHERE (excluded.slot, excluded.ts, excluded.tx_sig_index, excluded.tx_sig) > (b.slot, b.ts, b.tx_sig_index, b.tx_sig)`,
			bAuth, bKind, bSlot, bTs, bSig, bIdx, textOf(bRec))
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("record accounts: %w", err)
	}
	return nil
}

func compareAccounts(a, b accountKey) int {
	return cmp.Or(cmp.Compare(a.authority, b.authority), cmp.Compare(a.account, b.account))
}

func textOf(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// snapshotRow is one snapshot as the API serves it: account "" for a wallet's referral snapshot.
type snapshotRow struct {
	authority, kind, account string
	ts                       int64
	record                   []byte
}

// prepareSnapshot encodes a snapshot's API entry: its ts and the fields of its kind.
func prepareSnapshot(e ingest.Event[*events.AccountSnapshot]) (snapshotRow, error) {
	r := e.Record
	b, err := snapshots.Entry(r)
	if err != nil {
		return snapshotRow{}, err
	}
	account := r.AccountID
	if r.Kind == events.SnapshotReferral {
		account = "" // a wallet's, whatever the record says
	}
	return snapshotRow{authority: r.Authority, kind: r.Kind, account: account, ts: r.Ts, record: b}, nil
}

// dayKey is one account's point of one kind on one UTC day.
type dayKey struct {
	authority, kind, account string
	day                      int64
}

// writeSnapshots stores every snapshot, keeps the latest of each account's day in snapshot_days
// (from the snapshots new to the table: a replay changes nothing), and records the accounts they name.
func (in *Ingest) writeSnapshots(ctx context.Context, tx pgx.Tx, rows []snapshotRow) error {
	t := ingest.Table[snapshotRow]{
		Name:    in.schema + ".snapshots",
		Columns: []string{"authority", "kind", "account", "ts", "record"},
		Key:     []string{"authority", "kind", "account", "ts"},
		Row:     func(r snapshotRow) []any { return []any{r.authority, r.kind, r.account, r.ts, r.record} },
	}
	fresh, err := t.Insert(ctx, tx, rows)
	if err != nil {
		return fmt.Errorf("insert snapshots: %w", err)
	}
	if len(fresh) == 0 {
		return nil
	}
	days := map[dayKey]snapshotRow{}
	accounts := map[accountKey]bool{}
	for _, r := range fresh {
		k := dayKey{r.authority, r.kind, r.account, r.ts - r.ts%86400}
		if old, ok := days[k]; !ok || r.ts > old.ts {
			days[k] = r
		}
		if r.account != "" {
			accounts[accountKey{r.authority, r.account}] = true
		}
	}
	var dAuth, dKind, dAcct, dRec []string
	var dDay, dTs []int64
	for _, k := range slices.SortedFunc(maps.Keys(days), func(a, b dayKey) int {
		return cmp.Or(cmp.Compare(a.authority, b.authority), cmp.Compare(a.kind, b.kind), cmp.Compare(a.account, b.account), cmp.Compare(a.day, b.day))
	}) {
		r := days[k]
		dAuth, dKind, dAcct, dDay, dTs, dRec = append(dAuth, k.authority), append(dKind, k.kind), append(dAcct, k.account),
			append(dDay, k.day), append(dTs, r.ts), append(dRec, string(r.record))
	}
	var aAuth, aAcct []string
	for _, k := range slices.SortedFunc(maps.Keys(accounts), compareAccounts) {
		aAuth, aAcct = append(aAuth, k.authority), append(aAcct, k.account)
	}
	var b pgx.Batch
	b.Queue(`INSERT INTO `+in.t.snapshotDays+` AS d (authority, kind, account, day, ts, record)
		SELECT a, k, c, d, t, r::json FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::text[]) AS u(a, k, c, d, t, r)
		ON CONFLICT (authority, kind, account, day) DO UPDATE SET ts = excluded.ts, record = excluded.record
		WHERE excluded.ts > d.ts`, dAuth, dKind, dAcct, dDay, dTs, dRec)
	if len(aAuth) > 0 {
		b.Queue(`INSERT INTO `+in.t.accounts+` (authority, account) SELECT * FROM unnest($1::text[], $2::text[])
			ON CONFLICT (authority, account) DO NOTHING`, aAuth, aAcct)
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("keep the snapshots' days: %w", err)
	}
	return nil
}

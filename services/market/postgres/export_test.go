package postgres

import (
	"context"
	"fmt"

	"github.com/tidemark/tidemark/services/market"
)

// Hooks for the external tests.

// ExplainExport returns the JSON plan of the statement Export runs for q, planned on an export
// connection like Export's.
func (e *Exporter) ExplainExport(ctx context.Context, q market.ExportQuery) ([]byte, error) {
	sql, args, err := e.query(q)
	if err != nil {
		return nil, err
	}
	conn, err := e.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	var plan []byte
	if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&plan); err != nil {
		return nil, fmt.Errorf("explain %s: %w", sql, err)
	}
	return plan, nil
}

// Package migrations holds the indexer schema's SQL, applied in name order at start-up.
package migrations

import "embed"

// FS is the migrations.
//
//go:embed *.sql
var FS embed.FS

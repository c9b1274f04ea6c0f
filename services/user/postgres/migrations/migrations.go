// Package migrations is the user schema's SQL, embedded beside it so that the binary carries it and
// the kit applies it at start-up, each file once in name order.
package migrations

import "embed"

// FS holds the schema's migrations, the *.sql files of this folder at its root.
//
//go:embed *.sql
var FS embed.FS

// Package exportstream is the contract between a service's internal export route and the export
// operator that reads it:
//
//	GET {internal base}/internal/exports/{fileType}?from=..&to=..[&market=..][&accounts=a,b]
//
// answers 200 text/csv (a header row, then one row per record of from <= ts <= to, oldest first)
// followed by the RecordCountTrailer; an answer without the trailer was cut short.
package exportstream

// PathPrefix is where the route lives on a service's internal port; the file type follows it.
const PathPrefix = "/internal/exports/"

// RecordCountTrailer is the HTTP trailer carrying the number of records (rows after the header).
const RecordCountTrailer = "Tidemark-Record-Count"

// MaxRangeSeconds bounds to - from: one export covers at most 366 days.
const MaxRangeSeconds = 366 * 24 * 3600

// Package iceberg writes a topic's records into an Apache Iceberg table
// that Spark, Trino and other engines query (docs/iceberg.md): the table
// layout (layout.go), records to Arrow and Parquet (arrow.go), exactly
// once appends under a watermark committed with the data (writer.go,
// watermark.go) and the catalogs: iceberg-go's SQL catalog on
// PostgreSQL with an S3 warehouse, or on SQLite with a local one
// (catalog.go).
//
// The compactor calls Open once, then per run and topic
// Writer.Watermark to know where the table stands and Writer.Append
// with the records above it. Append is safe to repeat after any
// failure, from any replica: rows below the table's watermark are never
// written twice.
package iceberg

import "errors"

// Errors of the package; wrapped with details.
var (
	// ErrInvalidName: a namespace or table name the catalogs cannot hold.
	ErrInvalidName = errors.New("iceberg: invalid name")
	// ErrInvalidWatermark: a watermark with a negative partition or
	// offset, or a table property that does not parse.
	ErrInvalidWatermark = errors.New("iceberg: invalid watermark")
	// ErrInvalidRows: rows not sorted by partition and offset, or not
	// below the watermark of their append.
	ErrInvalidRows = errors.New("iceberg: invalid rows")
	// ErrInvalidConfig: a Config that validate refuses.
	ErrInvalidConfig = errors.New("iceberg: invalid config")
	// ErrCommitFailed: an append found the table changed under it on
	// every attempt; nothing of it was committed. Retry later.
	ErrCommitFailed = errors.New("iceberg: commit failed")
)

package iceberg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// The rejected table. A topic with a value schema has, beside its table,
// the table TABLE_rejected of the records whose value could not be
// converted to the typed columns (a value written before the schema
// existed, or one an agent with an older schema accepted), with the
// reason:
//
//	partition    int          required
//	offset       long         required
//	timestamp    timestamptz  required
//	append_time  timestamptz  required
//	key          binary
//	value        binary
//	reason       string       required  e.g. "$.customer.age: want integer, got string"
//
// partitioned by day(timestamp) like the topic's table. The record stays
// in the topic's table too (raw value, null value_fields): the table
// holds every offset whatever its value, and the rejected table says
// which values did not convert and why.
//
// Exactly once, like the topic's table: the rejected table has its own
// watermark (property floe.watermark of that table). The compactor
// appends a range's rejected rows (AppendRejected) before the topic's
// table append of the same range, with the same watermark; a range is
// replayed only while the topic's table does not cover it, and then
// AppendRejected writes only the rows above its own watermark. A range
// without rejected rows commits nothing to the rejected table.

// rejectedSuffix ends a rejected table's name: "_r" appears in no
// TableName, so no topic's table has such a name.
const rejectedSuffix = "_rejected"

// RejectedTableName returns the name of topic's rejected table:
// TableName(topic) + "_rejected"; a name that would be longer than
// MaxTableNameLen is cut and ended with _z, 16 hex digits of the topic's
// SHA-256 and _rejected.
func RejectedTableName(topic string) string {
	name := TableName(topic)
	if len(name)+len(rejectedSuffix) <= MaxTableNameLen {
		return name + rejectedSuffix
	}
	sum := sha256.Sum256([]byte(topic))
	suffix := "_z" + hex.EncodeToString(sum[:8]) + rejectedSuffix
	cut := min(len(name), MaxTableNameLen-len(suffix))
	for cut > 0 && endsInOpenEscape(name[:cut]) {
		cut--
	}
	return name[:cut] + suffix
}

// RejectedIdentifier returns the catalog identifier of topic's rejected
// table.
func (w *Writer) RejectedIdentifier(topic string) table.Identifier {
	return w.identifier(topic, rejectedTable)
}

// RejectedSchema returns the schema of a rejected table.
func RejectedSchema() *icego.Schema {
	base := baseFields()[:6] // partition to value, ids 1 to 6
	return icego.NewSchema(0, append(base,
		icego.NestedField{ID: 7, Name: ColReason, Type: icego.PrimitiveTypes.String, Required: true,
			Doc: "why the value could not be converted to the typed columns"})...)
}

// AppendRejected writes rows (sorted by partition and offset, each with
// its Reason) to topic's rejected table, created if missing, and moves
// its watermark to cover want, exactly once, as Append does for the
// topic's table. Call it before the Append of the same range.
func (w *Writer) AppendRejected(ctx context.Context, topic string, rows []Row, want Watermark) (AppendResult, error) {
	return w.appendTo(ctx, topic, rejectedTable, rows, want)
}

// RejectedWatermark returns the watermark of topic's rejected table;
// empty when it does not exist.
func (w *Writer) RejectedWatermark(ctx context.Context, topic string) (Watermark, error) {
	tbl, err := w.load(ctx, topic, rejectedTable)
	if missing(err) {
		return Watermark{}, nil
	}
	if err != nil {
		return nil, err
	}
	return tableWatermark(tbl)
}

// The rejected table is maintained like the topic's table, by the same
// steps (Maintain and its parts), under the topic table's lease: its
// location (WAREHOUSE/NAMESPACE.db/TABLE_rejected) is its own, beside the
// topic table's (…/TABLE, a sibling, not a parent: listing a table's
// location lists "TABLE/", so neither table's orphan deletion sees the
// other's files), and shared only with its own retired predecessors
// (TABLE_rejected_xID, RetiredRejectedTables).

// DescribeRejected returns the state of topic's rejected table (Exists
// false when it has none).
func (w *Writer) DescribeRejected(ctx context.Context, topic string) (TableState, error) {
	return w.describe(ctx, topic, rejectedTable)
}

// MaintainRejected is Maintain on topic's rejected table.
func (w *Writer) MaintainRejected(ctx context.Context, topic string, opts MaintainOptions) (MaintainResult, error) {
	return w.maintain(ctx, topic, rejectedTable, opts)
}

// RewriteRejectedSmallFiles is RewriteSmallFiles on topic's rejected
// table.
func (w *Writer) RewriteRejectedSmallFiles(ctx context.Context, topic string, opts RewriteOptions) (RewriteResult, error) {
	return w.rewriteSmallFiles(ctx, topic, rejectedTable, opts)
}

// ExpireRejectedDays is ExpireDays on topic's rejected table.
func (w *Writer) ExpireRejectedDays(ctx context.Context, topic string, cutoff time.Time) (files int, rows int64, err error) {
	return w.expireDays(ctx, topic, rejectedTable, cutoff)
}

// RetiredRejectedTables lists the rejected tables of deleted topics of
// topic's name renamed out of the way (TABLE_rejected_xID): they share
// the location of topic's rejected table.
func (w *Writer) RetiredRejectedTables(ctx context.Context, topic string) ([]table.Identifier, error) {
	return w.retiredTables(ctx, topic, rejectedTable)
}

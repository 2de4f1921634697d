package iceberg

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	icego "github.com/apache/iceberg-go"

	"github.com/floe-broker/floe/schema"
)

// Column names of a topic's table (docs/iceberg.md, "Layout").
const (
	ColPartition  = "partition"
	ColOffset     = "offset"
	ColTimestamp  = "timestamp"
	ColAppendTime = "append_time"
	ColKey        = "key"
	ColValue      = "value"
	ColHeaders    = "headers"
	// ColValueFields is the struct of the typed columns of a topic with a
	// value schema (typed.go); absent from the tables of other topics.
	ColValueFields = "value_fields"
	// ColReason is the rejected table's column saying why a record's
	// value could not be converted (rejected.go).
	ColReason = "reason"
)

// Table properties floe sets on a topic's table.
const (
	// PropWatermark holds the table's watermark (FormatWatermark): the
	// next offset per partition that the table does not hold yet. It is
	// also in the summary of each snapshot floe commits.
	PropWatermark = "floe.watermark"
	// PropTopic holds the name of the topic the table mirrors.
	PropTopic = "floe.topic"
)

// MaxTableNameLen is the longest table name TableName returns: the
// table_name column of Iceberg's JDBC catalog is VARCHAR(255).
const MaxTableNameLen = 255

// Schema returns the schema of a topic's table, with the typed columns
// of vs (nil: none) in the struct column value_fields, last. Field ids
// are the ones the table is created with, 1 to 10 for the fixed columns
// and from 11 on for value_fields, depth first; the catalog keeps them.
func Schema(vs *schema.Schema) *icego.Schema {
	fields := baseFields()
	if vs != nil {
		if f, ok := valueFieldsColumn(vs, 11); ok {
			fields = append(fields, f)
		}
	}
	return icego.NewSchema(0, fields...)
}

// baseFields are the columns of every topic's table, ids 1 to 10.
func baseFields() []icego.NestedField {
	return []icego.NestedField{
		icego.NestedField{ID: 1, Name: ColPartition, Type: icego.PrimitiveTypes.Int32, Required: true,
			Doc: "partition of the topic"},
		icego.NestedField{ID: 2, Name: ColOffset, Type: icego.PrimitiveTypes.Int64, Required: true,
			Doc: "offset of the record in its partition"},
		icego.NestedField{ID: 3, Name: ColTimestamp, Type: icego.PrimitiveTypes.TimestampTz, Required: true,
			Doc: "the record's timestamp, as its producer set it"},
		icego.NestedField{ID: 4, Name: ColAppendTime, Type: icego.PrimitiveTypes.TimestampTz, Required: true,
			Doc: "when the broker committed the record"},
		icego.NestedField{ID: 5, Name: ColKey, Type: icego.PrimitiveTypes.Binary, Required: false,
			Doc: "the record's key; null for a null key"},
		icego.NestedField{ID: 6, Name: ColValue, Type: icego.PrimitiveTypes.Binary, Required: false,
			Doc: "the record's value; null for a null value (a tombstone)"},
		icego.NestedField{ID: 7, Name: ColHeaders, Required: true, Doc: "the record's headers, in order",
			Type: &icego.ListType{ElementID: 8, ElementRequired: true, Element: &icego.StructType{
				FieldList: []icego.NestedField{
					{ID: 9, Name: "key", Type: icego.PrimitiveTypes.String, Required: true},
					{ID: 10, Name: "value", Type: icego.PrimitiveTypes.Binary, Required: false},
				}}}},
	}
}

// PartitionSpec returns the table's partition spec for schema: by day of
// the record's timestamp.
func PartitionSpec(schema *icego.Schema) (icego.PartitionSpec, error) {
	f, ok := schema.FindFieldByName(ColTimestamp)
	if !ok {
		return icego.PartitionSpec{}, fmt.Errorf("iceberg: schema has no %q column", ColTimestamp)
	}
	return icego.NewPartitionSpecOpts(
		icego.AddPartitionFieldBySourceID(f.ID, "timestamp_day", icego.DayTransform{}, schema, nil))
}

// ValidateNamespace checks a namespace name: 1 to 255 characters of
// [a-z0-9_], starting with a letter or '_'. Dots are refused: Iceberg's
// Java JDBC catalog (Spark, Trino) cannot read a dotted namespace that
// iceberg-go writes.
func ValidateNamespace(ns string) error {
	if ns == "" || len(ns) > MaxTableNameLen {
		return fmt.Errorf("%w: namespace %q must be 1 to %d characters", ErrInvalidName, ns, MaxTableNameLen)
	}
	for i := 0; i < len(ns); i++ {
		c := ns[i]
		if !(c >= 'a' && c <= 'z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return fmt.Errorf("%w: namespace %q: character %q at %d is outside [a-z0-9_] (digits not first)",
				ErrInvalidName, ns, c, i)
		}
	}
	return nil
}

// TableName maps a topic name (Kafka's [a-zA-Z0-9._-]) to its table's
// name, one-to-one, in [a-z0-9_] only, so that SQL engines that fold
// identifiers to lower case (Trino) and treat '.' as a separator (all of
// them) name it without quotes:
//
//	a-z 0-9  themselves
//	_        __
//	.        _d
//	-        _h
//	A-Z      _u and the letter in lower case
//
// so orders.created is orders_dcreated and user-events user_hevents. A
// name whose mapping is longer than MaxTableNameLen is cut and ended with
// _z and 16 hex digits of its SHA-256 ("_z" appears in no other mapping).
// Characters outside the topic alphabet map as _x and two hex digits; a
// valid topic has none.
func TableName(topic string) string {
	var b strings.Builder
	b.Grow(len(topic) + 8)
	for i := 0; i < len(topic); i++ {
		c := topic[i]
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			b.WriteByte(c)
		case c == '_':
			b.WriteString("__")
		case c == '.':
			b.WriteString("_d")
		case c == '-':
			b.WriteString("_h")
		case c >= 'A' && c <= 'Z':
			b.WriteString("_u")
			b.WriteByte(c - 'A' + 'a')
		default:
			fmt.Fprintf(&b, "_x%02x", c)
		}
	}
	name := b.String()
	if len(name) <= MaxTableNameLen {
		return name
	}
	sum := sha256.Sum256([]byte(topic))
	suffix := "_z" + hex.EncodeToString(sum[:8])
	cut := MaxTableNameLen - len(suffix)
	// Do not cut an escape in two: a trailing lone '_' would read as the
	// start of "_z".
	for cut > 0 && endsInOpenEscape(name[:cut]) {
		cut--
	}
	return name[:cut] + suffix
}

// endsInOpenEscape reports whether s ends inside an escape sequence of
// TableName (a '_' whose code letter was cut off, or "_u"/"_x.." cut).
func endsInOpenEscape(s string) bool {
	// Walk the escapes from the start: only a full parse knows.
	for i := 0; i < len(s); {
		if s[i] != '_' {
			i++
			continue
		}
		if i+1 >= len(s) {
			return true
		}
		switch s[i+1] {
		case 'u':
			if i+2 >= len(s) {
				return true
			}
			i += 3
		case 'x':
			if i+3 >= len(s) {
				return true
			}
			i += 4
		default:
			i += 2
		}
	}
	return false
}

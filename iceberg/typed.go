package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	icego "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-broker/floe/schema"
)

// Typed columns. A topic with a value schema (config value.schema,
// package schema) gets its values' fields as columns of the struct
// column value_fields, beside the raw value:
//
//	value_fields struct<            optional: null for a null value, a
//	  id long,                      rejected record, or a row written
//	  customer struct<name string>, before the column existed
//	  tags list<string>,
//	  at timestamptz>
//
// One struct rather than top-level columns keeps the schema's names
// apart from the fixed columns (a property may be called "offset" or
// "key"), keeps the fixed columns' field ids 1 to 10 whatever the schema,
// and reads as the value's own shape (value_fields.customer.name). Every
// field is optional in the table: a required property may become
// optional later, and a missing object reads as null.
//
// The table's schema evolves with the value schema (EnsureTable with
// WithValueSchema): a property added to it becomes a field added to the
// struct, with a new field id; existing fields keep theirs; data files
// written before read the new field as null. schema.Compatible refuses
// the changes a table could not follow (a type change, a removal).

// valueFieldsColumn returns the value_fields column of vs, its field ids
// from first on, depth first; false when vs has no property.
func valueFieldsColumn(vs *schema.Schema, first int) (icego.NestedField, bool) {
	cols := vs.Columns()
	if len(cols) == 0 {
		return icego.NestedField{}, false
	}
	next := first
	id := func() int { next++; return next - 1 }
	f := icego.NestedField{ID: id(), Name: ColValueFields, Required: false,
		Doc: "the value's fields, typed by the topic's value schema; null for a null or rejected value"}
	f.Type = structType(cols, id)
	return f, true
}

func structType(cols []schema.Column, id func() int) *icego.StructType {
	st := &icego.StructType{FieldList: make([]icego.NestedField, 0, len(cols))}
	for _, c := range cols {
		f := icego.NestedField{ID: id(), Name: c.Name, Required: false}
		f.Type = icebergType(c, id)
		st.FieldList = append(st.FieldList, f)
	}
	return st
}

func icebergType(c schema.Column, id func() int) icego.Type {
	switch c.Type {
	case schema.TypeString:
		return icego.PrimitiveTypes.String
	case schema.TypeDouble:
		return icego.PrimitiveTypes.Float64
	case schema.TypeLong:
		return icego.PrimitiveTypes.Int64
	case schema.TypeBoolean:
		return icego.PrimitiveTypes.Bool
	case schema.TypeTimestampTz:
		return icego.PrimitiveTypes.TimestampTz
	case schema.TypeStruct:
		return structType(c.Fields, id)
	case schema.TypeList:
		l := &icego.ListType{ElementID: id(), ElementRequired: false}
		l.Element = icebergType(*c.Elem, id)
		return l
	}
	panic(fmt.Sprintf("iceberg: column type %v", c.Type))
}

// TypeRows checks the values of rows against vs, a topic's value schema
// (nil: none, nothing to do). A row whose value conforms is marked Typed:
// its table row gets the typed columns. A row whose value does not (it
// was written before the schema existed, or the schema changed since) is
// returned, with the reason, as a row of the rejected table, in the
// order of rows; its table row keeps the raw value and a null
// value_fields. A null value is neither.
func TypeRows(vs *schema.Schema, rows []Row) []Row {
	if vs == nil {
		return nil
	}
	var rejected []Row
	for i := range rows {
		r := &rows[i]
		r.Typed = false
		if r.Value == nil {
			continue
		}
		if err := vs.Validate(r.Value); err != nil {
			rr := *r
			rr.Headers = nil
			rr.Reason = err.Error()
			rejected = append(rejected, rr)
			continue
		}
		r.Typed = true
	}
	return rejected
}

// RejectRows returns every row of rows with a value as a row of the
// rejected table with reason, and marks none Typed: what TypeRows does
// when the table cannot take the schema's columns (ErrSchemaConflict).
func RejectRows(rows []Row, reason string) []Row {
	var rejected []Row
	for i := range rows {
		r := &rows[i]
		r.Typed = false
		if r.Value == nil {
			continue
		}
		rr := *r
		rr.Headers = nil
		rr.Reason = reason
		rejected = append(rejected, rr)
	}
	return rejected
}

// appendTypedValue appends the typed columns of value, a Typed row's
// value, to b, the value_fields builder. A value that does not decode, or
// a field whose JSON does not fit the column's type (the table was
// changed by hand), appends null there: the row still goes in.
func appendTypedValue(b array.Builder, value []byte) {
	v, err := schema.DecodeJSON(value)
	if err != nil {
		b.AppendNull()
		return
	}
	appendTyped(b, v)
}

// appendTyped appends v, a value of DecodeJSON, to b by b's type.
func appendTyped(b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.StructBuilder:
		m, ok := v.(map[string]any)
		if !ok {
			b.AppendNull()
			return
		}
		b.Append(true)
		st := b.Type().(*arrow.StructType)
		for i, f := range st.Fields() {
			appendTyped(b.FieldBuilder(i), m[f.Name])
		}
	case *array.ListBuilder:
		a, ok := v.([]any)
		if !ok {
			b.AppendNull()
			return
		}
		b.Append(true)
		for _, e := range a {
			appendTyped(b.ValueBuilder(), e)
		}
	case *array.LargeListBuilder:
		a, ok := v.([]any)
		if !ok {
			b.AppendNull()
			return
		}
		b.Append(true)
		for _, e := range a {
			appendTyped(b.ValueBuilder(), e)
		}
	case *array.StringBuilder:
		if s, ok := v.(string); ok {
			b.Append(s)
			return
		}
		b.AppendNull()
	case *array.LargeStringBuilder:
		if s, ok := v.(string); ok {
			b.Append(s)
			return
		}
		b.AppendNull()
	case *array.BooleanBuilder:
		if x, ok := v.(bool); ok {
			b.Append(x)
			return
		}
		b.AppendNull()
	case *array.Int64Builder:
		if n, ok := v.(json.Number); ok {
			if x, err := schema.ParseInteger(n); err == nil {
				b.Append(x)
				return
			}
		}
		b.AppendNull()
	case *array.Float64Builder:
		if n, ok := v.(json.Number); ok {
			if x, err := schema.ParseNumber(n); err == nil {
				b.Append(x)
				return
			}
		}
		b.AppendNull()
	case *array.TimestampBuilder:
		if s, ok := v.(string); ok {
			if t, err := schema.ParseDateTime(s); err == nil {
				b.Append(arrow.Timestamp(t.UnixMicro()))
				return
			}
		}
		b.AppendNull()
	default:
		b.AppendNull()
	}
}

// ErrSchemaConflict: a table column's type differs from the value
// schema's (the table was changed by hand, or the schema replaced in a
// way schema.Compatible refuses); the column is left as it is.
var ErrSchemaConflict = errors.New("iceberg: table columns conflict with the value schema")

// schemaDiff compares the typed columns of want with the table schema
// have: the paths of fields have lacks (what an evolution adds), and an
// error wrapping ErrSchemaConflict naming the first field whose type
// differs.
func schemaDiff(have, want *icego.Schema) ([]string, error) {
	var missing []string
	var walk func(path string, f icego.NestedField) error
	walk = func(path string, f icego.NestedField) error {
		got, ok := have.FindFieldByName(path)
		if !ok {
			missing = append(missing, path)
			return nil
		}
		switch t := f.Type.(type) {
		case *icego.StructType:
			if _, ok := got.Type.(*icego.StructType); !ok {
				return fmt.Errorf("%w: column %s is %s, the schema says a struct", ErrSchemaConflict, path, got.Type)
			}
			for _, c := range t.FieldList {
				if err := walk(path+"."+c.Name, c); err != nil {
					return err
				}
			}
		case *icego.ListType:
			if _, ok := got.Type.(*icego.ListType); !ok {
				return fmt.Errorf("%w: column %s is %s, the schema says a list", ErrSchemaConflict, path, got.Type)
			}
			return walk(path+".element", t.ElementField())
		default:
			if !got.Type.Equals(f.Type) {
				return fmt.Errorf("%w: column %s is %s, the schema says %s", ErrSchemaConflict, path, got.Type, f.Type)
			}
		}
		return nil
	}
	for _, f := range want.Fields() {
		if err := walk(f.Name, f); err != nil {
			return missing, err
		}
	}
	return missing, nil
}

// evolve adds to tbl the fields of want it lacks, in one schema update
// (iceberg-go's UpdateSchema, union by name: existing fields keep their
// ids, new ones get the table's next ids), retried on a concurrent
// change. It returns the table as it is after; with a type conflict, the
// table unchanged and an error wrapping ErrSchemaConflict.
func (w *Writer) evolve(ctx context.Context, topic string, tbl *table.Table, want *icego.Schema) (*table.Table, error) {
	wait := w.opts.RetryWait
	for attempt := 1; ; attempt++ {
		add, err := schemaDiff(tbl.Schema(), want)
		if err != nil {
			return tbl, fmt.Errorf("table %v: %w", tbl.Identifier(), err)
		}
		if len(add) == 0 {
			return tbl, nil
		}
		tx := tbl.NewTransaction()
		if err := tx.UpdateSchema(true, false).UnionByNameWith(want).Commit(); err != nil {
			return tbl, fmt.Errorf("%w: table %v: %w", ErrSchemaConflict, tbl.Identifier(), err)
		}
		_, err = tx.Commit(ctx)
		if err == nil {
			w.log.Info("iceberg: table schema evolved", "topic", topic, "table", tbl.Identifier(), "added", add)
			return w.Load(ctx, topic)
		}
		if attempt >= w.opts.MaxAttempts || ctx.Err() != nil {
			return nil, fmt.Errorf("iceberg: evolve the schema of %v: %w", tbl.Identifier(), err)
		}
		w.log.Warn("iceberg: schema update failed, reloading the table", "topic", topic, "attempt", attempt, "error", err)
		if err := sleep(ctx, wait); err != nil {
			return nil, err
		}
		wait *= 2
		if tbl, err = w.Load(ctx, topic); err != nil {
			return nil, err
		}
	}
}

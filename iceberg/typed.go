package iceberg

import (
	"bytes"
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

// typedBuilder is the value_fields builder tree, with what appending
// needs looked up once (a struct builder's type is rebuilt on each call).
type typedBuilder struct {
	b      array.Builder
	fields map[string]int  // a struct's field index by name
	kids   []*typedBuilder // a struct's fields, or a list's element
}

func newTypedBuilder(b array.Builder) *typedBuilder {
	t := &typedBuilder{b: b}
	switch b := b.(type) {
	case *array.StructBuilder:
		st := b.Type().(*arrow.StructType)
		t.fields = make(map[string]int, st.NumFields())
		for i, f := range st.Fields() {
			t.fields[f.Name] = i
			t.kids = append(t.kids, newTypedBuilder(b.FieldBuilder(i)))
		}
	case array.ListLikeBuilder:
		t.kids = []*typedBuilder{newTypedBuilder(b.ValueBuilder())}
	}
	return t
}

// appendValue appends the typed columns of value, a Typed row's value
// (valid JSON conforming to the schema), reading its bytes in place
// (schema.Members, Elements, Text). A field whose JSON does not fit the
// column's type (the table was changed by hand) appends null there: the
// row still goes in.
func (t *typedBuilder) appendValue(raw []byte) {
	if schema.IsNull(raw) {
		t.b.AppendNull()
		return
	}
	switch b := t.b.(type) {
	case *array.StructBuilder:
		var small [16][]byte
		var vals [][]byte
		if len(t.kids) > len(small) {
			vals = make([][]byte, len(t.kids))
		} else {
			vals = small[:len(t.kids)]
		}
		ok := schema.Members(raw, func(key string, v []byte) {
			if i, found := t.fields[key]; found {
				vals[i] = v // the last of a repeated key, as encoding/json
			}
		})
		if !ok {
			b.AppendNull()
			return
		}
		b.Append(true)
		for i, k := range t.kids {
			if vals[i] == nil {
				k.b.AppendNull()
			} else {
				k.appendValue(vals[i])
			}
		}
	case array.ListLikeBuilder:
		if !isArray(raw) {
			b.AppendNull()
			return
		}
		b.Append(true)
		schema.Elements(raw, t.kids[0].appendValue)
	case *array.StringBuilder:
		if s, ok := schema.Text(raw); ok {
			b.Append(s)
			return
		}
		b.AppendNull()
	case *array.LargeStringBuilder:
		if s, ok := schema.Text(raw); ok {
			b.Append(s)
			return
		}
		b.AppendNull()
	case *array.BooleanBuilder:
		switch string(bytes.TrimSpace(raw)) {
		case "true":
			b.Append(true)
		case "false":
			b.Append(false)
		default:
			b.AppendNull()
		}
	case *array.Int64Builder:
		if x, err := schema.ParseInteger(json.Number(bytes.TrimSpace(raw))); err == nil {
			b.Append(x)
			return
		}
		b.AppendNull()
	case *array.Float64Builder:
		if x, err := schema.ParseNumber(json.Number(bytes.TrimSpace(raw))); err == nil {
			b.Append(x)
			return
		}
		b.AppendNull()
	case *array.TimestampBuilder:
		if s, ok := schema.Text(raw); ok {
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

// isArray reports whether raw is a JSON array.
func isArray(raw []byte) bool {
	v := bytes.TrimSpace(raw)
	return len(v) > 0 && v[0] == '['
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

package schema

// ColumnType is the table type of a schema's field.
type ColumnType uint8

// Table types: JSON strings are strings, numbers doubles, integers longs
// (64-bit), booleans booleans, date-time strings timestamps with time
// zone (microseconds, UTC), objects structs and arrays lists.
const (
	TypeString ColumnType = iota + 1
	TypeDouble
	TypeLong
	TypeBoolean
	TypeTimestampTz
	TypeStruct
	TypeList
)

func (t ColumnType) String() string {
	switch t {
	case TypeString:
		return "string"
	case TypeDouble:
		return "double"
	case TypeLong:
		return "long"
	case TypeBoolean:
		return "boolean"
	case TypeTimestampTz:
		return "timestamptz"
	case TypeStruct:
		return "struct"
	case TypeList:
		return "list"
	}
	return "?"
}

// Column is a field of the table's typed columns. Every column is
// optional in the table, whatever the schema requires: a record may have
// a null value (a tombstone) or be rejected, and a required property may
// become optional later. List elements are optional too (nullable items).
type Column struct {
	Name   string
	Type   ColumnType
	Fields []Column // TypeStruct, in declaration order
	Elem   *Column  // TypeList; its Name is "element"
}

// Columns maps the root object's properties to columns.
func (s *Schema) Columns() []Column {
	return fields(s.Root)
}

func fields(n *Node) []Column {
	out := make([]Column, 0, len(n.Props))
	for _, p := range n.Props {
		out = append(out, column(p.Name, p.Node))
	}
	return out
}

func column(name string, n *Node) Column {
	c := Column{Name: name}
	switch n.Kind {
	case String:
		c.Type = TypeString
		if n.DateTime {
			c.Type = TypeTimestampTz
		}
	case Number:
		c.Type = TypeDouble
	case Integer:
		c.Type = TypeLong
	case Boolean:
		c.Type = TypeBoolean
	case Object:
		c.Type = TypeStruct
		c.Fields = fields(n)
	case Array:
		c.Type = TypeList
		e := column("element", n.Items)
		c.Elem = &e
	}
	return c
}

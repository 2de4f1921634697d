package schema

import "fmt"

// Compatible checks that next may replace prev as a topic's value
// schema: values written under prev must still conform to next, and
// the table's typed columns must keep their types. Allowed: adding an
// optional property, making a required property optional, making a type
// nullable. Refused (an error wrapping ErrIncompatible that names the
// path and why): removing a property, changing a type (date-time string
// and string are different types: timestamp and string columns), making
// an optional property required, adding a required property, making a
// nullable type non-nullable. A nil prev accepts any next.
func Compatible(prev, next *Schema) error {
	if prev == nil {
		return nil
	}
	if next == nil {
		return fmt.Errorf("%w: the schema cannot be removed once set (the table's typed columns follow it); set a compatible one", ErrIncompatible)
	}
	return compatible(prev.Root, next.Root, "$")
}

func compatible(prev, next *Node, path string) error {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrIncompatible, path, fmt.Sprintf(format, args...))
	}
	if prev.Kind != next.Kind || prev.DateTime != next.DateTime {
		return refuse("type changed from %s to %s (values written before would not conform, and the column keeps its type)",
			prev.typeName(), next.typeName())
	}
	if prev.Nullable && !next.Nullable {
		return refuse("made non-nullable (values written before may be null)")
	}
	switch prev.Kind {
	case Array:
		return compatible(prev.Items, next.Items, path+"[]")
	case Object:
		for _, p := range prev.Props {
			np, ok := next.Prop(p.Name)
			ppath := Child(path, p.Name)
			if !ok {
				if p.Required {
					return fmt.Errorf("%w: %s: required property removed (the table keeps its column; keep the property, optional if need be)", ErrIncompatible, ppath)
				}
				return fmt.Errorf("%w: %s: property removed (the table keeps its column, and a property of that name could come back with another type; keep it)", ErrIncompatible, ppath)
			}
			if np.Required && !p.Required {
				return fmt.Errorf("%w: %s: optional property made required (values written before may lack it)", ErrIncompatible, ppath)
			}
			if err := compatible(p.Node, np.Node, ppath); err != nil {
				return err
			}
		}
		for _, np := range next.Props {
			if _, ok := prev.Prop(np.Name); !ok && np.Required {
				return fmt.Errorf("%w: %s: new property is required (values written before lack it; add it as optional)", ErrIncompatible, Child(path, np.Name))
			}
		}
	}
	return nil
}

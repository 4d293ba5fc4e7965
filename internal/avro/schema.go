// Package avro reads Avro schemas and decides whether data written with one
// schema can be read with another, as the Java Avro library (1.11) that a
// Pulsar 4.0 broker uses decides it: Schema.Parser's rules and messages,
// Schema.equals, Schema.toString(true), and the schema resolution of
// ResolvingGrammarGenerator that Avro's SchemaValidator applies.
//
// It is pure code over the standard library, written from the Avro
// specification and the behaviour of the Java library.
package avro

// Type is an Avro schema type.
type Type int

// The Avro types.
const (
	Null Type = iota
	Boolean
	Int
	Long
	Float
	Double
	Bytes
	String
	Record
	Enum
	Array
	Map
	Union
	Fixed
)

var typeNames = [...]string{"null", "boolean", "int", "long", "float", "double", "bytes", "string",
	"record", "enum", "array", "map", "union", "fixed"}

// String returns the type's name in a schema ("record", "int"…).
func (t Type) String() string { return typeNames[t] }

// primitives are the primitive types by name.
var primitives = map[string]Type{"null": Null, "boolean": Boolean, "int": Int, "long": Long,
	"float": Float, "double": Double, "bytes": Bytes, "string": String}

// Schema is a parsed Avro schema.
type Schema struct {
	Type Type
	// Name and Namespace name a record, enum or fixed; Namespace is empty
	// when there is none.
	Name, Namespace string
	// Doc is the documentation, if any.
	Doc    string
	hasDoc bool
	// Aliases are a named type's aliases, as full names.
	Aliases []string
	// IsError marks a record declared as "error".
	IsError bool
	// Fields are a record's fields.
	Fields []*Field
	// Symbols are an enum's symbols; EnumDefault its default symbol.
	Symbols        []string
	EnumDefault    string
	hasEnumDefault bool
	// Size is a fixed type's size.
	Size int
	// Items is an array's element type, Values a map's value type.
	Items, Values *Schema
	// Branches are a union's types.
	Branches []*Schema
	props    []prop
}

// Field is a record's field.
type Field struct {
	Name   string
	Type   *Schema
	Doc    string
	hasDoc bool
	// def is the default value, nil when there is none (a JSON null is a
	// default).
	def *node
	// Order is "ascending", "descending" or "ignore".
	Order   string
	Aliases []string
	props   []prop
}

// HasDefault reports whether the field has a default value.
func (f *Field) HasDefault() bool { return f.def != nil }

// prop is a property other than the ones the schema language reserves,
// such as logicalType.
type prop struct {
	key string
	val *node
}

// FullName returns a named type's full name, or the type's name for the
// others, as Java's Schema.getFullName does.
func (s *Schema) FullName() string {
	switch s.Type {
	case Record, Enum, Fixed:
		if s.Namespace == "" {
			return s.Name
		}
		return s.Namespace + "." + s.Name
	}
	return s.Type.String()
}

// named reports whether s is a record, enum or fixed.
func (s *Schema) named() bool { return s.Type == Record || s.Type == Enum || s.Type == Fixed }

// field returns the record field with this name, or nil.
func (s *Schema) field(name string) *Field {
	for _, f := range s.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// splitName splits a full name into its namespace and name.
func splitName(full string) (space, name string) {
	for i := len(full) - 1; i >= 0; i-- {
		if full[i] == '.' {
			return full[:i], full[i+1:]
		}
	}
	return "", full
}

// qualify returns the full name of name in the namespace space.
func qualify(name, space string) string {
	if space == "" || containsDot(name) {
		return name
	}
	return space + "." + name
}

func containsDot(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return true
		}
	}
	return false
}

package avro

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ParseError is a schema that does not parse, with the message Java Avro's
// exception carries. Class is the Java exception's class: a
// SchemaParseException for most, an AvroRuntimeException for unions Avro
// refuses.
type ParseError struct {
	Class string
	Msg   string
}

func (e *ParseError) Error() string { return e.Msg }

// JavaString returns the error as Java's Throwable.toString renders it.
func (e *ParseError) JavaString() string { return e.Class + ": " + e.Msg }

func parseError(format string, args ...any) error {
	return &ParseError{Class: "org.apache.avro.SchemaParseException", Msg: fmt.Sprintf(format, args...)}
}

func runtimeError(format string, args ...any) error {
	return &ParseError{Class: "org.apache.avro.AvroRuntimeException", Msg: fmt.Sprintf(format, args...)}
}

// Parse reads a schema as Java Avro's Schema.Parser does with default
// values left unchecked (Pulsar's setting): names are validated, named
// types are registered and referred to by name, and unknown keys become
// properties.
func Parse(text string) (*Schema, error) {
	n, err := decodeJSON(text)
	if err != nil {
		return nil, &ParseError{Class: "org.apache.avro.SchemaParseException", Msg: err.Error()}
	}
	p := &parser{names: map[string]*Schema{}}
	return p.parse(n)
}

// parser holds the named types defined so far and the namespace in force.
type parser struct {
	names map[string]*Schema
	space string
}

// lookup finds a type by name: a primitive, a named type in the current
// namespace, or one without namespace.
func (p *parser) lookup(name string) (*Schema, error) {
	if t, ok := primitives[name]; ok {
		return &Schema{Type: t}, nil
	}
	if _, short := splitName(name); short != "" {
		if err := validateName(short); err != nil {
			return nil, err
		}
	}
	if s := p.names[qualify(name, p.space)]; s != nil {
		return s, nil
	}
	return p.names[name], nil
}

func (p *parser) parse(n *node) (*Schema, error) {
	switch n.kind {
	case jsonString:
		s, err := p.lookup(n.text)
		if err != nil {
			return nil, err
		}
		if s == nil {
			return nil, parseError("Undefined name: %s", n)
		}
		return s, nil
	case jsonObject:
		return p.parseObject(n)
	case jsonArray:
		return p.parseUnion(n)
	}
	return nil, parseError("Schema not yet supported: %s", n)
}

func (p *parser) parseUnion(n *node) (*Schema, error) {
	u := &Schema{Type: Union}
	for _, it := range n.items {
		b, err := p.parse(it)
		if err != nil {
			return nil, err
		}
		u.Branches = append(u.Branches, b)
	}
	seen := map[string]bool{}
	for _, b := range u.Branches {
		if b.Type == Union {
			return nil, runtimeError("Nested union: %s", u.String())
		}
		if seen[b.FullName()] {
			return nil, runtimeError("Duplicate in union:%s", b.FullName())
		}
		seen[b.FullName()] = true
	}
	return u, nil
}

// Keys the schema language reserves, which are not properties.
var (
	schemaReserved = map[string]bool{"doc": true, "fields": true, "items": true, "name": true, "namespace": true,
		"size": true, "symbols": true, "values": true, "type": true, "aliases": true}
	fieldReserved = map[string]bool{"default": true, "doc": true, "name": true, "order": true, "type": true, "aliases": true}
)

func (p *parser) parseObject(n *node) (*Schema, error) {
	typ, ok := n.get("type").textValue()
	if !ok {
		return nil, parseError("No type: %s", n)
	}
	saved := p.space
	defer func() { p.space = saved }()
	s := &Schema{}
	isNamed := typ == "record" || typ == "error" || typ == "enum" || typ == "fixed"
	if isNamed {
		space, ok := n.get("namespace").textValue()
		if !ok {
			space = p.space
		}
		s.Doc, s.hasDoc = n.get("doc").textValue()
		name, ok := n.get("name").textValue()
		if !ok {
			return nil, parseError("No name in schema: %s", n)
		}
		if strings.Contains(name, ".") {
			space, name = splitName(name)
		}
		if err := validateName(name); err != nil {
			return nil, err
		}
		s.Name, s.Namespace = name, space
		p.space = space
	}
	var err error
	prim, isPrimitive := primitives[typ]
	switch {
	case isPrimitive:
		s.Type = prim
	case typ == "record" || typ == "error":
		s.Type, s.IsError = Record, typ == "error"
		if err = p.define(s); err == nil {
			err = p.parseFields(s, n)
		}
	case typ == "enum":
		err = p.parseEnum(s, n)
	case typ == "array":
		s.Type = Array
		items := n.get("items")
		if items == nil {
			return nil, parseError("Array has no items type: %s", n)
		}
		s.Items, err = p.parse(items)
	case typ == "map":
		s.Type = Map
		values := n.get("values")
		if values == nil {
			return nil, parseError("Map has no values type: %s", n)
		}
		s.Values, err = p.parse(values)
	case typ == "fixed":
		s.Type = Fixed
		size := n.get("size")
		if size == nil || !size.isIntegral() || !fitsInt32(size.text) {
			return nil, parseError("Invalid or no size: %s", n)
		}
		fmt.Sscan(size.text, &s.Size)
		err = p.define(s)
	default:
		// A named type may be given as {"type": "name"}.
		if named := p.names[qualify(typ, p.space)]; named != nil {
			return named, nil
		}
		return nil, parseError("Type not supported: %s", typ)
	}
	if err != nil {
		return nil, err
	}
	for i, k := range n.keys {
		if !schemaReserved[k] && !(s.Type == Enum && k == "default") {
			s.props = setProp(s.props, k, n.vals[i])
		}
	}
	if s.named() {
		aliases, err := parseAliases(n)
		if err != nil {
			return nil, err
		}
		for _, a := range aliases {
			s.Aliases = appendUnique(s.Aliases, qualify(a, s.Namespace))
		}
	}
	return s, nil
}

// define registers a named type.
func (p *parser) define(s *Schema) error {
	full := s.FullName()
	if p.names[full] != nil {
		return parseError("Can't redefine: %s", full)
	}
	p.names[full] = s
	return nil
}

func (p *parser) parseFields(s *Schema, n *node) error {
	fields := n.get("fields")
	if fields == nil || fields.kind != jsonArray {
		return parseError("Record has no fields: %s", n)
	}
	for _, fn := range fields.items {
		f, err := p.parseField(fn)
		if err != nil {
			return err
		}
		if s.field(f.Name) != nil {
			return parseError("Duplicate field %s in record %s", f.Name, s.FullName())
		}
		s.Fields = append(s.Fields, f)
	}
	return nil
}

func (p *parser) parseField(fn *node) (*Field, error) {
	name, ok := fn.get("name").textValue()
	if !ok {
		return nil, parseError("No field name: %s", fn)
	}
	f := &Field{Name: name, Order: "ascending"}
	f.Doc, f.hasDoc = fn.get("doc").textValue()
	typ := fn.get("type")
	if typ == nil {
		return nil, parseError("No field type: %s", fn)
	}
	if t, ok := typ.textValue(); ok {
		s, err := p.lookup(t)
		if err != nil {
			return nil, err
		}
		if s == nil {
			return nil, parseError("%s is not a defined name. The type of the \"%s\" field must be a "+
				"defined name or a {\"type\": ...} expression.", typ, name)
		}
	}
	var err error
	if f.Type, err = p.parse(typ); err != nil {
		return nil, err
	}
	if err := validateName(name); err != nil {
		return nil, err
	}
	if o := fn.get("order"); o != nil {
		switch t, _ := o.textValue(); strings.ToLower(t) {
		case "ascending", "descending", "ignore":
			f.Order = strings.ToLower(t)
		default:
			return nil, &ParseError{Class: "java.lang.IllegalArgumentException",
				Msg: "No enum constant org.apache.avro.Schema.Field.Order." + strings.ToUpper(t)}
		}
	}
	f.def = fn.get("default")
	if d := f.def; d != nil && d.kind == jsonString && (f.Type.Type == Float || f.Type.Type == Double) {
		// Avro reads a float's default given as a string as the number.
		f.def = &node{kind: jsonNumber, text: d.text}
	}
	for i, k := range fn.keys {
		if !fieldReserved[k] {
			f.props = setProp(f.props, k, fn.vals[i])
		}
	}
	if f.Aliases, err = parseAliases(fn); err != nil {
		return nil, err
	}
	return f, nil
}

func (p *parser) parseEnum(s *Schema, n *node) error {
	s.Type = Enum
	symbols := n.get("symbols")
	if symbols == nil || symbols.kind != jsonArray {
		return parseError("Enum has no symbols: %s", n)
	}
	seen := map[string]bool{}
	for _, it := range symbols.items {
		sym, _ := it.textValue()
		if err := validateName(sym); err != nil {
			return err
		}
		if seen[sym] {
			return parseError("Duplicate enum symbol: %s", sym)
		}
		seen[sym] = true
		s.Symbols = append(s.Symbols, sym)
	}
	if d := n.get("default"); d != nil {
		s.EnumDefault, s.hasEnumDefault = d.textValue()
		if s.hasEnumDefault && !seen[s.EnumDefault] {
			return parseError("The Enum Default: %s is not in the enum symbol set: [%s]",
				s.EnumDefault, strings.Join(s.Symbols, ", "))
		}
	}
	return p.define(s)
}

func parseAliases(n *node) ([]string, error) {
	a := n.get("aliases")
	if a == nil {
		return nil, nil
	}
	if a.kind != jsonArray {
		return nil, parseError("aliases not an array: %s", n)
	}
	var out []string
	for _, it := range a.items {
		t, ok := it.textValue()
		if !ok {
			return nil, parseError("alias not a string: %s", it)
		}
		out = appendUnique(out, t)
	}
	return out, nil
}

func appendUnique(list []string, s string) []string {
	for _, have := range list {
		if have == s {
			return list
		}
	}
	return append(list, s)
}

// setProp adds or replaces a property, keeping the first position.
func setProp(props []prop, key string, val *node) []prop {
	for i := range props {
		if props[i].key == key {
			props[i].val = val
			return props
		}
	}
	return append(props, prop{key, val})
}

// validateName checks a name as Avro's default validator does: a letter
// or underscore, then letters, digits or underscores.
func validateName(name string) error {
	if name == "" {
		return nil
	}
	first, size := utf8.DecodeRuneInString(name)
	if !unicode.IsLetter(first) && first != '_' {
		return parseError("Illegal initial character: %s", name)
	}
	for _, r := range name[size:] {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' {
			return parseError("Illegal character in: %s", name)
		}
	}
	return nil
}

func fitsInt32(s string) bool {
	var v int64
	_, err := fmt.Sscan(s, &v)
	return err == nil && v >= -1<<31 && v < 1<<31
}

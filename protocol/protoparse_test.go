package protocol_test

// A small reader of proto2 schema text, enough for PulsarApi.proto: messages
// (nested ones included), enums (top-level and nested), fields with labels,
// scalar and named types, and the default option. It builds the same model
// that schemaFromDescriptor builds from compiled descriptors, so the two can
// be compared field by field without protoc.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// protoSchema is a schema reduced to what the wire format depends on.
// Messages and enums are keyed by their name qualified by parent messages
// only ("CommandSubscribe.SubType"), without the package.
type protoSchema struct {
	Messages map[string]*protoMessage
	Enums    map[string]*protoEnum
}

type protoMessage struct {
	Name   string
	Fields []*protoField
}

func (m *protoMessage) field(name string) *protoField {
	for _, f := range m.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

func (m *protoMessage) fieldByNumber(n int32) *protoField {
	for _, f := range m.Fields {
		if f.Number == n {
			return f
		}
	}
	return nil
}

type protoField struct {
	Name   string
	Number int32
	Label  string // required, optional or repeated
	// Type is a scalar kind ("uint64"), or "enum X" / "message X" with the
	// simple name X of the named type.
	Type string
	// Default is the value a reader sees when the field is absent, written
	// canonically: enum value name, "true"/"false", decimal number, or the
	// string itself. Empty for message and repeated fields.
	Default string

	typeRef string // the type as written, resolved after parsing
	rawDef  *token // the [default = ...] literal, if any
}

type protoEnum struct {
	Name   string
	Values []protoEnumValue
}

type protoEnumValue struct {
	Name   string
	Number int32
}

func (e *protoEnum) value(name string) (int32, bool) {
	for _, v := range e.Values {
		if v.Name == name {
			return v.Number, true
		}
	}
	return 0, false
}

var scalarKinds = map[string]bool{
	"double": true, "float": true, "int32": true, "int64": true, "uint32": true, "uint64": true,
	"sint32": true, "sint64": true, "fixed32": true, "fixed64": true, "sfixed32": true,
	"sfixed64": true, "bool": true, "string": true, "bytes": true,
}

type token struct {
	text string
	line int
	str  bool // a quoted string literal; text holds its unquoted value
}

// tokenize splits proto text into identifiers, numbers, string literals and
// punctuation, dropping whitespace and comments.
func tokenize(src string) ([]token, error) {
	var toks []token
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("line %d: unterminated comment", line)
			}
			line += strings.Count(src[i:i+2+end], "\n")
			i += end + 4
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				if j < len(src) && src[j] == '\n' {
					return nil, fmt.Errorf("line %d: newline in string", line)
				}
				j++
			}
			if j >= len(src) {
				return nil, fmt.Errorf("line %d: unterminated string", line)
			}
			lit := src[i : j+1]
			if c == '\'' {
				lit = `"` + strings.ReplaceAll(src[i+1:j], `"`, `\"`) + `"`
			}
			v, err := strconv.Unquote(lit)
			if err != nil {
				return nil, fmt.Errorf("line %d: string %s: %v", line, src[i:j+1], err)
			}
			toks = append(toks, token{text: v, line: line, str: true})
			i = j + 1
		case isWordByte(c):
			j := i
			for j < len(src) && isWordByte(src[j]) {
				j++
			}
			toks = append(toks, token{text: src[i:j], line: line})
			i = j
		case strings.IndexByte("{}[]()<>;=,", c) >= 0:
			toks = append(toks, token{text: string(c), line: line})
			i++
		default:
			return nil, fmt.Errorf("line %d: unexpected character %q", line, c)
		}
	}
	return toks, nil
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '.' || c == '-' || c == '+'
}

type protoParser struct {
	toks []token
	pos  int
	out  *protoSchema
	// fields in declaration order with the scope they were declared in, for
	// type resolution once every name is known.
	pending []pendingField
}

type pendingField struct {
	scope string
	f     *protoField
}

// parseProto2 parses proto2 schema text into a protoSchema.
func parseProto2(src string) (*protoSchema, error) {
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	p := &protoParser{toks: toks, out: &protoSchema{Messages: map[string]*protoMessage{}, Enums: map[string]*protoEnum{}}}
	if err := p.file(); err != nil {
		return nil, err
	}
	if err := p.resolve(); err != nil {
		return nil, err
	}
	return p.out, nil
}

func (p *protoParser) peek() (token, bool) {
	if p.pos >= len(p.toks) {
		return token{}, false
	}
	return p.toks[p.pos], true
}

func (p *protoParser) next() (token, error) {
	if p.pos >= len(p.toks) {
		return token{}, fmt.Errorf("unexpected end of file")
	}
	t := p.toks[p.pos]
	p.pos++
	return t, nil
}

func (p *protoParser) expect(text string) error {
	t, err := p.next()
	if err != nil {
		return err
	}
	if t.str || t.text != text {
		return fmt.Errorf("line %d: want %q, got %q", t.line, text, t.text)
	}
	return nil
}

func (p *protoParser) ident() (token, error) {
	t, err := p.next()
	if err != nil {
		return t, err
	}
	if t.str || !isWordByte(t.text[0]) {
		return t, fmt.Errorf("line %d: want a name, got %q", t.line, t.text)
	}
	return t, nil
}

// skipStatement skips to the end of the current statement, its ';'
// included, stepping over bracketed option values.
func (p *protoParser) skipStatement() error {
	depth := 0
	for {
		t, err := p.next()
		if err != nil {
			return err
		}
		if t.str {
			continue
		}
		switch t.text {
		case "{", "[", "(":
			depth++
		case "}", "]", ")":
			depth--
		case ";":
			if depth == 0 {
				return nil
			}
		}
	}
}

func (p *protoParser) file() error {
	for {
		t, ok := p.peek()
		if !ok {
			return nil
		}
		p.pos++
		switch {
		case t.str:
			return fmt.Errorf("line %d: unexpected string %q", t.line, t.text)
		case t.text == "syntax":
			if err := p.expect("="); err != nil {
				return err
			}
			v, err := p.next()
			if err != nil {
				return err
			}
			if v.text != "proto2" {
				return fmt.Errorf("line %d: syntax %q, this reader handles proto2 only", v.line, v.text)
			}
			if err := p.expect(";"); err != nil {
				return err
			}
		case t.text == "package", t.text == "import", t.text == "option":
			if err := p.skipStatement(); err != nil {
				return err
			}
		case t.text == "message":
			if err := p.message(""); err != nil {
				return err
			}
		case t.text == "enum":
			if err := p.enum(""); err != nil {
				return err
			}
		case t.text == ";":
		default:
			return fmt.Errorf("line %d: unsupported top-level %q", t.line, t.text)
		}
	}
}

func qualify(scope, name string) string {
	if scope == "" {
		return name
	}
	return scope + "." + name
}

func (p *protoParser) message(scope string) error {
	name, err := p.ident()
	if err != nil {
		return err
	}
	full := qualify(scope, name.text)
	if _, dup := p.out.Messages[full]; dup {
		return fmt.Errorf("line %d: message %s declared twice", name.line, full)
	}
	m := &protoMessage{Name: full}
	p.out.Messages[full] = m
	if err := p.expect("{"); err != nil {
		return err
	}
	for {
		t, err := p.next()
		if err != nil {
			return err
		}
		if t.str {
			return fmt.Errorf("line %d: unexpected string %q", t.line, t.text)
		}
		switch t.text {
		case "}":
			return nil
		case ";":
		case "message":
			if err := p.message(full); err != nil {
				return err
			}
		case "enum":
			if err := p.enum(full); err != nil {
				return err
			}
		case "option", "reserved", "extensions":
			if err := p.skipStatement(); err != nil {
				return err
			}
		case "required", "optional", "repeated":
			f, err := p.field(t.text)
			if err != nil {
				return err
			}
			if m.field(f.Name) != nil {
				return fmt.Errorf("line %d: field %s.%s declared twice", t.line, full, f.Name)
			}
			m.Fields = append(m.Fields, f)
			p.pending = append(p.pending, pendingField{scope: full, f: f})
		default:
			return fmt.Errorf("line %d: unsupported %q in message %s", t.line, t.text, full)
		}
	}
}

func (p *protoParser) field(label string) (*protoField, error) {
	typ, err := p.ident()
	if err != nil {
		return nil, err
	}
	if typ.text == "group" || typ.text == "map" {
		return nil, fmt.Errorf("line %d: %s fields are not supported", typ.line, typ.text)
	}
	name, err := p.ident()
	if err != nil {
		return nil, err
	}
	if err := p.expect("="); err != nil {
		return nil, err
	}
	num, err := p.next()
	if err != nil {
		return nil, err
	}
	n, err := strconv.ParseInt(num.text, 0, 32)
	if err != nil || num.str {
		return nil, fmt.Errorf("line %d: field number %q", num.line, num.text)
	}
	f := &protoField{Name: name.text, Number: int32(n), Label: label, typeRef: typ.text}
	t, err := p.next()
	if err != nil {
		return nil, err
	}
	if t.text == "[" && !t.str {
		if err := p.fieldOptions(f); err != nil {
			return nil, err
		}
		t, err = p.next()
		if err != nil {
			return nil, err
		}
	}
	if t.str || t.text != ";" {
		return nil, fmt.Errorf("line %d: want ';' after field %s, got %q", t.line, f.Name, t.text)
	}
	return f, nil
}

// fieldOptions reads "name = value, ..." up to the closing ']', keeping the
// default and ignoring the rest (deprecated, packed, ...).
func (p *protoParser) fieldOptions(f *protoField) error {
	for {
		var name []string
		for {
			t, err := p.next()
			if err != nil {
				return err
			}
			if t.text == "=" && !t.str {
				break
			}
			name = append(name, t.text)
		}
		v, err := p.next()
		if err != nil {
			return err
		}
		if strings.Join(name, "") == "default" {
			f.rawDef = &v
		}
		t, err := p.next()
		if err != nil {
			return err
		}
		switch {
		case t.str:
			return fmt.Errorf("line %d: unexpected string in options", t.line)
		case t.text == "]":
			return nil
		case t.text != ",":
			return fmt.Errorf("line %d: want ',' or ']' in options, got %q", t.line, t.text)
		}
	}
}

func (p *protoParser) enum(scope string) error {
	name, err := p.ident()
	if err != nil {
		return err
	}
	full := qualify(scope, name.text)
	if _, dup := p.out.Enums[full]; dup {
		return fmt.Errorf("line %d: enum %s declared twice", name.line, full)
	}
	e := &protoEnum{Name: full}
	p.out.Enums[full] = e
	if err := p.expect("{"); err != nil {
		return err
	}
	for {
		t, err := p.next()
		if err != nil {
			return err
		}
		if t.str {
			return fmt.Errorf("line %d: unexpected string %q", t.line, t.text)
		}
		switch t.text {
		case "}":
			return nil
		case ";":
		case "option", "reserved":
			if err := p.skipStatement(); err != nil {
				return err
			}
		default:
			if err := p.expect("="); err != nil {
				return err
			}
			num, err := p.next()
			if err != nil {
				return err
			}
			n, err := strconv.ParseInt(num.text, 0, 32)
			if err != nil || num.str {
				return fmt.Errorf("line %d: enum value number %q", num.line, num.text)
			}
			e.Values = append(e.Values, protoEnumValue{Name: t.text, Number: int32(n)})
			if err := p.skipStatement(); err != nil { // options, then ';'
				return err
			}
		}
	}
}

// lookup resolves a type reference as protoc does: innermost scope first,
// then each enclosing one, then the top level.
func (p *protoParser) lookup(scope, ref string) (kind, full string, ok bool) {
	ref = strings.TrimPrefix(ref, ".")
	for {
		cand := qualify(scope, ref)
		if _, ok := p.out.Messages[cand]; ok {
			return "message", cand, true
		}
		if _, ok := p.out.Enums[cand]; ok {
			return "enum", cand, true
		}
		if scope == "" {
			break
		}
		if i := strings.LastIndexByte(scope, '.'); i >= 0 {
			scope = scope[:i]
		} else {
			scope = ""
		}
	}
	// A reference qualified by the package: drop one leading component at a
	// time until a name matches.
	if i := strings.IndexByte(ref, '.'); i >= 0 {
		return p.lookup("", ref[i+1:])
	}
	return "", "", false
}

func (p *protoParser) resolve() error {
	for _, pf := range p.pending {
		f := pf.f
		if scalarKinds[f.typeRef] {
			f.Type = f.typeRef
		} else {
			kind, full, ok := p.lookup(pf.scope, f.typeRef)
			if !ok {
				return fmt.Errorf("field %s.%s: unknown type %s", pf.scope, f.Name, f.typeRef)
			}
			f.Type = kind + " " + simpleName(full)
			if kind == "enum" {
				f.typeRef = full
			}
		}
		def, err := p.effectiveDefault(f)
		if err != nil {
			return fmt.Errorf("field %s.%s: %v", pf.scope, f.Name, err)
		}
		f.Default = def
	}
	return nil
}

func (p *protoParser) effectiveDefault(f *protoField) (string, error) {
	if f.Label == "repeated" || strings.HasPrefix(f.Type, "message ") {
		if f.rawDef != nil {
			return "", fmt.Errorf("default on a %s %s field", f.Label, f.Type)
		}
		return "", nil
	}
	if strings.HasPrefix(f.Type, "enum ") {
		e := p.out.Enums[f.typeRef]
		if f.rawDef == nil {
			if len(e.Values) == 0 {
				return "", fmt.Errorf("enum %s has no values", e.Name)
			}
			return e.Values[0].Name, nil
		}
		if _, ok := e.value(f.rawDef.text); !ok {
			return "", fmt.Errorf("default %s is not a value of %s", f.rawDef.text, e.Name)
		}
		return f.rawDef.text, nil
	}
	if f.rawDef == nil {
		switch f.Type {
		case "bool":
			return "false", nil
		case "string", "bytes":
			return "", nil
		default:
			return "0", nil
		}
	}
	return canonicalScalar(f.Type, f.rawDef.text)
}

// canonicalScalar writes a scalar default literal in one canonical form.
func canonicalScalar(kind, lit string) (string, error) {
	switch kind {
	case "string", "bytes":
		return lit, nil
	case "bool":
		b, err := strconv.ParseBool(lit)
		return strconv.FormatBool(b), err
	case "float", "double":
		v, err := strconv.ParseFloat(lit, 64)
		return strconv.FormatFloat(v, 'g', -1, 64), err
	case "uint32", "uint64", "fixed32", "fixed64":
		v, err := strconv.ParseUint(lit, 0, 64)
		return strconv.FormatUint(v, 10), err
	default:
		v, err := strconv.ParseInt(lit, 0, 64)
		return strconv.FormatInt(v, 10), err
	}
}

func simpleName(full string) string {
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		return full[i+1:]
	}
	return full
}

// schemaFromDescriptor builds the model of a compiled schema file.
func schemaFromDescriptor(fd protoreflect.FileDescriptor) *protoSchema {
	s := &protoSchema{Messages: map[string]*protoMessage{}, Enums: map[string]*protoEnum{}}
	pkg := string(fd.Package())
	local := func(full protoreflect.FullName) string {
		return strings.TrimPrefix(string(full), pkg+".")
	}
	addEnums := func(es protoreflect.EnumDescriptors) {
		for i := 0; i < es.Len(); i++ {
			ed := es.Get(i)
			e := &protoEnum{Name: local(ed.FullName())}
			for j := 0; j < ed.Values().Len(); j++ {
				v := ed.Values().Get(j)
				e.Values = append(e.Values, protoEnumValue{Name: string(v.Name()), Number: int32(v.Number())})
			}
			s.Enums[e.Name] = e
		}
	}
	var addMessages func(ms protoreflect.MessageDescriptors)
	addMessages = func(ms protoreflect.MessageDescriptors) {
		for i := 0; i < ms.Len(); i++ {
			md := ms.Get(i)
			m := &protoMessage{Name: local(md.FullName())}
			for j := 0; j < md.Fields().Len(); j++ {
				m.Fields = append(m.Fields, fieldFromDescriptor(md.Fields().Get(j)))
			}
			s.Messages[m.Name] = m
			addEnums(md.Enums())
			addMessages(md.Messages())
		}
	}
	addEnums(fd.Enums())
	addMessages(fd.Messages())
	return s
}

func fieldFromDescriptor(fd protoreflect.FieldDescriptor) *protoField {
	f := &protoField{Name: string(fd.Name()), Number: int32(fd.Number())}
	switch fd.Cardinality() {
	case protoreflect.Required:
		f.Label = "required"
	case protoreflect.Repeated:
		f.Label = "repeated"
	default:
		f.Label = "optional"
	}
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		f.Type = "message " + string(fd.Message().Name())
	case protoreflect.EnumKind:
		f.Type = "enum " + string(fd.Enum().Name())
	default:
		f.Type = fd.Kind().String()
	}
	if f.Label == "repeated" || fd.Message() != nil {
		return f
	}
	if fd.Enum() != nil {
		// Without an explicit default, proto2 readers see the first value.
		if ev := fd.DefaultEnumValue(); ev != nil {
			f.Default = string(ev.Name())
		} else {
			f.Default = string(fd.Enum().Values().Get(0).Name())
		}
		return f
	}
	v := fd.Default()
	switch fd.Kind() {
	case protoreflect.BoolKind:
		f.Default = strconv.FormatBool(v.Bool())
	case protoreflect.StringKind:
		f.Default = v.String()
	case protoreflect.BytesKind:
		f.Default = string(v.Bytes())
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		f.Default = strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		f.Default = strconv.FormatUint(v.Uint(), 10)
	default:
		f.Default = strconv.FormatInt(v.Int(), 10)
	}
	return f
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

package avro

import "strconv"

// Pretty renders the schema as Java Avro's Schema.toString(true) does: the
// text Pulsar puts in its compatibility errors.
func (s *Schema) Pretty() string { return s.render(true) }

// String renders the schema as Java Avro's Schema.toString() does.
func (s *Schema) String() string { return s.render(false) }

func (s *Schema) render(pretty bool) string {
	p := &printer{w: &jsonWriter{pretty: pretty}, names: map[string]*Schema{}}
	p.schema(s)
	return p.w.buf.String()
}

// printer writes a schema; a named type is written in full the first time
// and by name after that, relative to the namespace in force.
type printer struct {
	w     *jsonWriter
	names map[string]*Schema
	space string
}

func (p *printer) schema(s *Schema) {
	w := p.w
	switch s.Type {
	case Record, Enum, Fixed:
		if p.names[s.FullName()] == s {
			w.quote(p.qualified(s.Name, s.Namespace))
			return
		}
		p.names[s.FullName()] = s
		p.named(s)
	case Array:
		w.startObject()
		w.stringField("type", "array")
		w.field("items")
		p.schema(s.Items)
		p.props(s.props)
		w.endObject()
	case Map:
		w.startObject()
		w.stringField("type", "map")
		w.field("values")
		p.schema(s.Values)
		p.props(s.props)
		w.endObject()
	case Union:
		w.startArray()
		for _, b := range s.Branches {
			w.element()
			p.schema(b)
		}
		w.endArray()
	default:
		if len(s.props) == 0 {
			w.quote(s.Type.String())
			return
		}
		w.startObject()
		w.stringField("type", s.Type.String())
		p.props(s.props)
		w.endObject()
	}
}

// named writes a record, enum or fixed in full.
func (p *printer) named(s *Schema) {
	w := p.w
	saved := p.space
	w.startObject()
	switch {
	case s.Type == Record && s.IsError:
		w.stringField("type", "error")
	default:
		w.stringField("type", s.Type.String())
	}
	w.stringField("name", s.Name)
	if s.Namespace != "" && s.Namespace != p.space {
		w.stringField("namespace", s.Namespace)
	} else if s.Namespace == "" && p.space != "" {
		w.stringField("namespace", "")
	}
	if s.Type == Record {
		p.space = s.Namespace
	}
	if s.hasDoc {
		w.stringField("doc", s.Doc)
	}
	switch s.Type {
	case Record:
		w.field("fields")
		w.startArray()
		for _, f := range s.Fields {
			w.element()
			p.field(f)
		}
		w.endArray()
		p.props(s.props)
	case Enum:
		w.field("symbols")
		w.startArray()
		for _, sym := range s.Symbols {
			w.element()
			w.quote(sym)
		}
		w.endArray()
		if s.hasEnumDefault {
			w.stringField("default", s.EnumDefault)
		}
		p.props(s.props)
	case Fixed:
		w.field("size")
		w.buf.WriteString(strconv.Itoa(s.Size))
		p.props(s.props)
	}
	if len(s.Aliases) > 0 {
		w.field("aliases")
		w.startArray()
		for _, a := range s.Aliases {
			w.element()
			space, name := splitName(a)
			w.quote(p.qualifiedIn(name, space, s.Namespace))
		}
		w.endArray()
	}
	w.endObject()
	p.space = saved
}

func (p *printer) field(f *Field) {
	w := p.w
	w.startObject()
	w.stringField("name", f.Name)
	w.field("type")
	p.schema(f.Type)
	if f.hasDoc {
		w.stringField("doc", f.Doc)
	}
	if f.def != nil {
		w.field("default")
		w.node(f.def)
	}
	if f.Order != "ascending" {
		w.stringField("order", f.Order)
	}
	if len(f.Aliases) > 0 {
		w.field("aliases")
		w.startArray()
		for _, a := range f.Aliases {
			w.element()
			w.quote(a)
		}
		w.endArray()
	}
	p.props(f.props)
	w.endObject()
}

func (p *printer) props(props []prop) {
	for _, pr := range props {
		p.w.field(pr.key)
		p.w.node(pr.val)
	}
}

// qualified names a type relative to the namespace in force.
func (p *printer) qualified(name, space string) string { return p.qualifiedIn(name, space, p.space) }

func (p *printer) qualifiedIn(name, space, in string) string {
	if space == "" || space == in {
		return name
	}
	return space + "." + name
}

package avro

// applyAliases rewrites the writer's schema with the reader's aliases, as
// Java Avro's Schema.applyAliases: a writer's named type whose full name is
// an alias of a reader's type takes that type's name, and a writer's field
// whose name is an alias of a field of the reader's record takes that
// field's name.
func applyAliases(writer, reader *Schema) *Schema {
	if writer.Equal(reader) {
		return writer
	}
	a := &aliasing{types: map[string]string{}, fields: map[string]map[string]string{}}
	a.collect(reader, map[*Schema]bool{})
	if len(a.types) == 0 && len(a.fields) == 0 {
		return writer
	}
	return a.apply(writer, map[*Schema]*Schema{})
}

// aliasing holds a reader's aliases: type aliases to full names, and per
// record (by full name) field aliases to field names.
type aliasing struct {
	types  map[string]string
	fields map[string]map[string]string
}

func (a *aliasing) collect(s *Schema, seen map[*Schema]bool) {
	if s.named() {
		for _, al := range s.Aliases {
			a.types[al] = s.FullName()
		}
	}
	switch s.Type {
	case Record:
		if seen[s] {
			return
		}
		seen[s] = true
		for _, f := range s.Fields {
			for _, al := range f.Aliases {
				if a.fields[s.FullName()] == nil {
					a.fields[s.FullName()] = map[string]string{}
				}
				a.fields[s.FullName()][al] = f.Name
			}
			a.collect(f.Type, seen)
		}
		if fa := a.fields[s.FullName()]; fa != nil {
			for _, al := range s.Aliases {
				a.fields[al] = fa
			}
		}
	case Array:
		a.collect(s.Items, seen)
	case Map:
		a.collect(s.Values, seen)
	case Union:
		for _, b := range s.Branches {
			a.collect(b, seen)
		}
	}
}

// rename returns s's full name after the aliases.
func (a *aliasing) rename(s *Schema) (space, name string) {
	if to, ok := a.types[s.FullName()]; ok {
		return splitName(to)
	}
	return s.Namespace, s.Name
}

func (a *aliasing) apply(s *Schema, seen map[*Schema]*Schema) *Schema {
	switch s.Type {
	case Record:
		if out := seen[s]; out != nil {
			return out
		}
		out := *s
		out.Namespace, out.Name = a.rename(s)
		out.Fields = nil
		seen[s] = &out
		fa := a.fields[out.FullName()]
		for _, f := range s.Fields {
			nf := *f
			nf.Type = a.apply(f.Type, seen)
			if to, ok := fa[f.Name]; ok {
				nf.Name = to
			}
			out.Fields = append(out.Fields, &nf)
		}
		return &out
	case Enum, Fixed:
		if _, ok := a.types[s.FullName()]; ok {
			out := *s
			out.Namespace, out.Name = a.rename(s)
			return &out
		}
	case Array:
		out := *s
		out.Items = a.apply(s.Items, seen)
		return &out
	case Map:
		out := *s
		out.Values = a.apply(s.Values, seen)
		return &out
	case Union:
		out := *s
		out.Branches = nil
		for _, b := range s.Branches {
			out.Branches = append(out.Branches, a.apply(b, seen))
		}
		return &out
	}
	return s
}

package avro

// Equal reports whether two schemas are equal as Java Avro's Schema.equals
// decides: same types, full names, fields (name, type, default, order),
// symbols, sizes and properties. Documentation and aliases do not count.
func (s *Schema) Equal(o *Schema) bool {
	return schemasEqual(s, o, map[[2]*Schema]bool{})
}

func schemasEqual(a, b *Schema, seen map[[2]*Schema]bool) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil || a.Type != b.Type || !propsEqual(a.props, b.props) {
		return false
	}
	switch a.Type {
	case Record:
		if a.FullName() != b.FullName() || len(a.Fields) != len(b.Fields) {
			return false
		}
		pair := [2]*Schema{a, b}
		if seen[pair] {
			return true // a recursive reference being compared already
		}
		seen[pair] = true
		for i, f := range a.Fields {
			g := b.Fields[i]
			if f.Name != g.Name || f.Order != g.Order || !f.def.equal(g.def) || !propsEqual(f.props, g.props) ||
				!schemasEqual(f.Type, g.Type, seen) {
				return false
			}
		}
		return true
	case Enum:
		if a.FullName() != b.FullName() || len(a.Symbols) != len(b.Symbols) ||
			a.hasEnumDefault != b.hasEnumDefault || a.EnumDefault != b.EnumDefault {
			return false
		}
		for i := range a.Symbols {
			if a.Symbols[i] != b.Symbols[i] {
				return false
			}
		}
		return true
	case Fixed:
		return a.FullName() == b.FullName() && a.Size == b.Size
	case Array:
		return schemasEqual(a.Items, b.Items, seen)
	case Map:
		return schemasEqual(a.Values, b.Values, seen)
	case Union:
		if len(a.Branches) != len(b.Branches) {
			return false
		}
		for i := range a.Branches {
			if !schemasEqual(a.Branches[i], b.Branches[i], seen) {
				return false
			}
		}
		return true
	}
	return true
}

// propsEqual compares properties as maps, in any order.
func propsEqual(a, b []prop) bool {
	if len(a) != len(b) {
		return false
	}
	for _, pa := range a {
		found := false
		for _, pb := range b {
			if pa.key == pb.key {
				found = pa.val.equal(pb.val)
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

package avro

import (
	"fmt"
	"slices"
)

// DefaultError is a reader's default value that does not fit its field's
// type, met while preparing to read: Java Avro throws an AvroTypeException
// then instead of answering.
type DefaultError struct{ Msg string }

func (e *DefaultError) Error() string { return e.Msg }

// JavaString returns the error as Java's Throwable.toString renders it.
func (e *DefaultError) JavaString() string { return "org.apache.avro.AvroTypeException: " + e.Msg }

// CanRead reports whether data written with writer can be read with
// reader, as Avro's SchemaValidator decides it (ValidateMutualRead.canRead):
// the reader's aliases are applied to the writer, the two are resolved as
// Avro's Resolver resolves them, and the resolution must hold no error. So,
// as in Java Avro and unlike the Avro specification's letter:
//   - a record's name may change; an enum's or fixed's short name may not;
//   - a reader field missing from the writer needs a default;
//   - a writer's enum symbol missing from the reader is no error (it fails
//     only when such a value is read);
//   - int, long, float and double promote, and string and bytes convert;
//   - a reader union takes the first branch that matches the writer.
//
// A default value that does not fit its type is a *DefaultError, as the
// exception Java Avro throws then.
func CanRead(writer, reader *Schema) (bool, error) {
	r := &resolver{seen: map[[2]*Schema]*action{}}
	a := r.resolve(applyAliases(writer, reader), reader)
	if err := checkDefaults(a, map[*action]bool{}); err != nil {
		return false, err
	}
	return !hasErrors(a, map[*action]bool{}), nil
}

type actionKind int

const (
	doNothing actionKind = iota
	errorAction
	promote
	container
	enumAdjust
	skip
	recordAdjust
	writerUnion
	readerUnion
)

// action is one step of reading writer's data with reader's schema, as
// Java Avro's Resolver.Action.
type action struct {
	kind     actionKind
	children []*action // element, fields, union branches
	defaults []*Field  // the reader's fields read from their defaults
}

type resolver struct {
	seen map[[2]*Schema]*action // record pairs being or already resolved
}

func (r *resolver) resolve(w, rd *Schema) *action {
	switch {
	case w.Type == Union:
		equiv := unionEquiv(w, rd, map[[2]*Schema]bool{})
		a := &action{kind: writerUnion}
		for i, b := range w.Branches {
			target := rd
			if equiv {
				target = rd.Branches[i]
			}
			a.children = append(a.children, r.resolve(b, target))
		}
		return a
	case w.Type == rd.Type:
		return r.resolveSameType(w, rd)
	case rd.Type == Union:
		i := r.firstMatchingBranch(w, rd)
		if i < 0 {
			return &action{kind: errorAction}
		}
		return &action{kind: readerUnion, children: []*action{r.resolve(w, rd.Branches[i])}}
	case promotable(w.Type, rd.Type):
		return &action{kind: promote}
	}
	return &action{kind: errorAction}
}

func (r *resolver) resolveSameType(w, rd *Schema) *action {
	switch w.Type {
	case Fixed:
		if w.Name != rd.Name || w.Size != rd.Size {
			return &action{kind: errorAction}
		}
	case Array:
		return &action{kind: container, children: []*action{r.resolve(w.Items, rd.Items)}}
	case Map:
		return &action{kind: container, children: []*action{r.resolve(w.Values, rd.Values)}}
	case Enum:
		if w.Name != rd.Name {
			return &action{kind: errorAction}
		}
		return &action{kind: enumAdjust}
	case Record:
		return r.resolveRecord(w, rd)
	}
	return &action{kind: doNothing}
}

// resolveRecord resolves two records; as in Java Avro, their names are not
// compared.
func (r *resolver) resolveRecord(w, rd *Schema) *action {
	pair := [2]*Schema{w, rd}
	if a := r.seen[pair]; a != nil {
		return a
	}
	a := &action{kind: recordAdjust}
	r.seen[pair] = a
	for _, wf := range w.Fields {
		if rf := rd.field(wf.Name); rf != nil {
			a.children = append(a.children, r.resolve(wf.Type, rf.Type))
		} else {
			a.children = append(a.children, &action{kind: skip})
		}
	}
	for _, rf := range rd.Fields {
		if w.field(rf.Name) != nil {
			continue
		}
		if !rf.HasDefault() {
			e := &action{kind: errorAction}
			r.seen[pair] = e
			return e
		}
		a.defaults = append(a.defaults, rf)
	}
	return a
}

// firstMatchingBranch is Java Avro's choice of a reader union's branch for
// a writer's type: the same named type by full name, else a record whose
// fields resolve (preferring the same short name), else the same unnamed
// type, else the first promotion.
func (r *resolver) firstMatchingBranch(w, u *Schema) int {
	structureMatch := -1
	for j, b := range u.Branches {
		if w.Type != b.Type {
			continue
		}
		if !w.named() {
			return j
		}
		if w.FullName() == b.FullName() {
			return j
		}
		if w.Type == Record && !hasMatchError(r.resolveRecord(w, b)) {
			if structureMatch < 0 || w.Name == b.Name {
				structureMatch = j
			}
		}
	}
	if structureMatch >= 0 {
		return structureMatch
	}
	for j, b := range u.Branches {
		if w.Type != b.Type && promotable(w.Type, b.Type) && w.Type != Null {
			return j
		}
	}
	return -1
}

// hasMatchError reports an error in a record's resolution or in one of its
// fields' (not deeper).
func hasMatchError(a *action) bool {
	if a.kind == errorAction {
		return true
	}
	return slices.ContainsFunc(a.children, func(c *action) bool { return c.kind == errorAction })
}

// promotable reports whether a writer's type converts to a reader's.
func promotable(w, r Type) bool {
	switch r {
	case Long:
		return w == Int
	case Float:
		return w == Int || w == Long
	case Double:
		return w == Int || w == Long || w == Float
	case Bytes:
		return w == String
	case String:
		return w == Bytes
	}
	return false
}

// unionEquiv reports whether two schemas are the same shape with the same
// short names, as Java Avro's Resolver.unionEquiv.
func unionEquiv(w, r *Schema, seen map[[2]*Schema]bool) bool {
	if w.Type != r.Type {
		return false
	}
	if w.named() && w.Name != r.Name {
		return false
	}
	switch w.Type {
	case Array:
		return unionEquiv(w.Items, r.Items, seen)
	case Map:
		return unionEquiv(w.Values, r.Values, seen)
	case Fixed:
		return w.Size == r.Size
	case Enum:
		return slices.Equal(w.Symbols, r.Symbols)
	case Union:
		if len(w.Branches) != len(r.Branches) {
			return false
		}
		for i := range w.Branches {
			if !unionEquiv(w.Branches[i], r.Branches[i], seen) {
				return false
			}
		}
		return true
	case Record:
		pair := [2]*Schema{w, r}
		if v, ok := seen[pair]; ok {
			return v
		}
		seen[pair] = true
		if len(w.Fields) != len(r.Fields) {
			seen[pair] = false
			return false
		}
		for i := range w.Fields {
			if w.Fields[i].Name != r.Fields[i].Name || !unionEquiv(w.Fields[i].Type, r.Fields[i].Type, seen) {
				seen[pair] = false
				return false
			}
		}
		return seen[pair]
	}
	return true
}

// hasErrors reports whether an error can be reached in a resolution, as
// Java Avro's Symbol.hasErrors over the grammar built from it.
func hasErrors(a *action, visited map[*action]bool) bool {
	if visited[a] {
		return false
	}
	visited[a] = true
	if a.kind == errorAction {
		return true
	}
	for _, c := range a.children {
		if hasErrors(c, visited) {
			return true
		}
	}
	return false
}

// checkDefaults encodes the defaults a resolution reads, as Java Avro does
// when it builds the grammar, and returns the first that does not fit.
func checkDefaults(a *action, visited map[*action]bool) error {
	if visited[a] {
		return nil
	}
	visited[a] = true
	for _, c := range a.children {
		if err := checkDefaults(c, visited); err != nil {
			return err
		}
	}
	for _, f := range a.defaults {
		if err := encodeDefault(f.Type, f.def); err != nil {
			return err
		}
	}
	return nil
}

// encodeDefault checks a default value against its type as Java Avro's
// ResolvingGrammarGenerator.encode does.
func encodeDefault(s *Schema, n *node) error {
	bad := func(format string) error { return &DefaultError{Msg: fmt.Sprintf(format, n)} }
	switch s.Type {
	case Record:
		for _, f := range s.Fields {
			v := n.get(f.Name)
			if v == nil {
				v = f.def
			}
			if v == nil {
				return &DefaultError{Msg: "No default value for: " + f.Name}
			}
			if err := encodeDefault(f.Type, v); err != nil {
				return err
			}
		}
	case Enum:
		if t, ok := n.textValue(); !ok || !slices.Contains(s.Symbols, t) {
			return bad("No such enum symbol: %s")
		}
	case Array:
		for _, it := range n.items {
			if err := encodeDefault(s.Items, it); err != nil {
				return err
			}
		}
	case Map:
		for _, v := range n.vals {
			if err := encodeDefault(s.Values, v); err != nil {
				return err
			}
		}
	case Union:
		return encodeDefault(s.Branches[0], n)
	case Fixed, String, Bytes:
		if n.kind != jsonString {
			return bad("Non-string default value for " + s.Type.String() + ": %s")
		}
	case Int, Long, Float, Double:
		if n.kind != jsonNumber {
			return bad("Non-numeric default value for " + s.Type.String() + ": %s")
		}
	case Boolean:
		if n.kind != jsonBool {
			return bad("Non-boolean default for boolean: %s")
		}
	case Null:
		if n.kind != jsonNull {
			return bad("Non-null default value for null type: %s")
		}
	}
	return nil
}

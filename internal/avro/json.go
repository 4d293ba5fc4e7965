package avro

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A node is a JSON value as Java Avro's JSON library keeps it: an object
// keeps the order of its keys, a number keeps its text.
type node struct {
	kind  nodeKind
	text  string  // a string's value, a number's text
	items []*node // an array's elements
	keys  []string
	vals  []*node // an object's values, by keys
}

type nodeKind int

const (
	jsonNull nodeKind = iota
	jsonBool
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

// get returns an object's value for key (the last one when repeated), or
// nil.
func (n *node) get(key string) *node {
	if n == nil || n.kind != jsonObject {
		return nil
	}
	var v *node
	for i, k := range n.keys {
		if k == key {
			v = n.vals[i]
		}
	}
	return v
}

// textValue returns a string node's value, and whether n is one.
func (n *node) textValue() (string, bool) {
	if n == nil || n.kind != jsonString {
		return "", false
	}
	return n.text, true
}

// isIntegral reports whether a number has no fraction or exponent.
func (n *node) isIntegral() bool {
	return n.kind == jsonNumber && !strings.ContainsAny(n.text, ".eE")
}

// decodeJSON reads one JSON value. Its errors are worded as Jackson words
// the common ones.
func decodeJSON(text string) (*node, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	n, err := readNode(dec)
	if err != nil {
		return nil, jacksonError(text, dec.InputOffset(), err)
	}
	return n, nil
}

func readNode(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &node{kind: jsonNull}, nil
	case bool:
		return &node{kind: jsonBool, text: strconv.FormatBool(t)}, nil
	case json.Number:
		return &node{kind: jsonNumber, text: string(t)}, nil
	case string:
		return &node{kind: jsonString, text: t}, nil
	case json.Delim:
		n := &node{kind: jsonArray}
		if t == '{' {
			n.kind = jsonObject
		}
		for dec.More() {
			if n.kind == jsonObject {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := k.(string)
				n.keys = append(n.keys, key)
			}
			v, err := readNode(dec)
			if err != nil {
				return nil, err
			}
			if n.kind == jsonObject {
				n.vals = append(n.vals, v)
			} else {
				n.items = append(n.items, v)
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// jacksonError words a JSON syntax error at offset as Jackson does when it
// meets a bare word, and keeps Go's wording otherwise.
func jacksonError(text string, offset int64, err error) error {
	start := len(text) - len(strings.TrimLeft(text, " \t\r\n"))
	if errors.Is(err, io.EOF) && start == len(text) {
		return errors.New("com.fasterxml.jackson.databind.exc.MismatchedInputException: No content to map due to end-of-input")
	}
	// A bare word where a value was due: Jackson reads the whole word and
	// names it with the line and column that follow it.
	at := start
	if int(offset) < len(text) && int(offset) > start {
		at = int(offset)
		for at < len(text) && strings.ContainsRune(" \t\r\n:,", rune(text[at])) {
			at++
		}
	}
	end := at
	for end < len(text) {
		r, size := utf8.DecodeRuneInString(text[end:])
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '$') {
			break
		}
		end += size
	}
	if word := text[at:end]; word != "" && word != "true" && word != "false" && word != "null" {
		line := 1 + strings.Count(text[:end], "\n")
		col := end - strings.LastIndex(text[:end], "\n")
		return fmt.Errorf("com.fasterxml.jackson.core.JsonParseException: Unrecognized token '%s': was expecting "+
			"(JSON String, Number, Array, Object or token 'null', 'true' or 'false')\n at [Source: REDACTED "+
			"(`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: %d, column: %d]", word, line, col)
	}
	return fmt.Errorf("com.fasterxml.jackson.core.JsonParseException: %v", err)
}

// equal compares two nodes as Jackson's JsonNode.equals does: objects by
// their entries in any order, numbers of the same kind by value.
func (n *node) equal(o *node) bool {
	if n == nil || o == nil {
		return n == o
	}
	if n.kind != o.kind {
		return false
	}
	switch n.kind {
	case jsonNumber:
		if n.isIntegral() != o.isIntegral() {
			return false
		}
		if n.isIntegral() {
			a, _ := new(big.Int).SetString(n.text, 10)
			b, _ := new(big.Int).SetString(o.text, 10)
			return a != nil && b != nil && a.Cmp(b) == 0
		}
		a, _ := strconv.ParseFloat(n.text, 64)
		b, _ := strconv.ParseFloat(o.text, 64)
		return a == b || (math.IsNaN(a) && math.IsNaN(b))
	case jsonArray:
		if len(n.items) != len(o.items) {
			return false
		}
		for i := range n.items {
			if !n.items[i].equal(o.items[i]) {
				return false
			}
		}
		return true
	case jsonObject:
		if len(n.distinctKeys()) != len(o.distinctKeys()) {
			return false
		}
		for _, k := range n.distinctKeys() {
			if !n.get(k).equal(o.get(k)) {
				return false
			}
		}
		return true
	}
	return n.text == o.text
}

// distinctKeys returns an object's keys, each once.
func (n *node) distinctKeys() []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range n.keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// jsonWriter writes JSON as Jackson does: compact, or with its default
// pretty printer (two-space indentation of objects, " : " between a key
// and its value, arrays on one line as [ a, b ]).
type jsonWriter struct {
	buf    bytes.Buffer
	pretty bool
	depth  int   // objects open
	counts []int // values written in each open object or array
}

func (w *jsonWriter) beginValue() {
	if len(w.counts) == 0 {
		return
	}
	i := len(w.counts) - 1
	if w.counts[i] > 0 {
		w.buf.WriteByte(',')
	}
	w.counts[i]++
}

func (w *jsonWriter) startObject() {
	w.buf.WriteByte('{')
	w.depth++
	w.counts = append(w.counts, 0)
}

func (w *jsonWriter) endObject() {
	n := w.counts[len(w.counts)-1]
	w.counts = w.counts[:len(w.counts)-1]
	w.depth--
	if w.pretty {
		if n > 0 {
			w.newline()
		} else {
			w.buf.WriteByte(' ')
		}
	}
	w.buf.WriteByte('}')
}

func (w *jsonWriter) startArray() {
	w.buf.WriteByte('[')
	w.counts = append(w.counts, 0)
}

// element separates the next array element from the previous one.
func (w *jsonWriter) element() {
	w.beginValue()
	if w.pretty {
		w.buf.WriteByte(' ')
	}
}

func (w *jsonWriter) endArray() {
	w.counts = w.counts[:len(w.counts)-1]
	if w.pretty {
		w.buf.WriteByte(' ')
	}
	w.buf.WriteByte(']')
}

// field writes an object's key; its value follows.
func (w *jsonWriter) field(key string) {
	w.beginValue()
	if w.pretty {
		w.newline()
	}
	w.quote(key)
	if w.pretty {
		w.buf.WriteString(" : ")
	} else {
		w.buf.WriteByte(':')
	}
}

func (w *jsonWriter) newline() {
	w.buf.WriteByte('\n')
	for range w.depth {
		w.buf.WriteString("  ")
	}
}

func (w *jsonWriter) stringField(key, value string) {
	w.field(key)
	w.quote(value)
}

// quote writes a JSON string escaped as Jackson escapes it.
func (w *jsonWriter) quote(s string) {
	const hex = "0123456789ABCDEF"
	w.buf.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			w.buf.WriteByte('\\')
			w.buf.WriteByte(c)
		case c == '\n':
			w.buf.WriteString(`\n`)
		case c == '\r':
			w.buf.WriteString(`\r`)
		case c == '\t':
			w.buf.WriteString(`\t`)
		case c == '\b':
			w.buf.WriteString(`\b`)
		case c == '\f':
			w.buf.WriteString(`\f`)
		case c < 0x20:
			w.buf.WriteString(`\u00`)
			w.buf.WriteByte(hex[c>>4])
			w.buf.WriteByte(hex[c&15])
		default:
			w.buf.WriteByte(c)
		}
	}
	w.buf.WriteByte('"')
}

// node writes a JSON tree.
func (w *jsonWriter) node(n *node) {
	switch n.kind {
	case jsonNull:
		w.buf.WriteString("null")
	case jsonBool:
		w.buf.WriteString(n.text)
	case jsonNumber:
		w.buf.WriteString(javaNumber(n))
	case jsonString:
		w.quote(n.text)
	case jsonArray:
		w.startArray()
		for _, it := range n.items {
			w.element()
			w.node(it)
		}
		w.endArray()
	case jsonObject:
		w.startObject()
		for _, k := range n.distinctKeys() {
			w.field(k)
			w.node(n.get(k))
		}
		w.endObject()
	}
}

// javaNumber renders a number as Jackson renders the node it parsed it
// into: integers as they are, others as Java's Double.toString.
func javaNumber(n *node) string {
	if n.isIntegral() {
		if b, ok := new(big.Int).SetString(n.text, 10); ok {
			return b.String()
		}
		return n.text
	}
	f, err := strconv.ParseFloat(n.text, 64)
	if err != nil {
		return n.text
	}
	return javaDouble(f)
}

// javaDouble formats f as Java's Double.toString does.
func javaDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	if a := math.Abs(f); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, 64) // e.g. 1.5E+10
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	exp = strings.TrimPrefix(exp, "+")
	if strings.HasPrefix(exp, "-") {
		exp = "-" + strings.TrimLeft(exp[1:], "0")
	} else {
		exp = strings.TrimLeft(exp, "0")
	}
	return mant + "E" + exp
}

// compact renders a node as Jackson's JsonNode.toString does.
func (n *node) String() string {
	w := &jsonWriter{}
	w.node(n)
	return w.buf.String()
}

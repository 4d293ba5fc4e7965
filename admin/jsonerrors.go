package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"unicode"
)

// Request bodies Pulsar's JSON reader refuses. Pulsar reads bodies with
// Jackson, and Jersey answers a body Jackson cannot read with a 400 whose
// plain-text body is Jackson's message and where in the body it failed:
//
//	Unrecognized token 'ten': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')
//	 at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 1, column: 4]
//
// badBody words the errors of Go's JSON decoder so: the same kinds of
// message (an unrecognized token, a value of the wrong type, a body cut
// short) at the same line and column. Jackson's "(through reference chain:
// <Java class>[...])" suffix, which names Pulsar's classes, is left out.

// bodyError is a body Jackson would refuse: a 400 with a plain-text body.
type bodyError struct{ msg string }

func (e *bodyError) Error() string { return e.msg }

// badBody returns the 400 Pulsar answers body with when it does not parse:
// err is what Go's decoder (or a field's UnmarshalJSON) said of it.
func badBody(body []byte, err error) error {
	return &bodyError{msg: jacksonMessage(body, err)}
}

// writeBodyError writes e as Jersey does.
func writeBodyError(w http.ResponseWriter, e *bodyError) {
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = io.WriteString(w, e.msg)
}

// numberError is a field's value that is not the number its type needs
// (flexInt's UnmarshalJSON).
type numberError struct {
	value    string // the JSON text of the value
	javaType string // int or long
}

func (e *numberError) Error() string { return "not a number: " + e.value }

// jacksonMessage words err as Jackson would, with the location line.
func jacksonMessage(body []byte, err error) string {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
		num *numberError
	)
	switch {
	case errors.As(err, &num):
		start := valueStart(body, num.value)
		if m, ok := containerForScalar(num.javaType, num.value); ok {
			return m + location(body, start)
		}
		return fmt.Sprintf("Cannot deserialize value of type `%s` from %s: not a valid `%s` value", num.javaType,
			jacksonValue(num.value), num.javaType) + location(body, start)
	case errors.As(err, &typ):
		start, text := valueAround(body, int(typ.Offset))
		java := javaTypeName(typ.Type)
		k := typ.Type.Kind()
		switch {
		case strings.HasPrefix(text, "[") && (k == reflect.Struct || k == reflect.Map):
			return fmt.Sprintf("Cannot deserialize value of type `%s` from Array value (token `JsonToken.START_ARRAY`)",
				java) + location(body, start)
		case strings.HasPrefix(text, "{") && (k == reflect.Slice || k == reflect.Array):
			return fmt.Sprintf("Cannot deserialize value of type `%s` from Object value (token `JsonToken.START_OBJECT`)",
				java) + location(body, start)
		}
		if k != reflect.Slice && k != reflect.Map && k != reflect.Struct && k != reflect.Array {
			if m, ok := containerForScalar(java, text); ok {
				return m + location(body, start)
			}
		}
		if k == reflect.Slice || k == reflect.Map || k == reflect.Struct || k == reflect.Array {
			return fmt.Sprintf("Cannot construct instance of `%s` (although at least one Creator exists): "+
				"no %s-argument constructor/factory method to deserialize from %s", java, jacksonKind(text),
				jacksonValueParen(text)) + location(body, start)
		}
		return fmt.Sprintf("Cannot deserialize value of type `%s` from %s: not a valid `%s` value", java,
			jacksonValue(text), java) + location(body, start)
	case errors.As(err, &syn) && syn.Error() == "unexpected end of JSON input":
		return endOfInput(body)
	case errors.As(err, &syn):
		return syntaxMessage(body, int(syn.Offset), syn.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return endOfInput(body)
	}
	return "Cannot read the request body" + location(body, 0)
}

// containerForScalar words an object or an array where a scalar of the
// Java type java was wanted; ok is false for any other value.
func containerForScalar(java, text string) (string, bool) {
	switch {
	case strings.HasPrefix(text, "{"):
		return fmt.Sprintf("Cannot deserialize value of type `%s` from Object value (token `JsonToken.START_OBJECT`)", java), true
	case strings.HasPrefix(text, "["):
		return fmt.Sprintf("Cannot deserialize value of type `%s` from Array value (token `JsonToken.START_ARRAY`)", java), true
	}
	return "", false
}

// endOfInput words a body cut short: the object or array still open, and
// where it opened.
func endOfInput(body []byte) string {
	var open []int
	inString, escaped := false, false
	for i, c := range body {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			open = append(open, i)
		case (c == '}' || c == ']') && len(open) > 0:
			open = open[:len(open)-1]
		}
	}
	if len(open) == 0 {
		return "No content to map due to end-of-input" + location(body, len(body))
	}
	at := open[len(open)-1]
	kind := "Object"
	if body[at] == '[' {
		kind = "Array"
	}
	marker := strings.TrimPrefix(location(body, at), "\n at ")
	return fmt.Sprintf("Unexpected end-of-input: expected close marker for %s (start marker at %s)", kind, marker) +
		location(body, len(body))
}

// syntaxMessage words a syntax error found after reading offset bytes,
// which Go's decoder described as msg: a word Jackson does not know is an
// unrecognized token, anything else an unexpected character, with what
// Jackson expected there.
func syntaxMessage(body []byte, offset int, msg string) string {
	i := min(max(offset-1, 0), len(body))
	for i > 0 && isWordByte(body[i-1]) {
		i--
	}
	j := i
	for j < len(body) && isWordByte(body[j]) {
		j++
	}
	if j > i && unicode.IsLetter(rune(body[i])) {
		return fmt.Sprintf("Unrecognized token '%s': was expecting (JSON String, Number, Array, Object or "+
			"token 'null', 'true' or 'false')", body[i:j]) + location(body, j)
	}
	if i >= len(body) {
		return "Unexpected end-of-input" + location(body, len(body))
	}
	c := body[i]
	expected := "expected a valid value (JSON String, Number, Array, Object or token 'null', 'true' or 'false')"
	switch {
	case strings.HasSuffix(msg, "after object key"):
		expected = "was expecting a colon to separate field name and value"
	case strings.HasSuffix(msg, "after object key:value pair"):
		expected = "was expecting comma to separate Object entries"
	case strings.HasSuffix(msg, "after array element"):
		expected = "was expecting comma to separate Array entries"
	case c == ',' || c == '}' || c == ']':
		expected = "expected a value"
	}
	return fmt.Sprintf("Unexpected character ('%c' (code %d)): %s", c, c, expected) + location(body, i)
}

// valueStart returns where value, the JSON text of a value, starts in
// body: its first occurrence in a value's place (after a colon, a comma, an
// opening bracket, or at the start).
func valueStart(body []byte, value string) int {
	for from := 0; from < len(body); {
		k := bytes.Index(body[from:], []byte(value))
		if k < 0 {
			break
		}
		at := from + k
		before := bytes.TrimRight(body[:at], " \t\r\n")
		if len(before) == 0 || bytes.IndexByte([]byte(":,["), before[len(before)-1]) >= 0 {
			return at
		}
		from = at + 1
	}
	return 0
}

func isWordByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || c == '+' || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c))
}

// valueAround returns where the JSON value that ends at offset starts, and
// its text.
func valueAround(body []byte, offset int) (int, string) {
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		start := int(dec.InputOffset())
		if _, err := dec.Token(); err != nil {
			return min(offset, len(body)), ""
		}
		end := int(dec.InputOffset())
		if end >= offset {
			for start < end && bytes.IndexByte([]byte(" \t\r\n:,"), body[start]) >= 0 {
				start++
			}
			return start, string(body[start:end])
		}
	}
}

// location is Jackson's location line for byte i of body: 1-based line and
// column.
func location(body []byte, i int) string {
	i = min(max(i, 0), len(body))
	line := 1 + bytes.Count(body[:i], []byte("\n"))
	col := i - bytes.LastIndexByte(body[:i], '\n')
	return fmt.Sprintf("\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: %d, column: %d]",
		line, col)
}

// jacksonKind names a JSON value's kind as Jackson's messages do.
func jacksonKind(text string) string {
	switch {
	case text == "":
		return "String"
	case text[0] == '"':
		return "String"
	case text == "true" || text == "false":
		return "boolean/Boolean"
	case text[0] == '[':
		return "Array"
	case text[0] == '{':
		return "Object"
	}
	return "int/Int"
}

// jacksonValue is a value as a type mismatch names it: String "x",
// Number 5, Boolean true.
func jacksonValue(text string) string {
	switch {
	case text == "":
		return "value"
	case text[0] == '"':
		return "String " + text
	case text == "true" || text == "false":
		return "Boolean value (" + text + ")"
	}
	return "Number " + text
}

// jacksonValueParen is a value as a missing creator names it: String value
// ('x'), Number value (5).
func jacksonValueParen(text string) string {
	switch {
	case text == "":
		return "value"
	case text[0] == '"':
		var s string
		_ = json.Unmarshal([]byte(text), &s)
		return "String value ('" + s + "')"
	case text == "true" || text == "false":
		return "Boolean value (" + text + ")"
	}
	return "Number value (" + text + ")"
}

// javaTypeName names a Go type by the Java type Pulsar reads there.
func javaTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int32, reflect.Int16, reflect.Int8, reflect.Uint32, reflect.Uint16, reflect.Uint8:
		return "int"
	case reflect.Int64, reflect.Uint64, reflect.Uint:
		return "long"
	case reflect.Bool:
		return "boolean"
	case reflect.Float32, reflect.Float64:
		return "double"
	case reflect.String:
		return "java.lang.String"
	case reflect.Slice, reflect.Array:
		return "java.util.ArrayList"
	case reflect.Map:
		if t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String {
			// A Map<String, String> parameter: Jackson names its type
			// arguments.
			return "java.util.LinkedHashMap<java.lang.String,java.lang.String>"
		}
		return "java.util.LinkedHashMap"
	case reflect.Pointer:
		return javaTypeName(t.Elem())
	}
	return "java.lang.Object"
}

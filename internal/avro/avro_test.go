package avro

import (
	"errors"
	"testing"
)

func mustParse(t *testing.T, text string) *Schema {
	t.Helper()
	s, err := Parse(text)
	if err != nil {
		t.Fatalf("parse %s: %v", text, err)
	}
	return s
}

// The text Pulsar 4.0.8 put in its error for these schemas.
func TestPrettyIsJavaAvrosToStringTrue(t *testing.T) {
	s := mustParse(t, `{"name":"x.R","type":"record","fields":[{"name":"a","type":"string"},{"name":"b","type":"int","default":0}]}`)
	want := "{\n" +
		"  \"type\" : \"record\",\n" +
		"  \"name\" : \"R\",\n" +
		"  \"namespace\" : \"x\",\n" +
		"  \"fields\" : [ {\n" +
		"    \"name\" : \"a\",\n" +
		"    \"type\" : \"string\"\n" +
		"  }, {\n" +
		"    \"name\" : \"b\",\n" +
		"    \"type\" : \"int\",\n" +
		"    \"default\" : 0\n" +
		"  } ]\n" +
		"}"
	if got := s.Pretty(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestPrettyWritesNamedTypesOnceAndRelativeToTheNamespace(t *testing.T) {
	s := mustParse(t, `{"type":"record","name":"a.R","doc":"d","fields":[
		{"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y"],"default":"X"}},
		{"name":"e2","type":"E"},
		{"name":"o","type":{"type":"record","name":"b.O","fields":[{"name":"f","type":{"type":"fixed","name":"F","size":4}}]}},
		{"name":"u","type":["null",{"type":"array","items":"long"},{"type":"map","values":"a.E"}],"default":null,"order":"ignore","aliases":["uu"]},
		{"name":"l","type":{"type":"long","logicalType":"timestamp-millis"},"default":1.5e10}],
		"aliases":["Old","c.Older"]}`)
	want := `{"type":"record","name":"R","namespace":"a","doc":"d","fields":[` +
		`{"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y"],"default":"X"}},` +
		`{"name":"e2","type":"E"},` +
		`{"name":"o","type":{"type":"record","name":"O","namespace":"b","fields":[{"name":"f","type":{"type":"fixed","name":"F","size":4}}]}},` +
		`{"name":"u","type":["null",{"type":"array","items":"long"},{"type":"map","values":"E"}],"default":null,"order":"ignore","aliases":["uu"]},` +
		`{"name":"l","type":{"type":"long","logicalType":"timestamp-millis"},"default":1.5E10}],` +
		`"aliases":["Old","c.Older"]}`
	if got := s.String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestParseErrorsAreWordedAsJavaAvro(t *testing.T) {
	cases := map[string]string{
		`not json`: "com.fasterxml.jackson.core.JsonParseException: Unrecognized token 'not': was expecting " +
			"(JSON String, Number, Array, Object or token 'null', 'true' or 'false')\n at [Source: REDACTED " +
			"(`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 1, column: 4]",
		`{"type":"record","name":"R","fields":[{"name":"a","type":"strin"}]}`: `"strin" is not a defined name. ` +
			`The type of the "a" field must be a defined name or a {"type": ...} expression.`,
		`{"type":"record","name":"R-x","fields":[]}`:               "Illegal character in: R-x",
		`{"type":"object"}`:                                        "Type not supported: object",
		`{"type":"record","name":"R"}`:                             `Record has no fields: {"type":"record","name":"R"}`,
		`["int","int"]`:                                            "Duplicate in union:int",
		`{"type":"enum","name":"E","symbols":["A"],"default":"B"}`: "The Enum Default: B is not in the enum symbol set: [A]",
	}
	for text, want := range cases {
		_, err := Parse(text)
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Msg != want {
			t.Errorf("Parse(%s) = %v, want %q", text, err, want)
		}
	}
}

func TestEqualIgnoresDocAliasesAndKeyOrder(t *testing.T) {
	a := mustParse(t, `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`)
	b := mustParse(t, `{"fields":[{"type":"string","name":"a","doc":"x"}],"name":"R","type":"record","aliases":["Q"]}`)
	c := mustParse(t, `{"type":"record","name":"R","fields":[{"name":"a","type":"string","default":"x"}]}`)
	d := mustParse(t, `{"type":"record","name":"n.R","fields":[{"name":"a","type":"string"}]}`)
	if !a.Equal(b) || a.Equal(c) || a.Equal(d) {
		t.Fatalf("a=b %v, a=c %v, a=d %v", a.Equal(b), a.Equal(c), a.Equal(d))
	}
}

func TestCanReadFollowsJavaAvrosResolution(t *testing.T) {
	rec := func(fields string) string { return `{"type":"record","name":"R","fields":[` + fields + `]}` }
	cases := []struct {
		name           string
		writer, reader string
		want           bool
	}{
		{"same", rec(`{"name":"a","type":"int"}`), rec(`{"name":"a","type":"int"}`), true},
		{"reader adds a field with default", rec(`{"name":"a","type":"int"}`), rec(`{"name":"a","type":"int"},{"name":"b","type":"int","default":1}`), true},
		{"reader adds a field without default", rec(`{"name":"a","type":"int"}`), rec(`{"name":"a","type":"int"},{"name":"b","type":"int"}`), false},
		{"reader drops a field", rec(`{"name":"a","type":"int"},{"name":"b","type":"int"}`), rec(`{"name":"a","type":"int"}`), true},
		{"int to long", rec(`{"name":"a","type":"int"}`), rec(`{"name":"a","type":"long"}`), true},
		{"long to int", rec(`{"name":"a","type":"long"}`), rec(`{"name":"a","type":"int"}`), false},
		{"string to bytes", `"string"`, `"bytes"`, true},
		{"float to double", `"float"`, `"double"`, true},
		{"int into a union with long", `"int"`, `["null","long"]`, true},
		{"union into a narrower union", `["null","string"]`, `["null"]`, false},
		{"union into its branch", `["null","string"]`, `"string"`, false},
		{"record renamed", rec(`{"name":"a","type":"int"}`), `{"type":"record","name":"S","fields":[{"name":"a","type":"int"}]}`, true},
		{"enum symbol removed", `{"type":"enum","name":"E","symbols":["A","B"]}`, `{"type":"enum","name":"E","symbols":["A"]}`, true},
		{"enum renamed", `{"type":"enum","name":"E","symbols":["A"]}`, `{"type":"enum","name":"F","symbols":["A"]}`, false},
		{"enum moved to another namespace", `{"type":"enum","name":"a.E","symbols":["A"]}`, `{"type":"enum","name":"b.E","symbols":["A"]}`, true},
		{"enum renamed with an alias", `{"type":"enum","name":"E","symbols":["A"]}`, `{"type":"enum","name":"F","symbols":["A"],"aliases":["E"]}`, true},
		{"fixed resized", `{"type":"fixed","name":"F","size":4}`, `{"type":"fixed","name":"F","size":8}`, false},
		{"field renamed with an alias", rec(`{"name":"a","type":"int"}`), rec(`{"name":"b","type":"int","aliases":["a"]}`), true},
		{"field renamed without alias", rec(`{"name":"a","type":"int"}`), rec(`{"name":"b","type":"int"}`), false},
		{"nested record gains a field without default", rec(`{"name":"n","type":{"type":"record","name":"N","fields":[]}}`),
			rec(`{"name":"n","type":{"type":"record","name":"N","fields":[{"name":"x","type":"int"}]}}`), false},
		{"array items promote", `{"type":"array","items":"int"}`, `{"type":"array","items":"double"}`, true},
		{"map values mismatch", `{"type":"map","values":"int"}`, `{"type":"map","values":"string"}`, false},
		{"recursive record", rec(`{"name":"next","type":["null","R"]}`), rec(`{"name":"next","type":["null","R"]},{"name":"v","type":"int","default":0}`), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := CanRead(mustParse(t, c.writer), mustParse(t, c.reader))
			if err != nil || got != c.want {
				t.Fatalf("CanRead = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func TestCanReadFailsOnADefaultThatDoesNotFit(t *testing.T) {
	w := mustParse(t, `{"type":"record","name":"R","fields":[]}`)
	r := mustParse(t, `{"type":"record","name":"R","fields":[{"name":"a","type":["null","string"],"default":"x"}]}`)
	_, err := CanRead(w, r)
	var de *DefaultError
	if !errors.As(err, &de) || de.JavaString() != `org.apache.avro.AvroTypeException: Non-null default value for null type: "x"` {
		t.Fatalf("err = %v", err)
	}
}

package avro

import (
	"bytes"
	"testing"
)

func TestEncodeJSONWritesAvroBinaryAsJavaAvroDoes(t *testing.T) {
	s, err := Parse(`{"type":"record","name":"R","fields":[{"name":"a","type":"int"},` +
		`{"name":"b","type":["null","string"],"default":null},{"name":"m","type":{"type":"map","values":"long"}},` +
		`{"name":"l","type":{"type":"array","items":"double"}},{"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y"]}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in   string
		want []byte
	}{
		{`{"a":3,"b":{"string":"x"},"m":{},"l":[],"e":"X"}`, []byte{0x06, 0x02, 0x02, 'x', 0, 0, 0}},
		{`{"e":"Y","l":[1],"m":{"k":-1},"b":null,"a":5}`,
			[]byte{0x0a, 0x00, 0x02, 0x02, 'k', 0x01, 0x00, 0x02, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x00, 0x02}},
	} {
		got, err := s.EncodeJSON([]byte(c.in))
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%s: % x (%v), want % x", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`{"a":4}`, `{"a":"4","b":null,"m":{},"l":[],"e":"X"}`, `{"a":1,"b":"x","m":{},"l":[],"e":"X"}`,
		`{"a":1,"b":null,"m":{},"l":[],"e":"Z"}`, `not json`} {
		if got, err := s.EncodeJSON([]byte(bad)); err == nil {
			t.Errorf("%s: encoded as % x, want an error", bad, got)
		}
	}
}

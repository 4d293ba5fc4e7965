package avro

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// EncodeJSON reads a datum of schema s written in Avro's JSON encoding (a
// union's value as {"type": value}, null as null, bytes and fixed as
// strings of code points 0-255) and returns it in Avro's binary encoding,
// as Java Avro's JsonDecoder read by a GenericDatumReader and written by a
// binary encoder would: a record must name every field, in any order;
// names it does not know are skipped.
func (s *Schema) EncodeJSON(text []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	v, err := readJSON(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("avro: text after the datum")
	}
	return s.encode(nil, v)
}

// datumObject is a JSON object with its members in their order.
type datumObject []datumMember

type datumMember struct {
	key string
	val any
}

// readJSON reads one JSON value: nil, bool, json.Number, string, []any or
// datumObject.
func readJSON(d *json.Decoder) (any, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			arr := []any{}
			for d.More() {
				v, err := readJSON(d)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := d.Token()
			return arr, err
		case '{':
			obj := datumObject{}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				v, err := readJSON(d)
				if err != nil {
					return nil, err
				}
				obj = append(obj, datumMember{k.(string), v})
			}
			_, err := d.Token()
			return obj, err
		}
		return nil, fmt.Errorf("avro: unexpected %v", t)
	}
	return tok, nil
}

func (o datumObject) get(key string) (any, bool) {
	for _, m := range o {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

func appendLong(dst []byte, n int64) []byte { return binary.AppendVarint(dst, n) }

func (s *Schema) encode(dst []byte, v any) ([]byte, error) {
	mismatch := func() ([]byte, error) { return nil, fmt.Errorf("avro: expected %s, got %v", s.Type, v) }
	switch s.Type {
	case Null:
		if v != nil {
			return mismatch()
		}
		return dst, nil
	case Boolean:
		b, ok := v.(bool)
		if !ok {
			return mismatch()
		}
		if b {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	case Int, Long:
		n, ok := v.(json.Number)
		if !ok {
			return mismatch()
		}
		bits := 64
		if s.Type == Int {
			bits = 32
		}
		i, err := strconv.ParseInt(n.String(), 10, bits)
		if err != nil {
			return nil, fmt.Errorf("avro: %s: %w", s.Type, err)
		}
		return appendLong(dst, i), nil
	case Float, Double:
		n, ok := v.(json.Number)
		if !ok {
			return mismatch()
		}
		f, err := n.Float64()
		if err != nil {
			return nil, err
		}
		if s.Type == Float {
			return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(f))), nil
		}
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), nil
	case String:
		str, ok := v.(string)
		if !ok {
			return mismatch()
		}
		return append(appendLong(dst, int64(len(str))), str...), nil
	case Bytes, Fixed:
		str, ok := v.(string)
		if !ok {
			return mismatch()
		}
		raw := make([]byte, 0, len(str))
		for _, r := range str {
			if r > 0xff {
				return nil, fmt.Errorf("avro: %s: code point %U beyond a byte", s.Type, r)
			}
			raw = append(raw, byte(r))
		}
		if s.Type == Fixed {
			if len(raw) != s.Size {
				return nil, fmt.Errorf("avro: fixed %s of %d bytes, got %d", s.FullName(), s.Size, len(raw))
			}
			return append(dst, raw...), nil
		}
		return append(appendLong(dst, int64(len(raw))), raw...), nil
	case Enum:
		str, ok := v.(string)
		if !ok {
			return mismatch()
		}
		for i, sym := range s.Symbols {
			if sym == str {
				return appendLong(dst, int64(i)), nil
			}
		}
		return nil, fmt.Errorf("avro: %q is not a symbol of %s", str, s.FullName())
	case Array:
		arr, ok := v.([]any)
		if !ok {
			return mismatch()
		}
		if len(arr) > 0 {
			dst = appendLong(dst, int64(len(arr)))
			for _, item := range arr {
				var err error
				if dst, err = s.Items.encode(dst, item); err != nil {
					return nil, err
				}
			}
		}
		return append(dst, 0), nil
	case Map:
		obj, ok := v.(datumObject)
		if !ok {
			return mismatch()
		}
		if len(obj) > 0 {
			dst = appendLong(dst, int64(len(obj)))
			for _, m := range obj {
				dst = append(appendLong(dst, int64(len(m.key))), m.key...)
				var err error
				if dst, err = s.Values.encode(dst, m.val); err != nil {
					return nil, err
				}
			}
		}
		return append(dst, 0), nil
	case Record:
		obj, ok := v.(datumObject)
		if !ok {
			return mismatch()
		}
		for _, f := range s.Fields {
			fv, ok := obj.get(f.Name)
			if !ok {
				return nil, fmt.Errorf("avro: Expected field name not found: %s", f.Name)
			}
			var err error
			if dst, err = f.Type.encode(dst, fv); err != nil {
				return nil, err
			}
		}
		return dst, nil
	case Union:
		return s.encodeUnion(dst, v)
	}
	return nil, fmt.Errorf("avro: cannot encode %s", s.Type)
}

// encodeUnion writes a union's branch index and value: null for the null
// branch, else {"name": value} naming the branch by its full name.
func (s *Schema) encodeUnion(dst []byte, v any) ([]byte, error) {
	if v == nil {
		for i, b := range s.Branches {
			if b.Type == Null {
				return appendLong(dst, int64(i)), nil
			}
		}
		return nil, errors.New("avro: null for a union without a null branch")
	}
	obj, ok := v.(datumObject)
	if !ok || len(obj) != 1 {
		return nil, fmt.Errorf("avro: a union's value must be {\"type\": value}, got %v", v)
	}
	for i, b := range s.Branches {
		if b.FullName() == obj[0].key {
			return b.encode(appendLong(dst, int64(i)), obj[0].val)
		}
	}
	return nil, fmt.Errorf("avro: unknown union branch %s", obj[0].key)
}

package websocket

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

// How Pulsar's handlers read their input (Java's parsers), where a client
// can tell the difference.

// queryParams returns the first value of each query parameter, as the
// handlers keep them.
func queryParams(r *http.Request) map[string]string {
	q := map[string]string{}
	for k, v := range r.URL.Query() {
		if len(v) > 0 {
			q[k] = v[0]
		}
	}
	return q
}

// parseInt32 parses a number as Java's Integer.parseInt does.
func parseInt32(s string) (int32, error) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, numberError(s)
	}
	return int32(n), nil
}

// urlDecode decodes as Java's URLDecoder (Pulsar's Codec.decode): %XX
// escapes, and + for a space.
func urlDecode(s string) (string, error) { return url.QueryUnescape(s) }

// decodeBase64 decodes as Java's basic Base64 decoder: the standard
// alphabet, padding optional, and its messages for what it refuses.
func decodeBase64(s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
			return nil, fmt.Errorf("Illegal base64 character %x", c)
		}
	}
	trimmed := strings.TrimRight(s, "=")
	data, err := base64.RawStdEncoding.DecodeString(trimmed)
	if err != nil || strings.Contains(trimmed, "=") {
		return nil, errors.New("Last unit does not have enough valid bits")
	}
	return data, nil
}

// javaTimeLayout prints a time as Java's ISO_OFFSET_DATE_TIME does (Pulsar's
// DateFormatter, in the server's zone): fraction digits only as needed, Z
// for UTC.
const javaTimeLayout = "2006-01-02T15:04:05.999999999Z07:00"

// formatJavaTime formats a time in milliseconds since the epoch.
func formatJavaTime(ms int64) string { return time.UnixMilli(ms).In(time.Local).Format(javaTimeLayout) }

// parseJavaTime parses an ISO_OFFSET_DATE_TIME, with Java's message when it
// does not parse.
func parseJavaTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("Text '%s' could not be parsed at index 0", s)
	}
	return t, nil
}

// jsonError describes a frame that is not the JSON a handler expects; a
// bare word gets Jackson's message for it.
func jsonError(data []byte, err error) string {
	t := strings.TrimLeft(string(data), " \t\r\n")
	n := 0
	for n < len(t) && (t[n] >= 'a' && t[n] <= 'z' || t[n] >= 'A' && t[n] <= 'Z' || t[n] >= '0' && t[n] <= '9' || t[n] == '_') {
		n++
	}
	if n > 0 && !(t[0] >= '0' && t[0] <= '9') && t[:n] != "null" && t[:n] != "true" && t[:n] != "false" {
		return fmt.Sprintf("Unrecognized token '%s': was expecting (JSON String, Number, Array, Object or token "+
			"'null', 'true' or 'false')\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` "+
			"disabled); line: 1, column: %d]", t[:n], len(data)-len(t)+n+1)
	}
	return err.Error()
}

// utf16Units returns s as Java's UTF-16 code units (for String.hashCode).
func utf16Units(s string) []uint16 { return utf16.Encode([]rune(s)) }

// murmur3 is MurmurHash3 x86 32 bits with seed 0 over data.
func murmur3(data []byte) uint32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	var h uint32
	n := len(data)
	for len(data) >= 4 {
		k := binary.LittleEndian.Uint32(data)
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
		data = data[4:]
	}
	var k uint32
	switch len(data) {
	case 3:
		k ^= uint32(data[2]) << 16
		fallthrough
	case 2:
		k ^= uint32(data[1]) << 8
		fallthrough
	case 1:
		k ^= uint32(data[0])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
	}
	h ^= uint32(n)
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

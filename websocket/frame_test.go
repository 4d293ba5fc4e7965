package websocket_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pulsarsim/pulsarsim/testkit"
)

// rawSession opens a producer session by hand, for frames no WebSocket
// library would send.
func rawSession(t *testing.T, adminURL string) (net.Conn, *bufio.Reader) {
	t.Helper()
	host := strings.TrimPrefix(adminURL, "http://")
	nc, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(nc, "GET /ws/v2/producer/persistent/public/default/raw HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"+
		"Connection: Upgrade\r\nSec-WebSocket-Key: MDEyMzQ1Njc4OWFiY2RlZg==\r\nSec-WebSocket-Version: 13\r\n\r\n", host)
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v %v", resp, err)
	}
	return nc, br
}

// closeStatus reads frames until a close frame and returns its status.
func closeStatus(t *testing.T, br *bufio.Reader) int {
	t.Helper()
	for {
		var h [2]byte
		if _, err := io.ReadFull(br, h[:]); err != nil {
			t.Fatalf("no close frame: %v", err)
		}
		n := int(h[1] & 0x7F)
		switch n {
		case 126:
			var ext [2]byte
			io.ReadFull(br, ext[:])
			n = int(binary.BigEndian.Uint16(ext[:]))
		case 127:
			var ext [8]byte
			io.ReadFull(br, ext[:])
			n = int(binary.BigEndian.Uint64(ext[:]))
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(br, payload); err != nil {
			t.Fatalf("frame: %v", err)
		}
		if h[0]&0x0F == 0x8 {
			if n < 2 {
				return 1005
			}
			return int(binary.BigEndian.Uint16(payload))
		}
	}
}

// masked builds a client frame.
func masked(first byte, payload []byte) []byte {
	f := []byte{first}
	switch n := len(payload); {
	case n <= 125:
		f = append(f, 0x80|byte(n))
	case n <= 0xFFFF:
		f = append(f, 0x80|126)
		f = binary.BigEndian.AppendUint16(f, uint16(n))
	default:
		f = append(f, 0x80|127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	mask := []byte{1, 2, 3, 4}
	f = append(f, mask...)
	for i, c := range payload {
		f = append(f, c^mask[i%4])
	}
	return f
}

func TestMalformedFramesCloseOnlyTheirSession(t *testing.T) {
	b := testkit.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := b.WebSocketURL()
	for _, c := range []struct {
		name   string
		frame  []byte
		status int
	}{
		{"an unmasked frame", []byte{0x81, 0x02, 'h', 'i'}, 1002},
		{"reserved bits", masked(0xC1, []byte("hi")), 1002},
		{"an unknown opcode", masked(0x83, []byte("hi")), 1002},
		{"a control frame over 125 bytes", masked(0x89, make([]byte, 126)), 1002},
		{"a fragmented control frame", masked(0x09, []byte("p")), 1002},
		{"a continuation without a start", masked(0x80, []byte("hi")), 1002},
		{"text that is not UTF-8", masked(0x81, []byte{0xff, 0xfe}), 1007},
		{"a length past the limit", append([]byte{0x81, 0x80 | 127}, binary.BigEndian.AppendUint64(nil, 1<<40)...), 1009},
		{"a new message inside a fragmented one", append(masked(0x01, []byte("a")), masked(0x81, []byte("b"))...), 1002},
	} {
		nc, br := rawSession(t, b.AdminURL())
		if _, err := nc.Write(c.frame); err != nil {
			t.Fatal(err)
		}
		if got := closeStatus(t, br); got != c.status {
			t.Errorf("%s: closed with %d, want %d", c.name, got, c.status)
		}
	}
	// A ping inside a fragmented message is answered, and the message
	// still arrives whole.
	nc, br := rawSession(t, b.AdminURL())
	msg := `{"payload":"aGk=","context":"frag"}`
	nc.Write(masked(0x01, []byte(msg[:10])))
	nc.Write(masked(0x89, []byte("ping")))
	nc.Write(masked(0x80, []byte(msg[10:])))
	var got []string
	for len(got) < 2 {
		var h [2]byte
		if _, err := io.ReadFull(br, h[:]); err != nil {
			t.Fatal(err)
		}
		payload := make([]byte, int(h[1]&0x7F))
		io.ReadFull(br, payload)
		got = append(got, fmt.Sprintf("%x:%s", h[0]&0x0F, payload))
	}
	if got[0] != "a:ping" || !strings.Contains(got[1], `"context":"frag"`) || !strings.Contains(got[1], `"result":"ok"`) {
		t.Fatalf("frames %q, want the pong then the answer", got)
	}
	// The server serves everyone else all along.
	p := dialWS(ctx, t, base+"/ws/v2/producer/persistent/public/default/raw", nil)
	writeJSON(t, p, map[string]string{"payload": "aGk="})
	if ack := readJSON[map[string]any](t, p); ack["result"] != "ok" {
		t.Fatalf("a well-behaved producer got %v", ack)
	}
}

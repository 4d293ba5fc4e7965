package chromium

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
)

// serverFrame writes one unmasked frame, as a server sends it.
func serverFrame(w io.Writer, fin bool, op byte, p []byte) {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	hdr := []byte{b0}
	switch n := len(p); {
	case n < 126:
		hdr = append(hdr, byte(n))
	case n <= 0xFFFF:
		hdr = append(hdr, 126)
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr = append(hdr, 127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	w.Write(append(hdr, p...))
}

// readClientFrame reads one frame the client wrote and unmasks it.
func readClientFrame(t *testing.T, r *bufio.Reader) (op byte, p []byte) {
	t.Helper()
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		t.Fatal(err)
	}
	if h[1]&0x80 == 0 {
		t.Fatal("a client frame must be masked")
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var b [2]byte
		io.ReadFull(r, b[:])
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		io.ReadFull(r, b[:])
		n = binary.BigEndian.Uint64(b[:])
	}
	var mask [4]byte
	io.ReadFull(r, mask[:])
	p = make([]byte, n)
	io.ReadFull(r, p)
	for i := range p {
		p[i] ^= mask[i%4]
	}
	return h[0] & 0x0F, p
}

func TestWebSocketFramesEverySizeBothWays(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	ws := &wsConn{c: client, br: bufio.NewReader(client)}
	sr := bufio.NewReader(server)
	for _, n := range []int{0, 125, 126, 65535, 65536, 200000} {
		msg := bytes.Repeat([]byte("x"), n)
		go ws.WriteText(msg)
		if op, got := readClientFrame(t, sr); op != opText || !bytes.Equal(got, msg) {
			t.Fatalf("%d bytes: the server read op %d and %d bytes", n, op, len(got))
		}
		go serverFrame(server, true, opText, msg)
		if got, err := ws.ReadMessage(); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("%d bytes: the client read %d bytes, %v", n, len(got), err)
		}
	}
}

func TestWebSocketJoinsFragmentsAndAnswersPings(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	ws := &wsConn{c: client, br: bufio.NewReader(client)}
	sr := bufio.NewReader(server)
	go func() {
		serverFrame(server, false, opText, []byte("hello, "))
		serverFrame(server, true, opPing, []byte("are you there"))
	}()
	got := make(chan string, 1)
	go func() {
		m, err := ws.ReadMessage()
		if err != nil {
			got <- err.Error()
			return
		}
		got <- string(m)
	}()
	if op, p := readClientFrame(t, sr); op != opPong || string(p) != "are you there" {
		t.Fatalf("the client answered a ping with op %d %q", op, p)
	}
	serverFrame(server, true, opContinuation, []byte("world"))
	if m := <-got; m != "hello, world" {
		t.Fatalf("message %q, want the fragments joined", m)
	}
	go serverFrame(server, true, opClose, nil)
	if _, err := ws.ReadMessage(); err != io.EOF {
		t.Fatalf("after a close frame: %v, want io.EOF", err)
	}
}

func TestWebSocketHandshakeChecksTheAcceptKey(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		bufio.NewReader(c).ReadString('\n')
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
			"Sec-WebSocket-Accept: wrong\r\n\r\n")
	}()
	_, err = dialWS(t.Context(), "ws://"+ln.Addr().String()+"/devtools/page/x")
	if err == nil || !strings.Contains(err.Error(), "handshake") {
		t.Fatalf("dial with a wrong accept key: %v, want a handshake error", err)
	}
}

package websocket

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// FuzzReadMessage feeds arbitrary bytes to the frame reader: it must end
// with a message, an error or a close, never a panic or a hang.
func FuzzReadMessage(f *testing.F) {
	f.Add([]byte{0x81, 0x82, 1, 2, 3, 4, 'h' ^ 1, 'i' ^ 2})
	f.Add([]byte{0x01, 0x81, 0, 0, 0, 0, 'a', 0x89, 0x80, 0, 0, 0, 0, 0x80, 0x81, 0, 0, 0, 0, 'b'})
	f.Add([]byte{0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe8})
	f.Add([]byte{0x81, 0xFF, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		server, client := net.Pipe()
		defer server.Close()
		go io.Copy(io.Discard, client) // pongs and closes the reader writes
		go func() {
			client.Write(data)
			client.Close()
		}()
		c := &conn{nc: server, br: bufio.NewReader(server), maxSize: 1 << 16, idle: time.Second}
		c.touch()
		for range 64 {
			if _, _, err := c.readMessage(); err != nil {
				return
			}
		}
	})
}

package protocol_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/pulsarsim/pulsarsim/protocol"
)

// allocatedBy returns the bytes the Go heap handed out while f ran (the
// protocol tests run sequentially).
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestFrameAnnouncedLargeButNeverSentCostsOneChunk(t *testing.T) {
	// A peer announces the largest frame a broker accepts and sends ten
	// bytes of it: the reader must not have allocated the whole frame.
	size := protocol.MaxFrameSize(protocol.DefaultMaxMessageSize) - 4
	head := binary.BigEndian.AppendUint32(nil, uint32(size))
	in := io.MultiReader(bytes.NewReader(head), bytes.NewReader(make([]byte, 10)))
	var err error
	got := allocatedBy(func() {
		_, err = protocol.ReadFrame(in, nil, protocol.MaxFrameSize(protocol.DefaultMaxMessageSize))
	})
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
	t.Logf("reading 10 bytes of an announced %d-byte frame allocated %d bytes", size, got)
	if got > 512<<10 {
		t.Fatalf("reading 10 bytes of an announced %d-byte frame allocated %d bytes", size, got)
	}
}

func TestLargeFrameReadInPiecesArrivesWhole(t *testing.T) {
	body := make([]byte, 3<<20)
	for i := range body {
		body[i] = byte(i * 7)
	}
	frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	// A reader that hands out at most 1000 bytes at a time.
	got, err := protocol.ReadFrame(io.LimitReader(&trickle{r: bytes.NewReader(frame)}, int64(len(frame))), make([]byte, 100), len(frame))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) {
		t.Fatal("the frame read in pieces differs from the one sent")
	}
}

type trickle struct{ r io.Reader }

func (t *trickle) Read(p []byte) (int, error) { return t.r.Read(p[:min(len(p), 1000)]) }

// A batch-sized frame is read into a buffer of exactly its size: it becomes
// the stored entry, so any spare capacity would be kept with it.
func TestBatchSizedFrameGetsABufferOfExactlyItsSize(t *testing.T) {
	for _, size := range []int{100, 128 << 10, 256 << 10, 256<<10 + 1, 3 << 20} {
		frame := append(binary.BigEndian.AppendUint32(nil, uint32(size)), make([]byte, size)...)
		got, err := protocol.ReadFrame(&trickle{r: bytes.NewReader(frame)}, nil, len(frame))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != size || cap(got) != size {
			t.Errorf("frame of %d bytes: len %d, cap %d", size, len(got), cap(got))
		}
	}
}

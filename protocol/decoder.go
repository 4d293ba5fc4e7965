package protocol

// Decoder decodes the frames of one connection, as DecodeFrame and
// ParsePayload do, but reuses the memory of what it decoded last instead of
// allocating it for every message: a SEND command (the Command of a Frame
// from DecodeFrame) holds until the next DecodeFrame, and the Metadata of a
// Payload from ParsePayload until the next ParsePayload. Whatever must
// outlive that is to be copied (proto.Clone). Other commands, and messages
// the fast decoders leave to proto.Unmarshal, are allocated as usual. A
// Decoder's zero value is ready; DecodeFrame and ParsePayload may be called
// from different goroutines, each method by one at a time.
type Decoder struct {
	send sendCommand
	md   metadata
}

// DecodeFrame decodes a frame body as the package's DecodeFrame does.
func (d *Decoder) DecodeFrame(body []byte) (Frame, error) { return decodeFrame(body, &d.send) }

// ParsePayload splits a SEND or MESSAGE payload as the package's
// ParsePayload does.
func (d *Decoder) ParsePayload(b []byte) (Payload, error) { return parsePayload(b, &d.md) }

// Package protocol reads and writes Pulsar binary-protocol frames: simple
// command frames, payload frames with their CRC32C checksum, the metadata and
// batch layout inside a payload, and builders for the commands the broker
// sends. The generated message types live in the pb sub-package.
package protocol

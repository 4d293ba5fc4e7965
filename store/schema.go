package store

import (
	"time"

	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Schema is one version of a topic's schema.
type Schema struct {
	Schema *pb.Schema // the definition; nil for a deletion
	At     time.Time  // when it was registered, by the broker clock
}

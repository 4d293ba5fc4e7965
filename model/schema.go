package model

// SchemaCompatibility is a schema compatibility strategy (Pulsar's
// SchemaCompatibilityStrategy): which new schemas a topic accepts.
type SchemaCompatibility string

// The schema compatibility strategies. A non-transitive strategy checks a
// new schema against the newest one, a transitive one against every version
// since the last deletion.
const (
	// SchemaAlwaysIncompatible refuses every new schema.
	SchemaAlwaysIncompatible SchemaCompatibility = "ALWAYS_INCOMPATIBLE"
	// SchemaAlwaysCompatible accepts every new schema.
	SchemaAlwaysCompatible SchemaCompatibility = "ALWAYS_COMPATIBLE"
	// SchemaBackward: the new schema can read data written with the newest.
	SchemaBackward SchemaCompatibility = "BACKWARD"
	// SchemaForward: the newest can read data written with the new schema.
	SchemaForward SchemaCompatibility = "FORWARD"
	// SchemaFull is both, Pulsar's default.
	SchemaFull SchemaCompatibility = "FULL"
	// SchemaBackwardTransitive is SchemaBackward against every version.
	SchemaBackwardTransitive SchemaCompatibility = "BACKWARD_TRANSITIVE"
	// SchemaForwardTransitive is SchemaForward against every version.
	SchemaForwardTransitive SchemaCompatibility = "FORWARD_TRANSITIVE"
	// SchemaFullTransitive is SchemaFull against every version.
	SchemaFullTransitive SchemaCompatibility = "FULL_TRANSITIVE"
)

// SchemaCompatibilities are the strategies in Pulsar's order: a strategy's
// index plus one is its ordinal in Pulsar's enum, where 0 is UNDEFINED (no
// strategy of this level).
var SchemaCompatibilities = []SchemaCompatibility{SchemaAlwaysIncompatible, SchemaAlwaysCompatible,
	SchemaBackward, SchemaForward, SchemaFull, SchemaBackwardTransitive, SchemaForwardTransitive, SchemaFullTransitive}

// Valid reports whether c is one of the strategies.
func (c SchemaCompatibility) Valid() bool {
	for _, s := range SchemaCompatibilities {
		if c == s {
			return true
		}
	}
	return false
}

// Transitive reports whether c checks every version.
func (c SchemaCompatibility) Transitive() bool {
	return c == SchemaBackwardTransitive || c == SchemaForwardTransitive || c == SchemaFullTransitive
}

// Package canonical puts P4Runtime entities into the canonical form the
// P4Runtime specification (v1.5, "Bytestrings") asks servers to return, so
// that an entity a controller wants and the same entity read back from a
// device compare equal.
//
// Canonical form means: every bytestring in its shortest form (leading zero
// bytes stripped, one byte kept for the value zero), match fields sorted by
// field id, don't-care matches (ternary mask 0, LPM prefix length 0, range
// covering nothing) omitted, and action parameters sorted by parameter id.
//
// For a clone session (a PacketReplicationEngineEntry holding a
// CloneSessionEntry) it means: every replica port as a shortest-form
// bytestring in Replica.port (the deprecated uint32 egress_port converted),
// and the replicas sorted by port and instance.
//
// TableEntry and clone sessions are handled today. Key and Entity return
// ErrUnsupported for other entity kinds (multicast groups included) so that
// callers fail loudly instead of silently skipping them.
package canonical

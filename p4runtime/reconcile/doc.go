// Package reconcile computes the updates that take a device from the
// entities it holds to the entities wanted.
//
// Entities are matched by key (for a TableEntry: table id, match fields and
// priority) after canonicalization (package canonical), so a device's
// canonical answer equals the desired entity however its bytestrings were
// padded and in whatever order its match fields and parameters came. An
// entity on the device but not wanted is deleted; one wanted but missing is
// inserted; one present with a different action (or metadata) is modified,
// with the whole desired entity since MODIFY replaces the entry. Wanting
// what the device has yields an empty Diff.
//
// Default entries (is_default_action) cannot be inserted or deleted: a
// desired one that differs from the device's (or was not read) is a
// MODIFY; a device's default entry that desired does not name is left
// alone.
//
// Clone sessions (a PacketReplicationEngineEntry holding a
// CloneSessionEntry) are matched by session id and compared on their
// replicas (in any order), class of service and packet length; they may be
// mixed with table entries and are written in the same phases (they do not
// depend on tables). Every clone session on the device is managed: mrcgen's
// build is their only writer, so one that is not wanted is deleted.
// ReadState reads both kinds from a device.
//
// TableEntry and clone sessions are supported today; other kinds
// (multicast groups included) are refused with canonical.ErrUnsupported
// rather than ignored.
package reconcile

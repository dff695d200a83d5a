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
// Only TableEntry is supported today; other kinds are refused with
// canonical.ErrUnsupported rather than ignored.
package reconcile

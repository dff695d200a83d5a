// Package p4rttest is an in-process P4Runtime server for tests, reached
// over a grpc/test/bufconn listener. It pins the protocol behaviour mrcgen
// relies on, as the P4Runtime specification v1.5 states it:
//
//   - arbitration per (device_id, role): the stream with the highest
//     election id (at least the highest ever seen) is primary; every change
//     is announced to all streams of the pair (OK to the primary,
//     ALREADY_EXISTS to backups, NOT_FOUND to all when there is none);
//     an unknown device_id on a first arbitration ends the stream with
//     NOT_FOUND, a changed device_id or role later with FAILED_PRECONDITION,
//     a duplicate election id with INVALID_ARGUMENT;
//   - Write: NOT_FOUND for an unknown device, PERMISSION_DENIED unless the
//     request's election id is the primary's, FAILED_PRECONDITION before a
//     pipeline is set, UNIMPLEMENTED for atomicity other than
//     CONTINUE_ON_ERROR (as PI does); INSERT of an existing entry
//     ALREADY_EXISTS, INSERT into a table that holds its P4Info size
//     RESOURCE_EXHAUSTED, MODIFY or DELETE of a missing one NOT_FOUND; a batch
//     with failures returns UNKNOWN with one p4.v1.Error per update in
//     google.rpc.Status.details, OK for the ones applied;
//   - clone sessions (PacketReplicationEngineEntry with a
//     CloneSessionEntry) with PI's checks and codes: session id 0 or above
//     32767 INVALID_ARGUMENT, INSERT of an existing id ALREADY_EXISTS,
//     MODIFY or DELETE of a missing one NOT_FOUND, a replica without a port
//     or a duplicate (port, instance) INVALID_ARGUMENT, a class of service
//     UNIMPLEMENTED, a packet length (truncation, which BMv2 lacks)
//     UNKNOWN; multicast groups are UNIMPLEMENTED;
//   - Read: wildcard reads (table_id 0, or a table_id without match) and
//     exact-key reads, answered with canonical bytestrings; clone sessions
//     by id (NOT_FOUND, failing the read, when absent) or all of them with
//     session_id 0, each replica port in the form it was written and the
//     replicas in the server's order (by instance, then port), not the
//     order written;
//   - default entries (is_default_action): read by a filter with table_id
//     (0: every table) and is_default_action, never by a wildcard table
//     read; only MODIFY, with PI's checks (no match or priority, no const
//     default, no TABLE_ONLY action; no action resets the program's
//     default, see Options.ProgramDefaults);
//   - Set/GetForwardingPipelineConfig with VERIFY, VERIFY_AND_COMMIT
//     (clears the table entries and clone sessions, resets the default
//     entries) and cookies
//     (COOKIE_ONLY and the others).
//
// Hooks let a test drop every stream (DropStreams), fail chosen updates
// (SetWriteHook) or whole Write RPCs (SetWriteRPCHook) and count what it
// received (Stats).
//
// It is a test double: it stores table entries and clone sessions only and
// never stands in for BMv2 in tests of forwarding behaviour.
package p4rttest

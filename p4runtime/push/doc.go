// Package push brings P4Runtime devices to a desired state: the entry point
// the mrcgen CLI calls.
//
// PushDevice, for one device: checks every desired entity against the
// P4Info before connecting; becomes primary controller; installs the
// pipeline unless the device already has the same cookie; reads the
// device's table entries, clone sessions and default entries (one Read RPC,
// sent alongside the cookie's); computes the difference
// (package reconcile); and writes it make-before-break (reconcile.Diff.Plan),
// each phase one batched Write: clone session inserts and modifies; table
// inserts and modifies; table deletes; clone session deletes. A table whose
// P4Info size cannot hold its new entries next to the old ones gets its
// deletes first (that table only). With DryRun it connects without
// arbitrating, writes nothing and returns the Diff. Pushing the same state
// twice writes nothing the second time.
//
// A push stops at the first phase that fails (a refused update or a failed
// RPC; the phase itself runs to its end across refused updates, and stops
// at a failed RPC). What the device then holds:
//
//   - pipeline push failed (SetForwardingPipelineConfig refused or lost):
//     nothing of this push was written; the device runs what it ran before
//     (a device given a new pipeline by a VERIFY_AND_COMMIT that succeeded
//     has empty tables and no clone sessions until the next push);
//   - insert/modify phase partly failed: every old entry is still there
//     (nothing was deleted), the applied inserts and modifies are in, the
//     refused ones are not (a refused MODIFY leaves the old action): the
//     device holds the old state plus part of the new one, each route
//     either old or new, none missing; except in a table that was over
//     capacity, whose removals went first;
//   - delete phase failed: the whole new state is in; some entries (or
//     clone sessions) that should have gone are still there.
//
// Re-running the push completes it from whatever the device holds. Result
// counts exactly the updates the device applied.
//
// PushAll runs PushDevice for many devices with bounded parallelism; a
// failing device does not stop the others, and the returned error names
// every failed device.
package push

// Package client is a P4Runtime controller for one device.
//
// A Client holds one gRPC connection to a P4Runtime server (for mrcgen,
// BMv2 simple_switch_grpc) for one (device_id, role) with one election id.
// WaitPrimary starts a StreamChannel supervisor goroutine that sends a
// MasterArbitrationUpdate, tracks whether the server made this client the
// primary (status OK) or a backup (ALREADY_EXISTS, or NOT_FOUND when there
// is no primary), and, when the stream breaks, reconnects with exponential
// backoff and arbitrates again. Status, Primary and Watch expose that state.
//
// Write splits a list of updates into batches that stay under the gRPC send
// limit and a maximum number of updates, sends them (a few in flight) with
// CONTINUE_ON_ERROR atomicity (the only one PI implements) and decodes the
// per-update p4.v1.Error details of partly failed batches into a
// *WriteError. Per-update failures do not stop it; an RPC-level failure
// (not primary, transport, lost details) does, and the WriteError then
// says exactly how many updates were applied, in doubt and not sent. Updates that depend on each other (delete before insert of
// the same key, an action profile member before the entry using it) must go
// in separate Write calls: a server may reorder the updates of one batch.
//
// SetPipeline installs a forwarding pipeline unless the device already
// reports the same cookie. Read returns entities for a list of filters.
//
// The package prints nothing and keeps no global state. Messages go to the
// *slog.Logger of Config (discarded by default); a plaintext connection is
// allowed only with Transport.Insecure, and is then reported by Warnings
// so that the caller can warn loudly.
package client

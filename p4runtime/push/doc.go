// Package push brings P4Runtime devices to a desired state: the entry point
// the mrcgen CLI calls.
//
// PushDevice, for one device: checks every desired entity against the
// P4Info before connecting; becomes primary controller; installs the
// pipeline unless the device already has the same cookie; reads the
// device's table entries and clone sessions; computes the difference
// (package reconcile); and writes it in three ordered phases (deletes,
// modifies, inserts), each in batches, clone sessions with the table
// entries. With DryRun it connects without arbitrating, writes nothing and
// returns the Diff. Pushing the same state twice writes nothing the second
// time.
//
// PushAll runs PushDevice for many devices with bounded parallelism; a
// failing device does not stop the others, and the returned error names
// every failed device.
package push

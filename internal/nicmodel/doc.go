// Package nicmodel is the Go model of the generated NIC pipeline program
// (p4/emit/nic.p4.tmpl, docs/protocol.md sections 4 to 6): frame in, frames
// out, port by port, with the program's tables, registers and counters.
//
// The P4 program is the NIC. This package does what it does, step for step,
// so that a simulator can run the NIC where BMv2 cannot go (131,072 of them,
// at line rate). It is not a second design: the differential test in
// bmv2-tests (TestNICModelDifferential) feeds seeded random scenarios to the
// program on simple_switch_grpc and to this model, and requires every frame
// each emits (port and bytes) and every counter to be equal. Where they
// differ, the program and protocol.md are the reference.
//
// # What is modelled
//
// The v1model semantics the program relies on, as BMv2's simple_switch
// implements them:
//
//   - The parser extracts Ethernet, the outer IPv6 (plane ports only), the
//     inner IPv6, UDP, BTH and the opcode's MRC headers; a frame too short
//     for a header stops the parse there (the packet still goes through
//     ingress, with the headers extracted so far).
//   - The deparser emits the valid headers in their fixed order, then the
//     bytes the parser did not extract (the payload); truncate(n) cuts the
//     result to n bytes.
//   - resubmit_preserving_field_list(1) runs ingress again on the original
//     frame with every metadata field reset but tries; register writes of
//     the earlier pass stay.
//   - clone_preserving_field_list(I2E, session, 2) sends a copy of the
//     ORIGINAL frame, parsed again, to egress on the session's port, with
//     the metadata of field list 2 as they are at the end of ingress and
//     every other metadata field zero. A clone is made even when the packet
//     itself is dropped or resubmitted.
//   - Counters count packets; plane_tx also counts bytes, the length of the
//     frame as it entered the NIC (BMv2 counts a packet's ingress length).
//   - Register words read as zero until written.
//
// # Shape
//
// A NIC holds its own tables (qp_send, qp_recv, ev_state, rx_plane,
// plane_self, clone sessions), its registers and its counters; the tables
// every NIC of a fabric holds alike (ev_set, ev_backup and the uSID
// templates: the build's "common" part) live in a Common that many NICs
// share read-only. Tables are written with the build's own entries
// (tables/entry), as P4Runtime writes them to the program.
//
// Process takes one frame and returns what the NIC emits for it: each
// output frame as its rewritten headers (owned by the NIC, valid until the
// next call) followed by the untouched rest of the input frame (the
// payload, never copied). It allocates nothing per frame; per-QP register
// state is allocated when a QP's index is first written, so that a NIC no
// packet touches costs only its tables.
package nicmodel

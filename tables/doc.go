// Package tables computes the static forwarding state of every device of a
// fabric: the uSID tables of every T0 and T1 switch and the path-building
// tables of every NIC, as entries of the tables that p4/schema defines.
//
// The entries are values of tables/entry, a compact form that lets the
// 3 million switch entries of the largest fabric be computed and written
// without holding them as protobuf messages. tables/tabletext writes and
// reads them as the table files of a build.
package tables

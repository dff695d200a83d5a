// Package entry is the model of one table entry of an mrcgen program: the
// table, the match values, the action and its parameters, held as integers
// against p4/schema. Entry.Proto gives the P4Runtime p4.v1 entity and
// FromProto decodes one back, checking every id, width and bytestring.
package entry

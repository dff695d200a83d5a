// Package infoindex indexes a P4Info message by id so that entities can be
// checked against it before anything is written to a device, and rendered
// with the control-plane names a person can read (table, match field,
// action and parameter names) instead of numeric ids.
package infoindex

// Package gates holds every built-in gate, one file per gate, and the explicit
// registry Builtin. Gates are built once per config load from their options
// (validated, compiled) and are safe for concurrent use; nothing is parsed or
// compiled on the request path. See README.md for the table of gates.
package gates

// Package gates holds every built-in gate and the explicit registry Builtin.
// Gates are built once per config load from their options (validated,
// compiled) and are safe for concurrent use; nothing is parsed or compiled
// on the request path.
//
// A gate's own code is in the file named for it, the factory name in lower
// case (bidsanity.go for bidSanity): options, validation, constructor and
// checks. What several gates use is in files named for what it does
// (domain.go, money.go, taxonomy.go, walk.go, ...); a shared file never
// reaches into a gate's file, and no gate into another's (checked by
// cmd/bidguard's deps_test.go). Every rejection carries named codes
// (engine/codes.go). See README.md for the table of gates.
package gates

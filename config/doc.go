// Package config is bidguard's configuration: the model of the YAML file
// (Config, whose field comments are the configuration reference), its
// defaults (DefaultConfig), strict decoding that names the file and line of
// every problem (Parse, LoadFile, DecodeOptions for a gate's options
// block), the seat directory, upstream URLs (ParseUpstreamURL), and
// validation, one function per block, that reports every error of a load
// together. A value of the wrong type is a *KeyError naming its key path
// (policy.gates[2].options.maxMs: want a number, got "twenty"); Parse
// returns the decoded config with its errors, so that the checks that need
// the gate registry run in the same pass.
//
// What needs the gate registry is checked when the engine compiles a
// Config into a snapshot: gate names, modes and options, and the deadline's
// reserve for tmaxGuard. Everything else is checked here, once.
//
// Features whose settings have another shape than their block of the file
// get them from the Config, converted in one place: QuarantineSettings for
// the anomaly detector, AuditOptions for the audit log, CaptureOptions for
// the capture writer. The quarantine
// package validates its own settings (quarantine.Settings.Validate); Parse
// reports those errors with the file's name, so `config validate` and a
// running detector never disagree. RestartKeys lists the keys a reload
// cannot apply, from a table; KeepRestartKeys gives a reloaded config their
// running values, so that the rest of the file applies.
//
// An upstream's request keys (upstream_keys.go: headers, forwardQuery,
// tls, breaker, compressAbove) are validated with the other upstream keys;
// headers.set values from ${env:NAME} and ${file:PATH} are resolved at
// every load (SetHeaders), never printed, and their files, like the tls
// files, are listed for reload polling (UpstreamFiles).
//
// A Config is a value: Parse returns a new one, and nothing changes it
// after the snapshot compiled from it is shared.
//
// A reload decodes again only the seats whose text changed: the seat files
// of the last seatsDir read and the entries of the `seats:` block of the
// last config file read (seatsplit.go) are kept, without their gate
// entries, which SeatConfig.WithGates decodes again when the engine needs
// them; SeatConfig.Origin tells the engine which seats are unchanged.
//
// YAML is read by readFast (yamlfast.go) when a document is in the subset
// configs are written in: block and flow mappings and sequences, plain
// scalars on one line that resolve to strings, decimal integers, booleans
// or null, quoted scalars on one line, comments, LF or CRLF. It builds the
// tree yaml.v3's parser builds (comments aside, which nothing here reads),
// about three times faster on a large config and six times on a seat file,
// and a strict yaml.v3 Decoder decodes that tree (adoptTree). yaml.v3 is the
// reference and the fallback: a document outside the subset, or one whose
// tree does not decode without an error, is read by yaml.v3 alone, so a
// config means, and its errors read, the same either way
// (TestReadFastAgreesWithYAMLv3 and FuzzYAMLFast compare the trees,
// TestDecodeFastAgrees the configs and errors).
//
// config imports no other bidguard package but configs (the embedded
// default policy) and the leaves audit, capture and quarantine (their
// settings types).
package config

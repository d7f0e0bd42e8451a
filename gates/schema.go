package gates

// schema (scanning): validates the raw response (or, with
// target: input, the raw request) against a JSON Schema, draft 2020-12 unless
// the schema's $schema names another draft the library embeds. The schema
// file is read and compiled when the config loads; $schema and $ref are
// resolved from the library's embedded metaschemas and local files only,
// never fetched over the network. Each issue (a leaf of the validator's
// error tree) is attributed by its instance location: under
// seatbid.<i>.bid.<j> to that bid (200 / 350), anywhere else to the response
// (3 / 300). A failing input target rejects the response.
//
// Validation uses github.com/santhosh-tekuri/jsonschema/v6, which decodes the
// document into map[string]any: this gate allocates on every request.

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/bidguard/bidguard/engine"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schemaOptions configures schema.
type schemaOptions struct {
	// File is the JSON Schema, relative to the config file (required).
	File string `yaml:"file"`
	// Target is output (the response, default) or input (the request;
	// default policy only).
	Target string `yaml:"target"`
}

const (
	schemaTargetOutput = "output"
	schemaTargetInput  = "input"
	// maxSchemaIssues is how many issues details.issues lists.
	maxSchemaIssues = 5
	// maxSchemaMessage caps a validator message in a reason.
	maxSchemaMessage = 200
)

func (o *schemaOptions) validate(env engine.Env) error {
	var errs []error
	if o.File == "" {
		errs = append(errs, errors.New("file is required"))
	}
	switch o.Target {
	case schemaTargetOutput:
	case schemaTargetInput:
		if env.InSeat {
			errs = append(errs, errors.New("target: input is not allowed in a seat policy"))
		}
	default:
		errs = append(errs, errors.New("target must be output or input"))
	}
	return errors.Join(errs...)
}

type schema struct {
	sch   *jsonschema.Schema
	input bool
}

var schemaFactory = engine.Factory{
	Name: "schema", ResultName: "schema", Kind: engine.Scan,
	Options: func() any { return &schemaOptions{Target: schemaTargetOutput} },
	New: func(opts any, env engine.Env) (engine.Gate, error) {
		o := opts.(*schemaOptions)
		if err := o.validate(env); err != nil {
			return nil, err
		}
		path := o.File
		if !filepath.IsAbs(path) {
			path = filepath.Join(env.Dir, path)
		}
		path, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("file: %w", err)
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.UseLoader(localSchemaLoader{watch: env.Watch})
		sch, err := c.Compile(path)
		if err != nil {
			return nil, fmt.Errorf("file: %w", err)
		}
		return &schema{sch: sch, input: o.Target == schemaTargetInput}, nil
	},
}

// localSchemaLoader loads schema documents from local files only; every
// other URL scheme is refused, so nothing is fetched over the network.
// Each file it reads is watched for reload.
type localSchemaLoader struct {
	watch func(string)
}

func (l localSchemaLoader) Load(u string) (any, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return nil, err
	}
	if pu.Scheme != "file" {
		return nil, fmt.Errorf("%s is not a local file: schemas are never fetched over the network", u)
	}
	path, err := jsonschema.FileLoader{}.ToFile(u)
	if err != nil {
		return nil, err
	}
	if l.watch != nil {
		l.watch(path)
	}
	return jsonschema.FileLoader{}.Load(u)
}

func (g *schema) Kind() engine.Kind { return engine.Scan }

// schemaIssue is one entry of details.issues.
type schemaIssue struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// schemaDetails is a failing verdict's details.
type schemaDetails struct {
	Issues []schemaIssue `json:"issues"`
	Total  int           `json:"total"`
}

// issueGroup collects the issues of one bid (bid >= 0) or of the response.
type issueGroup struct {
	bid     int
	details schemaDetails
}

var schemaPrinter = message.NewPrinter(language.English)

// Scan validates the document and reports each bid's issues and the
// response-level issues.
func (g *schema) Scan(in *engine.Input, sc *engine.Scope) { g.scan(in, sc) }

func (g *schema) scan(in *engine.Input, sc scanScope) {
	raw := in.RawResponse
	if g.input {
		raw = in.RawRequest
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err == nil {
		err = g.sch.Validate(doc)
	}
	if err == nil {
		return
	}
	var leaves []*jsonschema.ValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		leaves = schemaLeaves(ve, leaves)
	} else {
		leaves = append(leaves, &jsonschema.ValidationError{ErrorKind: nil})
	}
	sortSchemaIssues(leaves)
	var groups []*issueGroup
	byBid := map[int]*issueGroup{}
	for _, l := range leaves {
		bid := -1
		if !g.input {
			bid = schemaBidIndex(in, l.InstanceLocation)
		}
		if bid >= 0 && !sc.InScope(bid) || bid < 0 && !sc.ResponseLevel() {
			continue
		}
		gr := byBid[bid]
		if gr == nil {
			gr = &issueGroup{bid: bid}
			byBid[bid] = gr
			groups = append(groups, gr)
		}
		gr.details.Total++
		if len(gr.details.Issues) < maxSchemaIssues {
			gr.details.Issues = append(gr.details.Issues, schemaIssue{Path: schemaPath(l.InstanceLocation), Message: schemaMessage(l, err)})
		}
	}
	for _, gr := range groups {
		first := gr.details.Issues[0]
		noun := "issues"
		if gr.details.Total == 1 {
			noun = "issue"
		}
		reason := "schema validation failed (" + strconv.Itoa(gr.details.Total) + " " + noun + "): " + first.Path + ": " + first.Message
		loss, nbr := scanBidLoss, scanBidNBR
		if gr.bid < 0 {
			loss, nbr = scanResponseLoss, scanResponseNBR
		}
		if !sc.Hit(gr.bid, engine.Reject(reason, loss, nbr).WithDetails(gr.details)) {
			return
		}
	}
}

// schemaLeaves appends the leaves of the error tree: the issues.
func schemaLeaves(e *jsonschema.ValidationError, out []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return append(out, e)
	}
	for _, c := range e.Causes {
		out = schemaLeaves(c, out)
	}
	return out
}

// sortSchemaIssues orders issues by instance location (array indexes
// numerically), then by message, so that output is deterministic.
func sortSchemaIssues(l []*jsonschema.ValidationError) {
	sort.SliceStable(l, func(a, b int) bool {
		x, y := l[a].InstanceLocation, l[b].InstanceLocation
		for i := 0; i < len(x) && i < len(y); i++ {
			if x[i] == y[i] {
				continue
			}
			nx, ex := strconv.Atoi(x[i])
			ny, ey := strconv.Atoi(y[i])
			if ex == nil && ey == nil {
				return nx < ny
			}
			return x[i] < y[i]
		}
		if len(x) != len(y) {
			return len(x) < len(y)
		}
		return kindMessage(l[a]) < kindMessage(l[b])
	})
}

// schemaBidIndex maps an instance location under seatbid.<i>.bid.<j> to the
// bid's index in in.Bids, or -1.
func schemaBidIndex(in *engine.Input, loc []string) int {
	if len(loc) < 4 || !strings.EqualFold(loc[0], "seatbid") || !strings.EqualFold(loc[2], "bid") || in.Response == nil {
		return -1
	}
	si, err1 := strconv.Atoi(loc[1])
	bi, err2 := strconv.Atoi(loc[3])
	sbs := in.Response.SeatBid
	if err1 != nil || err2 != nil || si < 0 || si >= len(sbs) || bi < 0 || bi >= len(sbs[si].Bid) {
		return -1
	}
	k := bi
	for s := 0; s < si; s++ {
		k += len(sbs[s].Bid)
	}
	if k >= len(in.Bids) {
		return -1
	}
	return k
}

// schemaPath writes an instance location dotted (seatbid.0.bid.0.price);
// the document itself is "(root)".
func schemaPath(loc []string) string {
	if len(loc) == 0 {
		return "(root)"
	}
	return clipReason(strings.Join(loc, "."), maxQuoted)
}

func kindMessage(e *jsonschema.ValidationError) string {
	if e.ErrorKind == nil {
		return ""
	}
	return e.ErrorKind.LocalizedString(schemaPrinter)
}

// schemaMessage is the validator's message for one issue; a document the
// validator could not read reports the read error.
func schemaMessage(e *jsonschema.ValidationError, err error) string {
	if e.ErrorKind == nil {
		return clipReason(err.Error(), maxSchemaMessage)
	}
	return clipReason(kindMessage(e), maxSchemaMessage)
}

var _ engine.ScanGate = (*schema)(nil)

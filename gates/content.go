package gates

// content (scanning, plus an empty check): two checks.
//   - empty, a response-level check and the only one that judges a response
//     without bids: `null`, `{}` or no bid in seatbid[].bid[] fails with
//     "output is empty" (3 / 300). It is the "require at least one bid"
//     check; in a seat policy it does not run.
//   - refusal, scanning: a string value holding a refusal phrase of a
//     language model ("As an AI language model", "I can't help") is a broken
//     creative. Phrases match case-insensitively, with ’ read as ', any run
//     of whitespace read as one space, on word boundaries at both ends. A hit
//     inside seatbid[].bid[] rejects that bid (200 / 350), elsewhere the
//     response (3 / 300).
//
// The phrases are compiled at load into a byte trie over their normalised
// form (contentphrases.go); the text is normalised on the fly while the trie is walked, so
// nothing is lower-cased or copied per string. The trie is walked only from
// the places a cheap test cannot rule out. When every phrase holds a space
// (the built-in ones do), the text's white space is found sixteen bytes at
// a time, and only a rune of white space right after a byte that may end a
// phrase's part before its first space (for the built-in list 'i', 's' or
// 'm' in any case, or a byte outside ASCII) has the few places before it
// tried; text without white space is not read further. Otherwise the
// places that may begin a phrase are found eight bytes at a time (its
// first bytes, any case, after no ASCII letter when they need a word
// boundary, or a byte outside ASCII). FuzzContentDifferential holds the
// verdicts equal to the trie walked from every byte that may begin a
// phrase.

import (
	"errors"
	"fmt"

	"github.com/bidguard/bidguard/engine"
)

// contentOptions configures content.
type contentOptions struct {
	// CheckEmpty fails a response that holds no bid (default true; default policy only).
	CheckEmpty bool `yaml:"checkEmpty"`
	// CheckRefusals scans string values for refusal phrases (default true).
	CheckRefusals bool `yaml:"checkRefusals"`
	// ExtraPhrases are refusal phrases added to the built-in list.
	ExtraPhrases []string `yaml:"extraPhrases"`
	// MaxNodes is the most JSON values scanned in each bid, and outside the
	// bids (default 10000, > 0).
	MaxNodes int `yaml:"maxNodes"`
	// OnScanLimit is fail (reject a bid, or the response, not fully scanned;
	// the default) or pass.
	OnScanLimit string `yaml:"onScanLimit"`
}

const reasonEmpty = "output is empty"

// refusalPhrases are the built-in refusal phrases.
var refusalPhrases = []string{
	"i can't help", "i cannot help", "i can't assist", "i cannot assist",
	"i can't provide", "i cannot provide", "i can't do", "i cannot do",
	"i can't access", "i cannot access", "i can't complete", "i cannot complete",
	"i can't fulfill", "i cannot fulfill", "i don't have access", "i do not have access",
	"i don't have the ability", "i do not have the ability", "as an ai language model",
	"as an ai model", "i'm an ai", "i am an ai", "i'm just an ai", "i'm sorry, but i can't",
	"i am unable to", "i'm unable to",
}

type content struct {
	checkEmpty, refusals bool
	inSeat               bool
	phrases              phraseSet
	limit                scanLimit
}

var contentFactory = engine.Factory{
	Name: "content", ResultName: "content", Kind: engine.Scan,
	Options: func() any {
		return &contentOptions{CheckEmpty: true, CheckRefusals: true, MaxNodes: defaultMaxNodes, OnScanLimit: onScanLimitFail}
	},
	New: func(opts any, env engine.Env) (engine.Gate, error) {
		o := opts.(*contentOptions)
		var errs []error
		lim, err := newScanLimit(o.MaxNodes, o.OnScanLimit)
		errs = append(errs, err)
		for i, p := range o.ExtraPhrases {
			if normalisePhrase(p) == "" {
				errs = append(errs, fmt.Errorf("extraPhrases[%d] must not be empty", i))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		g := &content{checkEmpty: o.CheckEmpty, refusals: o.CheckRefusals, inSeat: env.InSeat, limit: lim}
		g.phrases = newPhraseSet(append(append([]string{}, refusalPhrases...), o.ExtraPhrases...))
		return g, nil
	},
}

func (g *content) Kind() engine.Kind { return engine.Scan }

// JudgesEmpty is true when the empty check runs: checkEmpty, default policy.
func (g *content) JudgesEmpty() bool { return g.checkEmpty && !g.inSeat }

// Scan runs the empty check, then the refusal scan.
func (g *content) Scan(in *engine.Input, sc *engine.Scope) { g.scan(in, sc) }

func (g *content) scan(in *engine.Input, sc scanScope) {
	if g.JudgesEmpty() && sc.ResponseLevel() && len(in.Bids) == 0 {
		sc.Hit(-1, engine.Reject(reasonEmpty, scanResponseLoss, scanResponseNBR))
		return
	}
	if g.refusals && len(in.Bids) > 0 {
		scanResponse(sc, g, g.limit)
	}
}

func (g *content) match(s []byte) string { return g.phrases.find(s) }

func (g *content) minLen() int { return g.phrases.minLen }

var (
	_ engine.ScanGate   = (*content)(nil)
	_ engine.EmptyJudge = (*content)(nil)
	_ shortBound        = (*content)(nil)
)

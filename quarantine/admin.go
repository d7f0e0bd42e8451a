package quarantine

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// ErrNoToken is what a token source returns when no admin token is
// configured (admin.tokenFile is ""): the endpoints then answer 403.
var ErrNoToken = errors.New("admin.tokenFile is not set")

// Admin paths.
const (
	pathStatus  = "/quarantine"
	pathPrefix  = "/quarantine/"
	pathRelease = "/release"
)

// Handler serves the admin endpoints, each behind
// `Authorization: Bearer <token>`, the token compared in constant time:
//
//   - GET /quarantine: Status as JSON.
//   - POST /quarantine/<seat>/release: Release of the seat key (a qualified
//     key as "/quarantine/dsp-a/512/release" or with its '/' escaped);
//     200 with {"seat", "released": true}, 404 when it is not quarantined,
//     409 for a quarantine.seats entry.
//
// token is called on every request (a rotated token file takes effect at
// once). ErrNoToken answers 403 on every path: the endpoints are never open
// without a token; any other error, or an empty token, also answers 403 and
// is logged at most once a minute. A missing, malformed or wrong
// Authorization header answers 401 with WWW-Authenticate: Bearer. Other
// paths answer 404, other methods 405 with Allow. Error bodies are one line
// of plain text that never echoes the request.
func (d *Detector) Handler(token func() ([]byte, error)) http.Handler {
	return &admin{d: d, token: token}
}

type admin struct {
	d       *Detector
	token   func() ([]byte, error)
	lastLog atomic.Int64
}

func (a *admin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if path != pathStatus && !strings.HasPrefix(path, pathPrefix) {
		http.NotFound(w, r)
		return
	}
	if !a.authorized(w, r) {
		return
	}
	if path == pathStatus {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: use GET", http.StatusMethodNotAllowed)
			return
		}
		writeJSON(w, http.StatusOK, a.d.Status())
		return
	}
	seat, ok := strings.CutSuffix(strings.TrimPrefix(path, pathPrefix), pathRelease)
	if !ok || seat == "" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed: use POST", http.StatusMethodNotAllowed)
		return
	}
	switch err := a.d.Release(seat); {
	case errors.Is(err, ErrOperatorSeat):
		http.Error(w, err.Error(), http.StatusConflict)
	case errors.Is(err, ErrNotQuarantined):
		http.Error(w, err.Error(), http.StatusNotFound)
	case err != nil:
		http.Error(w, "release failed", http.StatusInternalServerError)
	default:
		writeJSON(w, http.StatusOK, struct {
			Seat     string `json:"seat"`
			Released bool   `json:"released"`
		}{seat, true})
	}
}

// authorized answers 403 or 401 and returns false unless the request
// carries the token.
func (a *admin) authorized(w http.ResponseWriter, r *http.Request) bool {
	tok, err := a.token()
	if errors.Is(err, ErrNoToken) {
		http.Error(w, "quarantine endpoints are disabled: set admin.tokenFile", http.StatusForbidden)
		return false
	}
	if err != nil || len(tok) == 0 {
		if err == nil {
			err = errors.New("the token file is empty")
		}
		now := time.Now().UnixNano()
		if last := a.lastLog.Load(); now-last >= int64(time.Minute) && a.lastLog.CompareAndSwap(last, now) {
			a.d.log.Error("quarantine endpoints: no usable admin token; answering 403", "error", err)
		}
		http.Error(w, "admin token unavailable", http.StatusForbidden)
		return false
	}
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	given := sha256.Sum256([]byte(strings.TrimSpace(cred)))
	want := sha256.Sum256(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(given[:], want[:]) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="bidguard"`)
		http.Error(w, "unauthorized: send Authorization: Bearer <admin token>", http.StatusUnauthorized)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, "encoding failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

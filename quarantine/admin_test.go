package quarantine

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const secret = "s3cret-token"

// quarantinedSim runs four seats, s0 and dsp-a/s1 (a seat policy's key)
// quarantined for price, s2 listed in quarantine.seats.
func quarantinedSim(t *testing.T) *sim {
	set := defaultSettings()
	set.Operator = []string{"s2"}
	set.Qualified = []string{"dsp-a/s1"}
	seats := steadySeats(6)
	seats[0].median = jumpAt(hour, 1, 10)
	seats[1].upstream = "dsp-a"
	seats[1].median = jumpAt(hour, 1, 10)
	s := newSim(t, set, seats...)
	s.run(hour+2*time.Minute, tick, nil)
	require.Equal(t, "price", s.state("s0"))
	require.Equal(t, "price", s.d.Quarantined("dsp-a", "s1"))
	require.Empty(t, s.d.Quarantined("dsp-b", "s1"))
	return s
}

func call(h http.Handler, method, path, auth string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestAdminAuth(t *testing.T) {
	s := quarantinedSim(t)
	h := s.d.Handler(func() ([]byte, error) { return []byte(secret), nil })
	f := func(method, path, auth string, want int) *httptest.ResponseRecorder {
		t.Helper()
		w := call(h, method, path, auth)
		require.Equal(t, want, w.Code, "%s %s %q: %s", method, path, auth, w.Body.String())
		return w
	}
	for _, auth := range []string{"", "Bearer", "Bearer ", "Bearer wrong", "Basic " + secret, "Bearer " + secret + "x", secret} {
		w := f("GET", "/quarantine", auth, 401)
		require.Equal(t, `Bearer realm="bidguard"`, w.Header().Get("WWW-Authenticate"))
		require.NotContains(t, w.Body.String(), "s0", "nothing leaks")
		f("POST", "/quarantine/s0/release", auth, 401)
	}
	require.Equal(t, "price", s.state("s0"), "nothing released without the token")
	f("GET", "/quarantine", "bearer "+secret, 200) // the scheme is case-insensitive
	f("GET", "/elsewhere", "", 404)

	// No token configured, an unreadable or empty token file: 403 whatever
	// the header says; never open.
	for _, tok := range []func() ([]byte, error){
		func() ([]byte, error) { return nil, ErrNoToken },
		func() ([]byte, error) { return nil, errors.New("open /etc/bidguard/token: permission denied") },
		func() ([]byte, error) { return []byte{}, nil },
	} {
		h := s.d.Handler(tok)
		for _, auth := range []string{"", "Bearer ", "Bearer " + secret} {
			w := call(h, "GET", "/quarantine", auth)
			require.Equal(t, 403, w.Code)
			w = call(h, "POST", "/quarantine/s0/release", auth)
			require.Equal(t, 403, w.Code)
		}
	}
	require.Equal(t, 2, lines(s.log.String(), "no usable admin token"), "six requests each, logged once a minute per handler")
	require.Contains(t, call(s.d.Handler(func() ([]byte, error) { return nil, ErrNoToken }), "GET", "/quarantine", "").Body.String(),
		"quarantine endpoints are disabled: set admin.tokenFile")
}

func TestAdminStatus(t *testing.T) {
	s := quarantinedSim(t)
	h := s.d.Handler(func() ([]byte, error) { return []byte(secret), nil })
	w := call(h, "GET", "/quarantine", "Bearer "+secret)
	require.Equal(t, 200, w.Code)
	require.Equal(t, "application/json", w.Header().Get("Content-Type"))
	var st Status
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &st))
	require.True(t, st.Enabled)
	require.Equal(t, "1m0s", st.Window)
	require.Equal(t, 6, st.ActiveSeats)
	require.Equal(t, 3, st.QuarantinedSeats)
	var keys []string
	for _, seat := range st.Seats {
		keys = append(keys, seat.Seat+" "+seat.State+" "+seat.Signal)
	}
	require.Equal(t, []string{"dsp-a/s1 quarantined price", "s0 quarantined price", "s2 quarantined operator",
		"s3 normal ", "s4 normal ", "s5 normal "}, keys)
	q := st.Seats[1]
	require.Equal(t, q.Since.Add(10*time.Minute), *q.Until, "ttl ends after the calm period would")
	require.Len(t, q.Signals, 4)
	price := q.Signals[1]
	require.Equal(t, "price", price.Signal)
	require.True(t, price.Judged && price.Over)
	require.Greater(t, price.Value, 5.0)
	require.Equal(t, 5.0, price.Threshold)
	require.NotNil(t, price.OverSince)
	require.Nil(t, st.Seats[2].Since, "an operator seat has no since")
	require.Nil(t, st.Seats[2].Until, "nor an until")

	w = call(h, "POST", "/quarantine", "Bearer "+secret)
	require.Equal(t, 405, w.Code)
	require.Equal(t, "GET, HEAD", w.Header().Get("Allow"))
	require.Equal(t, 200, call(h, "HEAD", "/quarantine", "Bearer "+secret).Code)
}

func TestAdminRelease(t *testing.T) {
	s := quarantinedSim(t)
	h := s.d.Handler(func() ([]byte, error) { return []byte(secret), nil })
	auth := "Bearer " + secret
	w := call(h, "GET", "/quarantine/s0/release", auth)
	require.Equal(t, 405, w.Code)
	require.Equal(t, "POST", w.Header().Get("Allow"))
	require.Equal(t, "price", s.state("s0"))

	w = call(h, "POST", "/quarantine/s0/release", auth)
	require.Equal(t, 200, w.Code, w.Body.String())
	require.JSONEq(t, `{"seat":"s0","released":true}`, w.Body.String())
	require.Empty(t, s.state("s0"))
	rel := s.eventsOf(Released)
	require.Len(t, rel, 1)
	require.Equal(t, Event{Kind: Released, Seat: "s0", Signal: Price, Reason: "released by an operator", At: s.now, Version: "v1"}, rel[0])
	require.Contains(t, s.log.String(), `msg="seat released" seat=s0 signal=price reason="released by an operator"`)

	w = call(h, "POST", "/quarantine/s0/release", auth)
	require.Equal(t, 404, w.Code)
	require.Equal(t, "seat is not quarantined\n", w.Body.String())
	require.Equal(t, 404, call(h, "POST", "/quarantine/s3/release", auth).Code, "tracked, not quarantined")
	require.Equal(t, 404, call(h, "POST", "/quarantine/nobody/release", auth).Code)
	w = call(h, "POST", "/quarantine/s2/release", auth)
	require.Equal(t, 409, w.Code)
	require.True(t, strings.HasPrefix(w.Body.String(), "seat is listed in quarantine.seats"))
	require.Equal(t, "operator", s.state("s2"))
	require.Equal(t, 404, call(h, "POST", "/quarantine//release", auth).Code)
	require.Equal(t, 404, call(h, "POST", "/quarantine/s0/free", auth).Code)

	// A qualified key: its '/' as is, or escaped.
	require.Equal(t, 200, call(h, "POST", "/quarantine/dsp-a%2Fs1/release", auth).Code)
	require.Empty(t, s.d.Quarantined("dsp-a", "s1"))
	require.Len(t, s.eventsOf(Released), 2)
}

func TestAdminReleaseQualifiedPath(t *testing.T) {
	s := quarantinedSim(t)
	h := s.d.Handler(func() ([]byte, error) { return []byte(secret), nil })
	require.Equal(t, 200, call(h, "POST", "/quarantine/dsp-a/s1/release", "Bearer "+secret).Code)
	require.Empty(t, s.d.Quarantined("dsp-a", "s1"))
}

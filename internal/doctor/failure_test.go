package doctor

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis-prober/redis-prober/internal/host"
	"github.com/redis-prober/redis-prober/internal/redistest"
	"github.com/redis-prober/redis-prober/prober"
)

// TestDoctorTellsWhyATargetFailed is issue 40's: a Redis that refused our
// password was "NOT REACHABLE", and an HTTP server on the port was
// "RESP guard: unknown reply type byte 'H'". Each failure is named for
// what to fix, in the text, the JSON's failure and the critical ids.
func TestDoctorTellsWhyATargetFailed(t *testing.T) {
	srv := redistest.Start(t, "requirepass sekrit")
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	webAddr := strings.TrimPrefix(web.URL, "http://")
	for _, tc := range []struct {
		name    string
		ep      prober.Endpoint
		failure string
		heading string
	}{
		{"wrong password", prober.Endpoint{Network: "tcp", Addr: srv.Addr(), Password: "wrong"}, FailureCredentials,
			"REFUSED OUR CREDENTIALS (WRONGPASS/NOAUTH)"},
		{"no password", prober.Endpoint{Network: "tcp", Addr: srv.Addr()}, FailureCredentials,
			"REFUSED OUR CREDENTIALS (WRONGPASS/NOAUTH)"},
		{"an HTTP server", prober.Endpoint{Network: "tcp", Addr: webAddr}, FailureNotRedis, "NOT A REDIS SERVER"},
		{"nothing listening", prober.Endpoint{Network: "tcp", Addr: "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))}, FailureUnreachable,
			"NOT REACHABLE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := Run(t.Context(), Config{Names: []string{"r"}, Endpoints: []prober.Endpoint{tc.ep},
				Paths: host.DefaultPaths(), Log: slog.New(slog.DiscardHandler)})
			tr := rep.Targets[0]
			if tr.Reachable || tr.Failure != tc.failure {
				t.Fatalf("reachable %v, failure %q (error %q): want %q", tr.Reachable, tr.Failure, tr.Error, tc.failure)
			}
			if !slices.Contains(rep.Critical, "r/"+tc.failure) {
				t.Errorf("critical %q, want r/%s", rep.Critical, tc.failure)
			}
			var text strings.Builder
			rep.WriteText(&text, false)
			if want := "Redis r: " + tc.heading; !strings.Contains(text.String(), want) {
				t.Errorf("text lacks %q:\n%s", want, text.String())
			}
		})
	}
}

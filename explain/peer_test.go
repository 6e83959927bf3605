package explain

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/redis-prober/redis-prober/internal/redistest"
)

// peersCacheEnv names where scripts/peers.sh put the newer servers (the
// Makefile's PEERS_CACHE); unset, its default for root.
const peersCacheEnv = "PEERS_CACHE"

// startPeer starts a server of flavor at least major.minor for a source only
// that server has (Valkey 9.1's io threads' times, Redis 8's KEYSIZES): the
// selected binary (REDIS_SERVER_BIN) when it is one, else the peer of that
// name in the peers' cache, else the test skips (fails under CI=true).
func startPeer(t *testing.T, peer, flavor string, major, minor int, directives ...string) *redistest.Server {
	t.Helper()
	if v := redistest.BinaryVersion(t); v.Flavor == flavor && v.AtLeast(major, minor) {
		return redistest.Start(t, directives...)
	}
	cache := os.Getenv(peersCacheEnv)
	if cache == "" {
		cache = "/var/cache/redis-prober-peers"
	}
	bins, _ := filepath.Glob(filepath.Join(cache, peer, "bin", "*-server"))
	if len(bins) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no %s server under %s; CI runs scripts/peers.sh first", peer, cache)
		}
		t.Skipf("SKIPPING: no %s server under %s (scripts/peers.sh fetches it)", peer, cache)
	}
	// The harness starts the binary the environment names; the version
	// check of a matrix run is for the selected binary, not this one.
	t.Setenv(redistest.BinEnv, bins[0])
	t.Setenv(redistest.VersionEnv, "")
	if v := redistest.BinaryVersion(t); v.Flavor != flavor || !v.AtLeast(major, minor) {
		t.Fatalf("%s is %s, want %s %d.%d+", bins[0], v, flavor, major, minor)
	}
	return redistest.Start(t, directives...)
}

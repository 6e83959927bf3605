package collector

import "testing"

func TestSecretParam(t *testing.T) {
	for name, want := range map[string]bool{
		"requirepass": true, "masterauth": true, "tls-key-file-pass": true, "tls-client-key-file-pass": true,
		"masteruser": false, "maxmemory": false, "appendfsync": false, "save": false, "": false,
	} {
		if got := SecretParam(name); got != want {
			t.Errorf("SecretParam(%q) = %v, want %v", name, got, want)
		}
	}
	// The collectors read no secret (checks.go: their values go to the
	// status page).
	for _, p := range configParams() {
		if SecretParam(p) {
			t.Errorf("collector reads secret CONFIG parameter %s", p)
		}
	}
}

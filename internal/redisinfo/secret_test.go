package redisinfo

import "testing"

func TestSecretParam(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"requirepass": true, "masterauth": true, "tls-key-file-pass": true, "tls-client-key-file-pass": true,
		"masteruser": false, "maxmemory": false, "appendfsync": false, "save": false, "": false,
	} {
		if got := SecretParam(name); got != want {
			t.Errorf("SecretParam(%q) = %v, want %v", name, got, want)
		}
	}
}

package engine

import (
	"strings"
	"testing"
)

func TestParseAddr(t *testing.T) {
	for _, tc := range []struct {
		in                        string
		name, network, addr, user string
		db                        int
		tls                       bool
		wantErr                   string
	}{
		{in: "redis://127.0.0.1:6379", name: "127.0.0.1:6379", network: "tcp", addr: "127.0.0.1:6379"},
		{in: "redis://localhost", name: "localhost:6379", network: "tcp", addr: "localhost:6379"},
		{in: "redis://probe@10.0.0.1:6380/2", name: "10.0.0.1:6380/2", network: "tcp", addr: "10.0.0.1:6380", user: "probe", db: 2},
		{in: "rediss://cache.example:6380", name: "cache.example:6380", network: "tcp", addr: "cache.example:6380", tls: true},
		{in: "redis://[::1]:7000", name: "[::1]:7000", network: "tcp", addr: "[::1]:7000"},
		{in: "127.0.0.1:7001", name: "127.0.0.1:7001", network: "tcp", addr: "127.0.0.1:7001"},
		{in: "redis-host", name: "redis-host:6379", network: "tcp", addr: "redis-host:6379"},
		{in: "unix:///run/redis/redis.sock", name: "unix:///run/redis/redis.sock", network: "unix", addr: "/run/redis/redis.sock"},
		{in: "unix:///run/redis.sock?db=3", name: "unix:///run/redis.sock", network: "unix", addr: "/run/redis.sock", db: 3},
		{in: "redis://user:hunter2@host:6379", wantErr: "holds a password"},
		{in: "redis://:hunter2@host:6379", wantErr: "holds a password"},
		{in: "http://host:6379", wantErr: "unsupported scheme"},
		{in: "redis://host:0", wantErr: "port"},
		{in: "redis://host:99999", wantErr: "port"},
		{in: "redis://host:abc", wantErr: "not a valid URL"},
		{in: "redis://host:6379/x", wantErr: "database number"},
		{in: "unix://", wantErr: "socket path"},
		{in: "::1", wantErr: "brackets"},
		{in: "", wantErr: "empty"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			name, ep, err := ParseAddr(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Fatalf("error %q leaks the password", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if name != tc.name || ep.Network != tc.network || ep.Addr != tc.addr ||
				ep.Username != tc.user || ep.DB != tc.db || (ep.TLS != nil) != tc.tls {
				t.Errorf("got name=%q %s %s user=%q db=%d tls=%v", name, ep.Network, ep.Addr, ep.Username, ep.DB, ep.TLS != nil)
			}
		})
	}
}

func FuzzParseAddr(f *testing.F) {
	for _, s := range []string{"redis://127.0.0.1:6379", "rediss://u@h:1/2", "unix:///x.sock?db=1", "h:1", "[::1]:2", "redis://:p@h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, ep, err := ParseAddr(s)
		if err != nil {
			return
		}
		if name == "" || ep.Addr == "" || (ep.Network != "tcp" && ep.Network != "unix") {
			t.Fatalf("ParseAddr(%q) accepted an unusable endpoint: %q %+v", s, name, ep)
		}
		if ep.Password != "" {
			t.Fatalf("ParseAddr(%q) took a password from the address", s)
		}
	})
}

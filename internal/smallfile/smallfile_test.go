package smallfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadRefusesWhatIsNotASmallRegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", MaxSecret+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       error
		wantText   string
	}{
		{"fifo", fifo, ErrNotRegular, "a named pipe"},
		{"dev zero", "/dev/zero", ErrNotRegular, "a character device"},
		{"directory", dir, ErrNotRegular, "a directory"},
		{"too large", big, ErrTooLarge, "4096 bytes"},
		{"missing", filepath.Join(dir, "nope"), os.ErrNotExist, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := Read(tc.path, MaxSecret); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				msg := err.Error()
				if !strings.Contains(msg, tc.path) || !strings.Contains(msg, tc.wantText) || strings.Contains(msg, "\n") {
					t.Errorf("error %q should be one line naming %s and saying %q", msg, tc.path, tc.wantText)
				}
				if strings.Contains(msg, "xxxx") {
					t.Errorf("error %q shows the content", msg)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Read blocked")
			}
		})
	}
}

func TestReadReadsARegularFileUpToTheBound(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pw")
	want := strings.Repeat("s", MaxSecret)
	if err := os.WriteFile(p, []byte(want), 0o600); err != nil {
		t.Fatal(err)
	}
	// A symlink to a regular file is fine (Kubernetes secrets are links).
	link := p + ".link"
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	b, err := Read(link, MaxSecret)
	if err != nil || string(b) != want {
		t.Fatalf("Read = %d bytes, %v", len(b), err)
	}
}

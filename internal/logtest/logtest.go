// Package logtest is a log sink for tests that read what a component logs
// while it still runs.
package logtest

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
)

// Buffer is an io.Writer that a slog handler writes to and a test reads
// from, safely, at the same time.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Lines counts the logged lines that contain s.
func (l *Buffer) Lines(s string) int {
	n := 0
	for line := range strings.SplitSeq(l.String(), "\n") {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// Logger is a text logger at level into a new Buffer.
func Logger(level slog.Level) (*slog.Logger, *Buffer) {
	buf := &Buffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: level})), buf
}

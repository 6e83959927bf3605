//go:build !unix

package config

import (
	"errors"
	"runtime"
)

// mkfifo fails: this system has no named pipes, so the test leaves them out.
func mkfifo(string) error { return errors.New("no named pipes on " + runtime.GOOS) }

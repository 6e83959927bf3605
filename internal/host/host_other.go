//go:build !linux

package host

import (
	"fmt"
	"runtime"
)

// supported: this OS has no /proc or /sys to read; every read is
// ErrNoData (the collectors log it at debug and export nothing).
func supported() error {
	return fmt.Errorf("/proc and /sys: not available on %s: %w", runtime.GOOS, ErrNoData)
}

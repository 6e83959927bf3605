//go:build !linux

package wire

import "errors"

// TCPInfo is Linux's: elsewhere a connection's round trip is not read, and
// the attribution has no network evidence.
func TCPInfo(int) (TCPStats, error) { return TCPStats{}, errors.ErrUnsupported }

//go:build !linux

package collector

// ReadProcess has no /proc to read on this OS: the process collector
// exports nothing, and says so at debug.
func ReadProcess(Paths, Identity) (*ProcessStats, error) {
	return nil, errNotHere("the redis-server process (/proc)")
}

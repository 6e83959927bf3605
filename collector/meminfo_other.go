//go:build !linux

package collector

func readMeminfo(Paths) (map[string]uint64, error) { return nil, errNotHere("meminfo") }

func newMeminfoCollector(Paths) source { return unavailable("meminfo") }

//go:build !linux

package collector

func newMeminfoCollector(Paths) source { return unavailable("meminfo") }

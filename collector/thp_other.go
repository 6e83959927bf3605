//go:build !linux

package collector

func newTHPCollector(Paths) source { return unavailable("thp") }

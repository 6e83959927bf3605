//go:build !linux

package collector

func newCPUCollector(Paths) source { return unavailable("cpu") }

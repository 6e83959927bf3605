//go:build !linux

package collector

func newVMStatCollector(Paths) source { return unavailable("vmstat") }

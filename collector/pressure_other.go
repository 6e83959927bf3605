//go:build !linux

package collector

func newPressureCollector(Paths) source { return unavailable("memory pressure (PSI)") }

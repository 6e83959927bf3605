//go:build !linux

package collector

func newSysctlCollector(Paths) source { return unavailable("sysctl") }

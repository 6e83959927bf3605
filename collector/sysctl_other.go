//go:build !linux

package collector

func readSysctls(Paths) (map[string]int64, error) { return nil, errNotHere("sysctl") }

func newSysctlCollector(Paths) source { return unavailable("sysctl") }

//go:build !linux

package collector

func readGovernors(Paths) (map[string]int, error) { return nil, errNotHere("cpufreq governors") }

func readNUMANodes(Paths) (int, error) { return 0, errNotHere("NUMA nodes") }

func newCPUCollector(Paths) source { return unavailable("cpu") }

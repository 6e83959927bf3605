package host

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
)

// CPUGovernors counts the CPUs per cpufreq scaling governor. Virtual
// machines and containers often have no cpufreq at all: ErrNoData.
// Hand-written: procfs/sysfs's SystemCpufreq reads nine more files per
// CPU and needs devices/system/cpu/offline, for the one word we need.
func (r Reader) CPUGovernors() (map[string]int, error) {
	if err := supported(); err != nil {
		return nil, err
	}
	files, err := filepath.Glob(r.sys("devices", "system", "cpu", "cpu[0-9]*", "cpufreq", "scaling_governor"))
	if err != nil {
		return nil, fmt.Errorf("cpufreq: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no cpufreq scaling_governor under %s: %w", r.sys("devices", "system", "cpu"), ErrNoData)
	}
	out := map[string]int{}
	for _, f := range files {
		g, err := readTrimmed(f)
		if err != nil {
			return nil, err
		}
		out[g]++
	}
	return out, nil
}

// NUMANodes counts the NUMA nodes the kernel knows (the node<N>
// directories of sysfs; procfs/sysfs has no reader for the count).
func (r Reader) NUMANodes() (int, error) {
	if err := supported(); err != nil {
		return 0, err
	}
	nodes, err := filepath.Glob(r.sys("devices", "system", "node", "node[0-9]*"))
	if err != nil {
		return 0, fmt.Errorf("numa: %w", err)
	}
	if len(nodes) == 0 {
		return 0, fmt.Errorf("no NUMA nodes under %s: %w", r.sys("devices", "system", "node"), ErrNoData)
	}
	return len(nodes), nil
}

// cpuinfoHead is how much of /proc/cpuinfo CPUModel reads: one CPU's
// block is under 2 KiB.
const cpuinfoHead = 64 << 10

// CPUModel is the first CPU's model name from /proc/cpuinfo, "" when
// unknown. Hand-written: procfs's CPUInfo picks its parser by GOARCH and
// fails on a file that does not start as that architecture's does; here
// one field is wanted, in any architecture's spelling, and it is in the
// first CPU's block: only the head of the file is read, however many CPUs.
func (r Reader) CPUModel() string {
	b, err := readHead(r.proc("cpuinfo"), cpuinfoHead)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name", "Model", "cpu model", "uarch":
			return strings.TrimSpace(v)
		}
	}
	return ""
}

//go:build linux

package explain

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// isolate pins the process pid (its main thread, Redis's event loop, and
// the children it forks from now on) to one CPU and the test's own threads
// (the probe among them) to the others, so a fault on the server's CPU is
// not the probe's too: starved there, the probe would be late and charge
// its own lateness (host). It returns the server's CPU; restore undoes it.
func isolate(t *testing.T, pid int) (cpu int, restore func()) {
	t.Helper()
	var all, one unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &all); err != nil {
		t.Fatalf("affinity of %d: %v", pid, err)
	}
	cpu = -1
	for i := range 1024 {
		if all.IsSet(i) {
			cpu = i
			break
		}
	}
	rest := all
	rest.Clear(cpu)
	if rest.Count() == 0 {
		t.Skip("one CPU: the probe would share the server's")
	}
	one.Set(cpu)
	if err := unix.SchedSetaffinity(pid, &one); err != nil {
		t.Fatalf("pin %d to CPU %d: %v", pid, cpu, err)
	}
	back := pinThreads(t, &rest, &all)
	return cpu, func() {
		if err := unix.SchedSetaffinity(pid, &all); err != nil {
			t.Errorf("unpin %d: %v", pid, err)
		}
		back()
	}
}

// starve isolates the process pid on one CPU (isolate) and runs loops busy
// processes there for d, at the test's own priority; stop ends them and
// undoes the isolation.
func starve(t *testing.T, pid, loops int, d time.Duration) (stop func()) {
	t.Helper()
	cpu, restore := isolate(t, pid)
	var cmds []*exec.Cmd
	end := time.Now().Add(d)
	// Each loop is pinned before it starts (taskset), bounded in time
	// (timeout, which passes a TERM on to it) and ended with the test's
	// process (Pdeathsig): a test that fails or is killed leaves no busy
	// loop behind on a shared host.
	kill := func() {
		for _, cmd := range cmds {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}
		cmds = nil
	}
	t.Cleanup(kill)
	for range loops {
		cmd := exec.Command("taskset", "-c", strconv.Itoa(cpu), "timeout", strconv.Itoa(int(d.Seconds())+5),
			"sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		if err := cmd.Start(); err != nil {
			t.Fatalf("busy loop: %v", err)
		}
		cmds = append(cmds, cmd)
	}
	return func() {
		time.Sleep(time.Until(end))
		kill()
		restore()
	}
}

// pinThreads sets the affinity of every thread of the test process to
// set (threads started later inherit it from theirs); restore sets back.
func pinThreads(t *testing.T, set, back *unix.CPUSet) (restore func()) {
	t.Helper()
	apply := func(s *unix.CPUSet) {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatalf("threads: %v", err)
		}
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil {
				continue
			}
			// A thread may have ended since the listing.
			_ = unix.SchedSetaffinity(tid, s)
		}
	}
	apply(set)
	return func() { apply(back) }
}

//go:build unix

package redistest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// holdPortEnv makes the test binary a child that reserves a port, prints
// it, and holds it until its stdin closes.
const holdPortEnv = "REDISTEST_HOLD_PORT"

func TestHoldPortChild(t *testing.T) {
	if os.Getenv(holdPortEnv) == "" {
		t.Skip("the child of TestFreePortSkipsAPortAnotherProcessHolds")
	}
	fmt.Println(FreePort(t))
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// A port another test process has from FreePort is not handed out here
// while that process holds it, and is once it has ended.
func TestFreePortSkipsAPortAnotherProcessHolds(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldPortChild$")
	cmd.Env = append(os.Environ(), holdPortEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	port, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		_ = stdin.Close()
		_ = cmd.Wait()
		t.Fatalf("the child printed %q: %v %v", line, err, perr)
	}
	t.Run("held", func(t *testing.T) {
		if lockPort(t, port) {
			t.Errorf("port %d, held by another process, was locked here too", port)
		}
	})
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the child: %v", err)
	}
	t.Run("released", func(t *testing.T) {
		if !lockPort(t, port) {
			t.Errorf("port %d is still locked after its process ended", port)
		}
	})
}

package collector

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// readFile reads a /proc or /sys file. A file that is absent or cannot be
// read here (no PSI, no cpufreq, another user's process) is ErrNoData; other
// failures are real errors.
func readFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return b, nil
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) ||
		errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ESRCH) {
		return nil, fmt.Errorf("%s: %w (%v)", path, ErrNoData, unwrapPathErr(err))
	}
	return nil, fmt.Errorf("read %s: %w", path, err)
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func readTrimmed(path string) (string, error) {
	b, err := readFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

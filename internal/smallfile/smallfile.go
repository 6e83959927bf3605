// Package smallfile reads a small regular file with a bound on its size:
// secrets (password files), the config file, TLS certificates and burst
// reports. A path that names a FIFO, a device or a directory is refused
// before it is read, and the open never blocks, so a hostile or mistaken
// path (/dev/zero, a named pipe nobody writes to) cannot hang start-up or a
// reload nor fill memory.
package smallfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Bounds of the files the prober reads.
const (
	// MaxSecret bounds a password file. A Redis password is a line;
	// even a generated one is well under a hundred bytes, and Redis's
	// own AUTH sees a few hundred at most. 4 KiB leaves room for a
	// comment or a trailing blob without letting /dev/zero-sized input
	// through.
	MaxSecret = 4 << 10
	// MaxConfig bounds the YAML config file: MaxTargets (5,000)
	// targets of a few hundred bytes each is about 2 MiB.
	MaxConfig = 8 << 20
	// MaxPEM bounds a TLS CA bundle, certificate or key file: the
	// system CA bundle is about 250 KiB.
	MaxPEM = 4 << 20
)

// ErrNotRegular marks a path that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge marks a file over the bound.
var ErrTooLarge = errors.New("file too large")

// Read returns the content of the regular file at path, refusing one
// larger than limit bytes. Errors name the path, never the content.
func Read(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err // *fs.PathError: names the path
	}
	if err := check(path, st, limit); err != nil {
		return nil, err
	}
	// O_NONBLOCK: should the path be swapped for a FIFO between the
	// Stat and here, the open returns at once instead of waiting for a
	// writer. It changes nothing for reads of a regular file.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// What was opened is what counts.
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := check(path, st, limit); err != nil {
		return nil, err
	}
	// The size may grow after the Stat, and some files (in /proc) say 0:
	// read one byte past the bound to tell.
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(path, limit)
	}
	return b, nil
}

func check(path string, st fs.FileInfo, limit int64) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, kind(st.Mode()))
	}
	if st.Size() > limit {
		return tooLarge(path, limit)
	}
	return nil
}

func tooLarge(path string, limit int64) error {
	return fmt.Errorf("%s: %w: more than the %d bytes allowed", path, ErrTooLarge, limit)
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "type " + m.Type().String()
}

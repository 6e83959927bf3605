// Package usage is the error of a bad flag or config value. A command that
// fails with one prints its one line and exits 2, whichever package (main,
// engine, the burst command) found the bad value.
package usage

import "fmt"

// Error is a bad flag or config value: exit code 2.
type Error struct{ msg string }

func (e Error) Error() string { return e.msg }

// Errorf formats a usage error. Its text names the flag or config field.
func Errorf(format string, args ...any) error { return Error{fmt.Sprintf(format, args...)} }

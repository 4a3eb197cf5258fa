package main

import (
	"errors"
	"fmt"
)

// usageError is a command line that cannot run as written (an unknown
// flag, a missing argument): the command exits with 2, not 1.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef is a usageError with a message.
func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// exitCode is the process's exit code for a command's error: 0 for none,
// 2 for a usage error, 1 for anything else (a refusal, a failure).
func exitCode(err error) int {
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

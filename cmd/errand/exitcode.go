package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
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

// parseVerb parses a verb's flags and positional arguments in any order.
// -h or --help prints usage on stdout (help is true, err nil); a bad flag
// is a usageError followed by the usage.
func parseVerb(fs *flag.FlagSet, args []string, usage string, stdout io.Writer) (pos []string, help bool, err error) {
	pos, err = parseInterleaved(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(stdout, usage)
		return nil, true, nil
	case err != nil:
		return nil, false, usageError{fmt.Errorf("%w\n\n%s", err, usage)}
	}
	return pos, false, nil
}

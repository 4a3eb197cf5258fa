package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// usageError is a command line that cannot run as written (an unknown
// flag, a missing argument): the command exits with 2, not 1.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef is a usageError with a message.
func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// parseVerb parses a verb's flags and positional arguments in any order.
// -h or --help prints usage on stdout (help is true, err nil); a bad flag
// is a usageError worded as cobra words one (flagWords).
func parseVerb(fs *flag.FlagSet, args []string, usage string, stdout io.Writer) (pos []string, help bool, err error) {
	pos, err = parseInterleaved(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(stdout, usage)
		return nil, true, nil
	case err != nil:
		return nil, false, usageError{flagWords(err)}
	}
	return pos, false, nil
}

// flagWords words the flag package's refusals as the other commands'
// (cobra's) are: "unknown flag: --bogus", not "flag provided but not
// defined: -bogus".
func flagWords(err error) error {
	msg := err.Error()
	dashes := func(name string) string {
		if len(name) > 1 {
			return "--" + name
		}
		return "-" + name
	}
	for _, f := range []struct{ std, words string }{
		{"flag provided but not defined: -", "unknown flag: "},
		{"flag needs an argument: -", "flag needs an argument: "},
	} {
		if name, ok := strings.CutPrefix(msg, f.std); ok {
			return errors.New(f.words + dashes(name))
		}
	}
	for _, std := range []struct{ prefix, sep string }{{"invalid value ", " for flag -"}, {"invalid boolean value ", " for -"}} {
		if rest, ok := strings.CutPrefix(msg, std.prefix); ok {
			if v, flagAndWhy, ok := strings.Cut(rest, std.sep); ok {
				name, why, _ := strings.Cut(flagAndWhy, ": ")
				return fmt.Errorf("invalid argument %s for %q flag: %s", v, dashes(name), why)
			}
		}
	}
	return err
}

package main

import (
	"io"
	"log/slog"
	"net"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// logFlags are --log-level and --log-format of dev and serve.
type logFlags struct{ level, format string }

func addLogFlags(fs *pflag.FlagSet) *logFlags {
	l := &logFlags{}
	fs.StringVar(&l.level, "log-level", "info", "debug (every request and attempt), info, warn or error")
	fs.StringVar(&l.format, "log-format", "text", "text (key=value lines) or json (one object a line)")
	return l
}

// logger is the node's logger on w as the flags ask.
func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, usageErrorf("--log-level %q: want debug, info, warn or error", l.level)
	}
	o := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(l.format) {
	case "text":
		return slog.New(newQuietRepeats(slog.NewTextHandler(w, o))), nil
	case "json":
		return slog.New(newQuietRepeats(slog.NewJSONHandler(w, o))), nil
	}
	return nil, usageErrorf("--log-format %q: want text or json", l.format)
}

// listen makes a node's logger and opens its port, before anything else
// of the node: when the port is taken, no data directory or store is
// created.
func (l *logFlags) listen(c *cobra.Command, addr string) (*slog.Logger, net.Listener, error) {
	log, err := l.logger(c.ErrOrStderr())
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	return log, ln, nil
}

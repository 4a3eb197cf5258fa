package mcp

import (
	"context"
	"log/slog"
)

// sdkLogger is the logger handed to the MCP SDK: its records above warning
// are logged as warnings. The SDK logs a client's protocol mistakes (a
// tools/call before initialize, a duplicate initialize, a session its
// client ended badly) at error level, and an operator who alerts on the
// node's errors would be woken by a faulty client: they are the client's,
// not the node's. nil stays nil (the SDK's default).
func sdkLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	return slog.New(warnAtMost{l.Handler()})
}

// warnAtMost is a slog.Handler that lowers records above warning to it.
type warnAtMost struct{ h slog.Handler }

func (w warnAtMost) Enabled(ctx context.Context, l slog.Level) bool {
	return w.h.Enabled(ctx, min(l, slog.LevelWarn))
}

func (w warnAtMost) Handle(ctx context.Context, r slog.Record) error {
	if r.Level > slog.LevelWarn {
		r.Level = slog.LevelWarn
	}
	return w.h.Handle(ctx, r)
}

func (w warnAtMost) WithAttrs(as []slog.Attr) slog.Handler { return warnAtMost{w.h.WithAttrs(as)} }

func (w warnAtMost) WithGroup(name string) slog.Handler { return warnAtMost{w.h.WithGroup(name)} }

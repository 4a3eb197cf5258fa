//go:build race

package testkit

// Race reports whether the race detector is on: tests that measure a large
// volume (the 10,000-task replay) run a smaller one under it, since the
// detector slows the transpiled SQLite some thirtyfold.
const Race = true

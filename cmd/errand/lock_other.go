//go:build !unix

package main

// lockDataDir does not lock where flock is missing: two errand dev on one
// directory are not detected there.
func lockDataDir(string) (func(), error) { return func() {}, nil }

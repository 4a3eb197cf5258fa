//go:build !unix

package main

// lockDataDir does not lock where flock is missing: two errand dev on one
// directory are not detected there.
func lockDataDir(string) (func(), error) { return func() {}, nil }

// lockSQLite does not lock where flock is missing: two nodes on one SQLite
// file are not detected there.
func lockSQLite(string, string, string) (func(), error) { return func() {}, nil }

// Package testkit holds helpers that tests and benchmarks of several
// packages share: process CPU time and a TCP proxy that can cut a
// connection. Only tests import it.
package testkit

// Package testkit holds helpers that tests and benchmarks of several
// packages share: process CPU time, a TCP proxy that can cut a
// connection, a private PostgreSQL cluster and a PgBouncer in front of the
// test server. Only tests import it.
package testkit

// Package id makes identifiers: task ids that sort by creation time, lease
// ids, and secrets. It is the one place that reads crypto/rand.
package id

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"time"
)

const alphabet = "0123456789abcdefghijklmnopqrstuv" // base32hex, lowercase: sorts as it reads

// New returns a 21-character id: 10 characters of milliseconds since the
// epoch, then 11 of a 55-bit counter that starts at a random value each
// millisecond and counts up within it, so ids sort by creation time and ids
// made in one millisecond land side by side in an index (as ULIDs in their
// monotonic mode).
func New(t time.Time) string {
	ms := uint64(t.UnixMilli())
	mu.Lock()
	if ms == lastMs && lastSeq < 1<<55-1 {
		lastSeq++
	} else {
		var r [8]byte
		_, _ = rand.Read(r[:])
		lastMs, lastSeq = ms, binary.BigEndian.Uint64(r[:])>>10 // 54 bits: room to count up
	}
	seq := lastSeq
	mu.Unlock()
	var b [21]byte
	for i := 9; i >= 0; i-- {
		b[i] = alphabet[ms&31]
		ms >>= 5
	}
	for i := 20; i >= 10; i-- {
		b[i] = alphabet[seq&31]
		seq >>= 5
	}
	return string(b[:])
}

var (
	mu      sync.Mutex
	lastMs  uint64
	lastSeq uint64
)

// Lease returns a random 128-bit lease id in hex.
func Lease() string { return Secret(16) }

// Secret returns n random bytes as hex.
func Secret(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// WebhookKey returns a new signing key: "whsec_" and the base64 of 32 random
// bytes, so it serves both errand's v1 signature (keyed with the whole
// string) and the Standard Webhooks one (keyed with the decoded bytes).
func WebhookKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

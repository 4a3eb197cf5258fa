// Package id makes identifiers: task ids that sort by creation time, lease
// ids, and secrets. It is the one place that reads crypto/rand.
package id

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"time"
)

const alphabet = "0123456789abcdefghijklmnopqrstuv" // base32hex, lowercase: sorts as it reads

var enc = base32.NewEncoding(alphabet).WithPadding(base32.NoPadding)

// New returns a 21-character id: 10 characters of milliseconds since the
// epoch, then 11 of randomness (55 bits), so ids sort by creation time.
func New(t time.Time) string {
	var b [21]byte
	ms := uint64(t.UnixMilli())
	for i := 9; i >= 0; i-- {
		b[i] = alphabet[ms&31]
		ms >>= 5
	}
	var r [7]byte
	_, _ = rand.Read(r[:])
	var e [12]byte
	enc.Encode(e[:], r[:]) // 7 bytes → 12 characters; the id keeps 11
	copy(b[10:], e[:11])
	return string(b[:])
}

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

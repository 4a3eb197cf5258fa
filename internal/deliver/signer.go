package deliver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"strconv"
	"sync"

	"github.com/errandhq/errand/internal/task"
)

// maxSigners bounds the signing keys a Webhook keeps ready; past it the
// cache starts over (keys are per instance, so this is rarely reached).
const maxSigners = 1024

// signers keeps, per signing key, HMAC states already keyed, so that a
// delivery's two signatures cost neither the key setup nor an allocation.
// The values are what Sign and SignStandard compute.
type signers struct {
	mu sync.Mutex
	m  map[string]*keySigner
}

// keySigner signs with one key. Each pool holds hmac hashes keyed for one
// of the two signatures; a hash goes back Reset, which restores its keyed
// state without redoing the key setup.
type keySigner struct {
	errand   sync.Pool // keyed with the whole key string
	standard sync.Pool // keyed with the decoded secret; unused when !hasStandard
	// hasStandard is false for a key not of the form whsec_<base64>: such
	// a key gets no Standard Webhooks signature (as SignStandard says).
	hasStandard bool
}

// get returns the signer of key, making it on first use.
func (s *signers) get(key string) *keySigner {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ks, ok := s.m[key]; ok {
		return ks
	}
	if s.m == nil || len(s.m) >= maxSigners {
		s.m = make(map[string]*keySigner)
	}
	ks := &keySigner{}
	errandKey := []byte(key)
	ks.errand.New = func() any { return hmac.New(sha256.New, errandKey) }
	if secret, ok := standardKey(key); ok {
		ks.hasStandard = true
		ks.standard.New = func() any { return hmac.New(sha256.New, secret) }
	}
	s.m[key] = ks
	return ks
}

// appendSum writes the message parts to a keyed hash from pool and appends
// its sum to b, then returns the hash to the pool.
func appendSum(pool *sync.Pool, b []byte, parts ...[]byte) []byte {
	m := pool.Get().(hash.Hash)
	for _, p := range parts {
		m.Write(p)
	}
	b = m.Sum(b)
	m.Reset()
	pool.Put(m)
	return b
}

// appendErrand appends errand's signature header value, as Sign returns it,
// of "<ts>.<body>" where ts is the decimal timestamp text.
func (ks *keySigner) appendErrand(b, ts, body []byte) []byte {
	b = appendSum(&ks.errand, b, ts, dot, body)
	var sum [sha256.Size]byte
	copy(sum[:], b[len(b)-sha256.Size:])
	b = append(b[:len(b)-sha256.Size], "v1="...)
	return hex.AppendEncode(b, sum[:])
}

// appendStandard appends the Standard Webhooks signature header value, as
// SignStandard returns it, of "<msgID>.<ts>.<body>" where ts is the decimal
// timestamp text in seconds. It appends nothing when the key has no
// Standard Webhooks form.
func (ks *keySigner) appendStandard(b []byte, msgID string, ts, body []byte) []byte {
	if !ks.hasStandard {
		return b
	}
	b = append(b, msgID...) // the message id, hashed from b's own tail
	idStart := len(b) - len(msgID)
	b = appendSum(&ks.standard, b, b[idStart:], dot, ts, dot, body)
	var sum [sha256.Size]byte
	copy(sum[:], b[len(b)-sha256.Size:])
	b = append(b[:idStart], "v1,"...)
	return base64.StdEncoding.AppendEncode(b, sum[:])
}

// tokenCap bounds the bytes appendToken appends for t: its JSON's base64
// (4/3 of ~50 bytes and the two ids) and the signature's.
func tokenCap(t *task.Task) int { return 2*(len(t.InstanceID)+len(t.ID)) + 200 }

// tokenPrefix starts the message a delivery token's HMAC signs.
var tokenPrefix = []byte("errand-delivery.")

// appendToken appends the delivery token of kind (SignToken) of t, keyed
// with the whole key string (the errand pool's key): its JSON's base64url,
// ".", and the base64url HMAC of "errand-delivery." and the first part.
func (ks *keySigner) appendToken(b []byte, t *task.Task, kind string) []byte {
	start := len(b)
	b = appendTokenJSON(b, t, kind)
	js := len(b)
	b = base64.RawURLEncoding.AppendEncode(b, b[start:js])
	enc := len(b) - js
	b = append(b[:start], b[js:]...) // the base64 in the JSON's place
	body := b[start : start+enc]
	b = appendSum(&ks.errand, b, tokenPrefix, body)
	var sum [sha256.Size]byte
	copy(sum[:], b[len(b)-sha256.Size:])
	b = append(b[:len(b)-sha256.Size], '.')
	return base64.RawURLEncoding.AppendEncode(b, sum[:])
}

var dot = []byte{'.'}

// appendInt appends v in decimal and returns b and the appended text.
func appendInt(b []byte, v int64) (out, text []byte) {
	start := len(b)
	b = strconv.AppendInt(b, v, 10)
	return b, b[start:]
}

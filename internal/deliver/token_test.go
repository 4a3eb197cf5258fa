package deliver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/task"
)

// TestDeliveryToken: a token checks out only for its instance, under the
// key it was signed with, until it expires; any change to it is refused
// with INVALID_ARGUMENT naming the field.
func TestDeliveryToken(t *testing.T) {
	tk := &task.Task{InstanceID: "inst-1", ID: "t-1", Depth: 3, DeadlineAt: 1_000_000}
	tok := SignToken(tk, "whsec_a")
	got, err := VerifyToken(tok, "inst-1", "whsec_a", 1_000_000+tokenLate, "X-Errand-Delivery")
	if err != nil || got.Task != "t-1" || got.Depth != 3 {
		t.Fatalf("VerifyToken = %+v, %v", got, err)
	}
	body, sig, _ := strings.Cut(tok, ".")
	for name, c := range map[string]struct {
		tok, inst, key string
		now            int64
	}{
		"rotated key":      {tok, "inst-1", "whsec_b", 0},
		"another instance": {tok, "inst-2", "whsec_a", 0},
		"expired":          {tok, "inst-1", "whsec_a", 1_000_000 + tokenLate + 1},
		"tampered body":    {strings.ToUpper(body[:4]) + body[4:] + "." + sig, "inst-1", "whsec_a", 0},
		"no signature":     {body, "inst-1", "whsec_a", 0},
		"garbage":          {"a.b", "inst-1", "whsec_a", 0},
		"too long":         {strings.Repeat("a", 2000) + "." + sig, "inst-1", "whsec_a", 0},
	} {
		_, err := VerifyToken(c.tok, c.inst, c.key, c.now, "X-Errand-Delivery")
		if te, ok := err.(*task.Error); !ok || te.Code != task.CodeInvalidArgument || te.Field != "X-Errand-Delivery" {
			t.Errorf("%s: %v; want INVALID_ARGUMENT naming X-Errand-Delivery", name, err)
		}
	}
}

// TestSignLeaseToken: a leased task's token is of kind lease, holds by
// itself until a day past the lease's expiry, and verifies with the
// instance's key.
func TestSignLeaseToken(t *testing.T) {
	tk := &task.Task{ID: "t1", InstanceID: "i1", Depth: 3, LeaseExpiresAt: 1_790_000_060_000}
	tok, err := VerifyToken(SignLeaseToken(tk, katKey), "i1", katKey, 1_790_000_000_000, "X-Errand-Delivery")
	if err != nil || *tok != (Token{Instance: "i1", Task: "t1", Depth: 3, Expires: 1_790_000_060_000 + leaseTokenLate, Kind: TokenLease}) {
		t.Fatalf("%+v %v", tok, err)
	}
	// Expired, it is refused and returned with the refusal, for the
	// engine to take while its task is still leased.
	late, err := VerifyToken(SignLeaseToken(tk, katKey), "i1", katKey, 1_790_000_060_000+leaseTokenLate+1, "X-Errand-Delivery")
	if err == nil || !task.IsCode(err, task.CodeInvalidArgument) || late == nil || late.Task != "t1" || late.Kind != TokenLease {
		t.Fatalf("a lease token a day past its lease: %+v, %v", late, err)
	}
}

// TestSignTokenAsSpelled: a token is, byte for byte, what SignToken's doc
// spells out — base64url of the Token's JSON as encoding/json writes it,
// ".", base64url of HMAC-SHA256(key, "errand-delivery." + the first part) —
// for each kind, ids that need escaping, and several keys in turn (each
// kept keyed state is the key's own).
func TestSignTokenAsSpelled(t *testing.T) {
	spelled := func(tk *task.Task, key, kind string) string {
		expires := tk.DeadlineAt + tokenLate
		if kind == TokenLease {
			expires = tk.LeaseExpiresAt + leaseTokenLate
		}
		j, err := json.Marshal(Token{Instance: tk.InstanceID, Task: tk.ID, Depth: tk.Depth, Expires: expires, Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		body := base64.RawURLEncoding.EncodeToString(j)
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte("errand-delivery." + body))
		return body + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	tasks := []*task.Task{
		{InstanceID: "inst-1", ID: "t-1", Depth: 3, DeadlineAt: 1_790_000_000_000, LeaseExpiresAt: 1_790_000_060_000},
		{InstanceID: "i<&>\\\"", ID: strings.Repeat("é", 200) + "\u2028", DeadlineAt: -5},
		{InstanceID: "", ID: ""},
	}
	for round := range 2 {
		for _, key := range []string{"whsec_a", katKey, "k" + strings.Repeat("x", 100)} {
			for i, tk := range tasks {
				for _, kind := range []string{"", TokenWebhook, TokenLease} {
					want := spelled(tk, key, kind)
					got := signToken(tk, key, kind)
					if kind == "" && got != SignToken(tk, key) || kind == TokenLease && got != SignLeaseToken(tk, key) {
						t.Fatalf("task %d kind %q: SignToken/SignLeaseToken differ from signToken", i, kind)
					}
					var ks signers
					if web := string(ks.get(key).appendToken([]byte("x"), tk, kind)); web != "x"+want {
						t.Fatalf("task %d kind %q: appendToken after a prefix %q; want %q", i, kind, web, "x"+want)
					}
					if got != want {
						t.Fatalf("round %d key %q task %d kind %q:\n got %s\nwant %s", round, key, i, kind, got, want)
					}
				}
			}
		}
	}
}

// BenchmarkSignToken: a function attempt's token (once an attempt) and a
// leased task's (once a task a lease answers).
func BenchmarkSignToken(b *testing.B) {
	tk := &task.Task{InstanceID: "01JD3ZQ5W8Y2K4M6N8P0R2T4V6", ID: "01JD3ZQ5W8Y2K4M6N8P0R2T4V7", Depth: 1,
		DeadlineAt: 1_790_000_000_000, LeaseExpiresAt: 1_790_000_060_000}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if SignToken(tk, katKey) == "" || SignLeaseToken(tk, katKey) == "" {
				b.Fatal("no token")
			}
		}
	})
}

package deliver

import (
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

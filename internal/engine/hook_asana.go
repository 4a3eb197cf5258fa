package engine

import (
	"context"
	"crypto/subtle"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// asanaSecretHeader carries the secret Asana's webhook handshake makes:
// the target must echo it, and Asana then signs each event with it
// (X-Hook-Signature: the hex HMAC-SHA256 of the body).
const asanaSecretHeader = "X-Hook-Secret"

// asanaHandshake answers Asana's handshake, a POST carrying X-Hook-Secret
// (and no event), which Asana makes while its API creates a webhook: the
// secret is echoed in the answer (200, no body) and nothing is added. A
// hook without a secret that has added no task yet (a hook made for the
// webhook) takes this one as its secret, from then on checking every
// call's signature with it (the URL was the capability until then, and a
// secret only narrows what it lets in); a hook whose secret it is echoes
// it again (Asana's retry of the handshake); any other hook refuses it,
// UNAUTHENTICATED — one with another secret, or one in use without a
// secret, whose senders a handshake from whoever holds its URL would
// otherwise lock out. A secret that is no hook secret
// (task.ValidateHookSecret) is INVALID_ARGUMENT naming the header.
func (e *Engine) asanaHandshake(ctx context.Context, h *Hook, secret string) (*HookAdded, error) {
	if err := task.ValidateHookSecret(secret); err != nil {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, asanaSecretHeader, "must be 16–256 printable ASCII characters without spaces, as Asana makes it")
	}
	same := func(have string) bool { return subtle.ConstantTimeCompare([]byte(have), []byte(secret)) == 1 }
	taken := task.Errorf(task.CodeUnauthenticated, "this hook has a secret already, and this handshake's %s is not it: "+
		"an Asana webhook needs a hook of its own, made without a secret", asanaSecretHeader)
	inUse := task.Errorf(task.CodeUnauthenticated, "this hook has added tasks without a secret, and a handshake would make its senders sign their calls: "+
		"an Asana webhook needs a hook of its own, made without a secret")
	// Decided on the rule as stored, under its write lock: a call or
	// another handshake may have come first.
	_, err := e.store.TriggerUpdate(ctx, store.TriggerRef{InstanceID: h.Rule.InstanceID, ID: h.Rule.ID}, func(tr *task.Trigger) error {
		switch {
		case tr.HookSecret != "" && !same(tr.HookSecret):
			return taken
		case tr.HookSecret != "": // Asana's retry: echoed again
		case tr.Fired > 0:
			return inUse
		default:
			tr.HookSecret, tr.UpdatedAt = secret, e.now()
		}
		return nil
	})
	if task.IsCode(err, task.CodeNotFound) {
		return nil, task.Errorf(task.CodeNotFound, "no enabled hook of instance %s has this URL", task.Quote(h.Instance.Name))
	}
	if err != nil {
		return nil, err
	}
	// No wake-up: hook rules are read from the store on every call, and
	// no service of any node has work from a hook's secret.
	return &HookAdded{EchoSecret: secret}, nil
}

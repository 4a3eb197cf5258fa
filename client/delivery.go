package client

import "context"

type deliveryKey struct{}

// WithDelivery returns a context that carries the delivery token of the
// attempt it is made in (the worker package puts it in every handler's
// context). Calls made with it send the token as errandapi.DeliveryHeader,
// so the tasks they add get depth = the running task's + 1 and source
// "function", and a chain deeper than errandapi.MaxDepth is refused with
// DEPTH_EXCEEDED.
func WithDelivery(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, deliveryKey{}, token)
}

// DeliveryToken returns the delivery token ctx carries, or "".
func DeliveryToken(ctx context.Context) string {
	s, _ := ctx.Value(deliveryKey{}).(string)
	return s
}

package client

import (
	"context"

	"github.com/errandhq/errand/errandapi"
)

// Self returns the calling key's organization and grants (GET
// /v1/keys/self); in errand dev, the implicit caller's.
func (c *Client) Self(ctx context.Context) (*errandapi.KeySelf, error) {
	var out errandapi.KeySelf
	if err := c.do(ctx, call{method: "GET", path: []string{"v1", "keys", "self"}, out: &out, repeatable: true}); err != nil {
		return nil, err
	}
	return &out, nil
}

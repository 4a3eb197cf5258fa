package httpapi

import (
	"context"
	"net/http"

	"github.com/coder/websocket"

	"github.com/errandhq/errand/errandapi"
)

// wsWriter writes channel events as WebSocket text frames, each a
// ChannelEvent. The subscriber sends nothing; a data frame from it closes
// the connection.
type wsWriter struct {
	conn *websocket.Conn
}

// acceptWS upgrades the request (Accept answers a failed upgrade itself).
// A subscriber admitted by a subscribe token may connect from any origin;
// others only from the API's own (a browser's cookies are not what admits
// them, but the check costs nothing).
func acceptWS(w http.ResponseWriter, r *http.Request, anyOrigin bool) (*wsWriter, bool) {
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: anyOrigin})
	if err != nil {
		return nil, false
	}
	return &wsWriter{conn: conn}, true
}

func (s *wsWriter) context(ctx context.Context) context.Context { return s.conn.CloseRead(ctx) }

func (s *wsWriter) send(ctx context.Context, e *errandapi.ChannelEvent) error {
	b, err := errandapi.Marshal(e)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, channelWriteTimeout)
	defer cancel()
	return s.conn.Write(wctx, websocket.MessageText, b)
}

func (s *wsWriter) ping(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, channelWriteTimeout)
	defer cancel()
	return s.conn.Ping(pctx)
}

// close sends last, then closes: 1013 (try again later) for a lagged
// subscriber, 1001 (going away) when the node stops, 1000 otherwise.
func (s *wsWriter) close(last *errandapi.ChannelEvent) {
	if last == nil {
		_ = s.conn.CloseNow()
		return
	}
	_ = s.send(context.Background(), last)
	code := websocket.StatusGoingAway
	if last.Type == errandapi.ChannelLagged {
		code = websocket.StatusTryAgainLater
	}
	_ = s.conn.Close(code, closeReason(errandapi.CodeUnavailable, last.Message))
}

package postgres

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/errandhq/errand/internal/store"
)

// channelNotify is the LISTEN/NOTIFY channel of channel appends; each
// notification's payload is "instanceID/channel" (neither holds a '/').
const channelNotify = "errand_channel"

const (
	// qChannelAppend raises the head (locking its row until commit, so
	// appends to one channel commit in sequence order) and inserts the
	// message; a task already in the log violates channel_messages_task,
	// which undoes the raise with the statement.
	qChannelAppend = `WITH h AS (
		INSERT INTO channel_heads (instance_id, channel, last_seq) VALUES ($1, $2, 1)
		ON CONFLICT (instance_id, channel) DO UPDATE SET last_seq = channel_heads.last_seq + 1
		RETURNING last_seq)
		INSERT INTO channel_messages (instance_id, channel, seq, task_id, body, created_at)
		SELECT $1, $2, h.last_seq, $3, $4, $5 FROM h RETURNING seq`
	qChannelByTask = `SELECT seq, body, created_at FROM channel_messages
		WHERE instance_id = $1 AND channel = $2 AND task_id = $3`
	// qChannelRead reads the head, the oldest retained message and a page
	// in one statement, so one snapshot.
	qChannelRead = `SELECT h.last_seq,
		coalesce((SELECT min(o.seq) FROM channel_messages AS o WHERE o.instance_id = $1 AND o.channel = $2), h.last_seq + 1),
		m.seq, m.task_id, m.body, m.created_at
		FROM channel_heads AS h LEFT JOIN LATERAL (SELECT seq, task_id, body, created_at FROM channel_messages
			WHERE instance_id = $1 AND channel = $2 AND seq > $3 ORDER BY seq LIMIT $4) AS m ON true
		WHERE h.instance_id = $1 AND h.channel = $2 ORDER BY m.seq`
	// qChannelPrune walks the channels and seeks each one's old messages
	// (channel_messages_age).
	qChannelPrune = `DELETE FROM channel_messages WHERE (instance_id, channel, seq) IN (
		SELECT m.instance_id, m.channel, m.seq FROM channel_heads AS h
		JOIN channel_messages AS m ON m.instance_id = h.instance_id AND m.channel = h.channel AND m.created_at < $1
		WHERE m.seq <= h.last_seq - $2 LIMIT $3)`
	qInstanceDeleteChannelMessages = `DELETE FROM channel_messages WHERE instance_id = $1`
	qInstanceDeleteChannelHeads    = `DELETE FROM channel_heads WHERE instance_id = $1`
)

// ChannelAppend appends in one transaction of one round trip
// (appendAll). A task already in its channel's log violates
// channel_messages_task, which aborts the transaction: the appends are
// then made one at a time, each in its own transaction, where such a
// repeat is answered from the log.
func (s *Store) ChannelAppend(ctx context.Context, ps []*store.ChannelAppendParams) ([]*store.ChannelMessage, error) {
	if len(ps) == 1 {
		m, err := s.channelAppendOne(ctx, ps[0])
		if err != nil {
			return nil, err
		}
		return []*store.ChannelMessage{m}, nil
	}
	out, err := s.appendAll(ctx, ps)
	if !taskInLog(err) {
		if err != nil {
			return nil, interpretError(err)
		}
		return out, nil
	}
	for i, p := range ps {
		m, err := s.channelAppendOne(ctx, p)
		if err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
}

// appendAll appends ps in one transaction of one round trip, with a NOTIFY
// per channel that every node's ChannelListen hears at commit, and returns
// the store's error as it is. The appends go in the order of their
// channels' keys — the head rows they lock —, each channel's in the order
// given, so that two transactions never wait for each other's heads in
// opposite orders.
func (s *Store) appendAll(ctx context.Context, ps []*store.ChannelAppendParams) ([]*store.ChannelMessage, error) {
	out := make([]*store.ChannelMessage, len(ps))
	order := make([]int, len(ps))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(strings.Compare(ps[a].Ref.InstanceID, ps[b].Ref.InstanceID), strings.Compare(ps[a].Ref.Channel, ps[b].Ref.Channel))
	})
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for k, i := range order {
			p := ps[i]
			m := &store.ChannelMessage{TaskID: p.TaskID, Body: p.Body, CreatedAt: p.Now}
			out[i] = m
			b.Queue(qChannelAppend, p.Ref.InstanceID, p.Ref.Channel, p.TaskID, p.Body, p.Now).QueryRow(func(row pgx.Row) error {
				return row.Scan(&m.Seq)
			})
			if next := k + 1; next == len(order) || ps[order[next]].Ref != p.Ref {
				b.Queue(`SELECT pg_notify('`+channelNotify+`', $1)`, p.Ref.InstanceID+"/"+p.Ref.Channel)
			}
		}
		return tx.SendBatch(ctx, b).Close()
	})
	return out, err
}

// taskInLog reports whether err is an append's of a task already in its
// channel's log.
func taskInLog(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == sqlUniqueViolation && pe.ConstraintName == "channel_messages_task"
}

// channelAppendOne appends p's message in a transaction of its own, or
// answers the message of its task already in the log.
func (s *Store) channelAppendOne(ctx context.Context, p *store.ChannelAppendParams) (*store.ChannelMessage, error) {
	ms, err := s.appendAll(ctx, []*store.ChannelAppendParams{p})
	if err == nil {
		return ms[0], nil
	}
	m := &store.ChannelMessage{TaskID: p.TaskID, Repeat: true}
	if taskInLog(err) {
		err = s.pool.QueryRow(ctx, qChannelByTask, p.Ref.InstanceID, p.Ref.Channel, p.TaskID).Scan(&m.Seq, &m.Body, &m.CreatedAt)
	}
	if err != nil {
		return nil, interpretError(err)
	}
	return m, nil
}

// ChannelRead reads a page with the head and the oldest retained message.
func (s *Store) ChannelRead(ctx context.Context, p *store.ChannelReadParams) (*store.ChannelPage, error) {
	rows, err := s.pool.Query(ctx, qChannelRead, p.Ref.InstanceID, p.Ref.Channel, p.After, max(p.Limit, 0))
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	page := &store.ChannelPage{Oldest: 1, Messages: []*store.ChannelMessage{}}
	for rows.Next() {
		var seq, created *int64
		var taskID *string
		var body []byte
		if err := rows.Scan(&page.Head, &page.Oldest, &seq, &taskID, &body, &created); err != nil {
			return nil, interpretError(err)
		}
		if seq != nil {
			page.Messages = append(page.Messages, &store.ChannelMessage{Seq: *seq, TaskID: *taskID, Body: body, CreatedAt: *created})
		}
	}
	if err := rowsErr(rows); err != nil {
		return nil, err
	}
	return page, nil
}

// ChannelPrune deletes one batch of messages outside the window.
func (s *Store) ChannelPrune(ctx context.Context, p *store.ChannelPruneParams) (int, error) {
	if p.Limit <= 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, qChannelPrune, p.Before, p.Keep, p.Limit)
	if err != nil {
		return 0, interpretError(err)
	}
	return int(tag.RowsAffected()), nil
}

// ChannelListen holds one connection with LISTEN errand_channel and calls
// fn with the channel of every notification, and with a zero ref after
// each (re)connect. It returns when ctx ends.
func (s *Store) ChannelListen(ctx context.Context, fn func(store.ChannelRef)) error {
	return s.listen(ctx, channelNotify, func(payload string, connected bool) {
		if connected {
			fn(store.ChannelRef{})
			return
		}
		inst, ch, _ := strings.Cut(payload, "/")
		fn(store.ChannelRef{InstanceID: inst, Channel: ch})
	})
}

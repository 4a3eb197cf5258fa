package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/errandhq/errand/internal/store"
)

var (
	qChannelByTask = define(onWriter, `SELECT seq, body, created_at FROM channel_messages
		WHERE instance_id = ? AND channel = ? AND task_id = ?`)
	qChannelBump = define(onWriter, `INSERT INTO channel_heads (instance_id, channel, last_seq) VALUES (?, ?, 1)
		ON CONFLICT (instance_id, channel) DO UPDATE SET last_seq = last_seq + 1 RETURNING last_seq`)
	qChannelInsert = define(onWriter, `INSERT INTO channel_messages (instance_id, channel, seq, task_id, body, created_at)
		VALUES (?, ?, ?, ?, ?, ?)`)
	// qChannelRead reads the head, the oldest retained message and a page
	// in one statement, so one snapshot.
	qChannelRead = define(onReader, `SELECT h.last_seq,
		coalesce((SELECT min(o.seq) FROM channel_messages AS o WHERE o.instance_id = ?1 AND o.channel = ?2), h.last_seq + 1),
		m.seq, m.task_id, m.body, m.created_at
		FROM channel_heads AS h LEFT JOIN (SELECT seq, task_id, body, created_at FROM channel_messages
			WHERE instance_id = ?1 AND channel = ?2 AND seq > ?3 ORDER BY seq LIMIT ?4) AS m ON 1
		WHERE h.instance_id = ?1 AND h.channel = ?2 ORDER BY m.seq`)
	// qChannelPrune walks the channels (a small table) and seeks each
	// one's old messages.
	qChannelPrune = define(onWriter, `DELETE FROM channel_messages WHERE rowid IN (
		SELECT m.rowid FROM channel_heads AS h CROSS JOIN channel_messages AS m INDEXED BY channel_messages_age
		WHERE m.instance_id = h.instance_id AND m.channel = h.channel AND m.created_at < ?1
		  AND m.seq <= h.last_seq - ?2 LIMIT ?3)`)
	qInstanceChannelMessages = define(onWriter, `DELETE FROM channel_messages WHERE instance_id = ?`)
	qInstanceChannelHeads    = define(onWriter, `DELETE FROM channel_heads WHERE instance_id = ?`)
)

// ChannelAppend appends in one write transaction, each message in turn:
// the task's message if the log has it, else a raised head and the new
// message.
func (s *Store) ChannelAppend(ctx context.Context, ps []*store.ChannelAppendParams) ([]*store.ChannelMessage, error) {
	out := make([]*store.ChannelMessage, len(ps))
	err := s.write(ctx, func(w *wtx) error {
		for i, p := range ps {
			m, err := w.channelAppend(p)
			if err != nil {
				return err
			}
			out[i] = m
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// channelAppend appends p's message in w: the task's message if the log
// has it, else a raised head and the new message.
func (w *wtx) channelAppend(p *store.ChannelAppendParams) (*store.ChannelMessage, error) {
	m := &store.ChannelMessage{TaskID: p.TaskID}
	err := w.queryRow(qChannelByTask, p.Ref.InstanceID, p.Ref.Channel, p.TaskID).Scan(&m.Seq, &m.Body, &m.CreatedAt)
	if err == nil {
		m.Repeat = true
		return m, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, interpretError(err)
	}
	if err := w.queryRow(qChannelBump, p.Ref.InstanceID, p.Ref.Channel).Scan(&m.Seq); err != nil {
		return nil, interpretError(err)
	}
	m.Body, m.CreatedAt = p.Body, p.Now
	if _, err := w.exec(qChannelInsert, p.Ref.InstanceID, p.Ref.Channel, m.Seq, p.TaskID, p.Body, p.Now); err != nil {
		return nil, err
	}
	return m, nil
}

// ChannelRead reads a page with the head and the oldest retained message.
func (s *Store) ChannelRead(ctx context.Context, p *store.ChannelReadParams) (*store.ChannelPage, error) {
	rows, err := s.reader(qChannelRead).QueryContext(ctx, p.Ref.InstanceID, p.Ref.Channel, p.After, max(p.Limit, 0))
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	page := &store.ChannelPage{Oldest: 1, Messages: []*store.ChannelMessage{}}
	for rows.Next() {
		var seq, created sql.NullInt64
		var taskID sql.NullString
		var body []byte
		if err := rows.Scan(&page.Head, &page.Oldest, &seq, &taskID, &body, &created); err != nil {
			return nil, interpretError(err)
		}
		if seq.Valid {
			page.Messages = append(page.Messages, &store.ChannelMessage{Seq: seq.Int64, TaskID: taskID.String, Body: body, CreatedAt: created.Int64})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	return page, nil
}

// ChannelPrune deletes one batch of messages outside the window.
func (s *Store) ChannelPrune(ctx context.Context, p *store.ChannelPruneParams) (int, error) {
	if p.Limit <= 0 {
		return 0, nil
	}
	n := 0
	err := s.write(ctx, func(w *wtx) error {
		r, err := w.exec(qChannelPrune, p.Before, p.Keep, p.Limit)
		if err != nil {
			return err
		}
		n, err = affected(r)
		return err
	})
	return n, err
}

// deleteInstanceChannels removes an instance's channel logs (inside
// InstanceDelete's transaction).
func (w *wtx) deleteInstanceChannels(instanceID string) error {
	for _, q := range []query{qInstanceChannelMessages, qInstanceChannelHeads} {
		if _, err := w.exec(q, instanceID); err != nil {
			return err
		}
	}
	return nil
}

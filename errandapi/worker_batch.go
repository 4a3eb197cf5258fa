package errandapi

import (
	"encoding/json"
	"errors"
)

// A batch is one message of the worker connection that carries several
// frames: a JSON array of frame objects, in the order they were written.
// A side sends batches only once the other said it reads them (hello's and
// welcome's Batches); a batch is at most MaxWorkerFrame bytes, and a frame
// longer than that travels alone. Batching saves what each message costs
// both ends (a write and a read of the connection each): a node with many
// attempts to send to one worker at once, and a worker with many answers,
// send them in one.

// AppendBatch appends to b the message that carries frames, each one
// frame as MarshalJSON encodes it: the frame itself when there is one, a
// batch (a JSON array of them) when there are more.
func AppendBatch(b []byte, frames [][]byte) []byte {
	if len(frames) == 1 {
		return append(b, frames[0]...)
	}
	b = append(b, '[')
	for i, f := range frames {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, f...)
	}
	return append(b, ']')
}

// PackBatches packs frames, encoded, into the messages that carry them in
// order: as many as fit in a batch of at most MaxWorkerFrame bytes
// together, a longer frame alone.
func PackBatches(frames [][]byte) [][]byte {
	if len(frames) == 1 {
		return frames
	}
	var out [][]byte
	for len(frames) > 0 {
		n, size := 1, len(frames[0])+2 // the brackets
		for n < len(frames) && size+1+len(frames[n]) <= MaxWorkerFrame {
			size += 1 + len(frames[n])
			n++
		}
		out = append(out, AppendBatch(make([]byte, 0, size), frames[:n]))
		frames = frames[n:]
	}
	return out
}

// ErrBadBatch is SplitBatch's error for an array that is not a batch.
var ErrBadBatch = errors.New("a batch is a JSON array of one or more frame objects")

// SplitBatch returns the frames one message carries, undecoded: the
// message itself when it is not a JSON array (a frame, or something
// malformed that decoding it says is), the elements of a batch when it
// is. An array that is empty, is not valid JSON, or holds anything but
// objects is ErrBadBatch. The frames share msg's bytes.
func SplitBatch(msg []byte) ([][]byte, error) {
	s := jscan{b: msg}
	if s.peek() != '[' {
		return [][]byte{msg}, nil
	}
	if !s.open('[') {
		return nil, ErrBadBatch
	}
	var frames [][]byte
	for more := true; more; {
		if s.peek() != '{' {
			return nil, ErrBadBatch
		}
		start := s.i
		if !s.skip() {
			return splitDeep(msg)
		}
		frames = append(frames, msg[start:s.i])
		var ok bool
		if more, ok = s.next(']'); !ok {
			return nil, ErrBadBatch
		}
	}
	if !s.end() {
		return nil, ErrBadBatch
	}
	return frames, nil
}

// splitDeep is SplitBatch through encoding/json, for a batch nested past
// what jscan follows.
func splitDeep(msg []byte) ([][]byte, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(msg, &raw); err != nil || len(raw) == 0 {
		return nil, ErrBadBatch
	}
	frames := make([][]byte, len(raw))
	for i, r := range raw {
		if len(r) == 0 || r[0] != '{' {
			return nil, ErrBadBatch
		}
		frames[i] = r
	}
	return frames, nil
}

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// addBatch is how many lines of a file one add call carries (the API's
// most).
const addBatch = 100

// addSummary is what errand add --file did.
type addSummary struct {
	Added    int           `json:"added"`
	Existing int           `json:"existing"`
	Refused  []lineRefusal `json:"refused"`
}

// lineRefusal is one refused line of the file.
type lineRefusal struct {
	Line    int            `json:"line"`
	Code    errandapi.Code `json:"code"`
	Message string         `json:"message"`
}

// lineTask is a task of the file and the line it came from.
type lineTask struct {
	line int
	task errandapi.NewTask
}

// addFile adds every task of a JSON Lines file (or stdin) in batches.
func addFile(c *cobra.Command, f *apiFlags, cl *client.Client, path string) error {
	in, size, err := openInput(c, path)
	if err != nil {
		return err
	}
	defer in.Close()
	bar := newAddProgress(c.ErrOrStderr(), size)
	a := &adder{c: c, f: f, cl: cl, sum: addSummary{Refused: []lineRefusal{}}}
	rd := bufio.NewReaderSize(in, 1<<20)
	var batch []lineTask
	var read int64
	runErr := func() error {
		for line := 1; ; line++ {
			raw, err := rd.ReadBytes('\n')
			read += int64(len(raw))
			if err != nil && err != io.EOF {
				return err
			}
			if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 {
				var t errandapi.NewTask
				if derr := decodeLine(trimmed, &t); derr != nil {
					a.refuse(line, errandapi.CodeInvalidArgument, derr.Error())
				} else {
					batch = append(batch, lineTask{line, t})
				}
			}
			if len(batch) == addBatch || (err == io.EOF && len(batch) > 0) {
				if serr := a.send(batch); serr != nil {
					return serr
				}
				batch = batch[:0]
				bar.set(read, a.sum.Added+a.sum.Existing+len(a.sum.Refused))
			}
			if err == io.EOF {
				return nil
			}
		}
	}()
	bar.done()
	if err := a.report(); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if len(a.sum.Refused) > 0 {
		return &quietError{fmt.Errorf("%d lines refused", len(a.sum.Refused))}
	}
	return nil
}

// openInput opens the file (or stdin for "-") and returns its size, or 0
// when unknown.
func openInput(c *cobra.Command, path string) (io.ReadCloser, int64, error) {
	if path == "-" {
		return io.NopCloser(c.InOrStdin()), 0, nil
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, 0, usageErrorf("--file: %v", err)
	}
	var size int64
	if fi, err := fh.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	return fh, size, nil
}

// decodeLine reads one (trimmed, non-empty) line as a task in the API's
// add shape: the SDK's type, unknown fields refused as the node refuses
// them. Its error says what is wrong in a person's words, the decoder's
// detail after them.
func decodeLine(raw []byte, t *errandapi.NewTask) error {
	if raw[0] != '{' && json.Valid(raw) {
		return fmt.Errorf("not a JSON object: the line is a JSON %s; a task is an object such as {\"payload\": …}", jsonKind(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(t); err != nil {
		return lineError(err)
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line: a task a line")
	}
	return nil
}

// lineError words a decoding error of a line.
func lineError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	msg := strings.TrimPrefix(err.Error(), "json: ")
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("not a JSON object: %s at column %d", msg, se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("not a JSON object: the line ends before its JSON does")
	case errors.As(err, &te) && te.Field != "":
		return fmt.Errorf("%s: a JSON %s is not a value this field takes (%s)", te.Field, te.Value, msg)
	case strings.HasPrefix(msg, "unknown field "):
		return fmt.Errorf("%s: a task's fields are %s", msg, taskFields())
	}
	return errors.New(msg)
}

// taskFields lists the fields of a task line, as the SDK's type names them
// in JSON: "name, payload, … and deadlineSeconds".
func taskFields() string {
	t := reflect.TypeFor[errandapi.NewTask]()
	var names []string
	for i := range t.NumField() {
		if n, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); n != "" && n != "-" {
			names = append(names, n)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// jsonKind names the kind of a valid JSON value.
func jsonKind(raw []byte) string {
	switch raw[0] {
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// adder sends batches and keeps the summary.
type adder struct {
	c   *cobra.Command
	f   *apiFlags
	cl  *client.Client
	sum addSummary
}

func (a *adder) refuse(line int, code errandapi.Code, msg string) {
	a.sum.Refused = append(a.sum.Refused, lineRefusal{Line: line, Code: code, Message: msg})
}

// taskIndex reads the index the node puts in front of a batch item's
// refusal (docs/api.md: the message starts with the field, tasks[i]…).
var taskIndex = regexp.MustCompile(`^tasks\[(\d+)\][.:]\s*`)

// itemCodes are the codes with which a node refuses a whole add because of
// one of its tasks.
var itemCodes = map[errandapi.Code]bool{
	errandapi.CodeInvalidArgument: true, errandapi.CodePayloadTooLarge: true, errandapi.CodeNoTarget: true,
}

// send adds one batch. An invalid task refuses the whole call and names
// itself: its line is recorded as refused and the rest is sent again. Any
// other refusal of the call (an unknown queue, a bad key, no node) ends
// the file.
func (a *adder) send(batch []lineTask) error {
	batch = append([]lineTask(nil), batch...)
	for len(batch) > 0 {
		tasks := make([]errandapi.NewTask, len(batch))
		for i := range batch {
			tasks[i] = batch[i].task
		}
		res, err := a.cl.AddTasks(a.c.Context(), a.f.instance, a.f.queue, tasks...)
		if err != nil && len(res) == 0 {
			var ae *errandapi.Error
			if !errors.As(err, &ae) || !itemCodes[ae.Code] {
				return err
			}
			i, msg := 0, ae.Message
			if m := taskIndex.FindStringSubmatch(ae.Message); m != nil {
				i, _ = strconv.Atoi(m[1])
				msg = ae.Message[len(m[0]):]
			} else if len(batch) > 1 {
				return err
			}
			if i >= len(batch) {
				return err
			}
			a.refuse(batch[i].line, ae.Code, msg)
			batch = append(batch[:i], batch[i+1:]...)
			continue
		}
		for i, r := range res {
			switch {
			case r.OK:
				a.sum.Added++
			case r.Code == errandapi.CodeTaskExists:
				a.sum.Existing++
			default:
				a.refuse(batch[i].line, r.Code, r.Message)
			}
		}
		return nil
	}
	return nil
}

// report prints the summary: JSON, or a line of counts and one line per
// refusal, in line order.
func (a *adder) report() error {
	sortRefusals(a.sum.Refused)
	if a.f.json {
		return printJSON(a.c.OutOrStdout(), a.sum)
	}
	if err := printf(a.c, "added %d, already existing %d, refused %d\n", a.sum.Added, a.sum.Existing, len(a.sum.Refused)); err != nil {
		return err
	}
	for _, r := range a.sum.Refused {
		if err := printf(a.c, "  line %d: %s: %s\n", r.Line, r.Code, r.Message); err != nil {
			return err
		}
	}
	return nil
}

func sortRefusals(rs []lineRefusal) {
	slices.SortStableFunc(rs, func(a, b lineRefusal) int { return a.Line - b.Line })
}

package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"

	"github.com/errandhq/errand/internal/store"
)

// BundleSummary says what a written bundle holds.
type BundleSummary struct {
	Version   int    `json:"version"`
	Instances int    `json:"instances"`
	Queues    int    `json:"queues"`
	Triggers  int    `json:"triggers"`
	Bytes     int64  `json:"bytes"`
	SHA256    string `json:"sha256"`
}

// WriteBundle writes org's configuration bundle to w as indented JSON, one
// instance at a time: memory holds one instance's queue and rule lists,
// never the bundle, however many instances it has.
func (e *Engine) WriteBundle(ctx context.Context, org string, w io.Writer) (*BundleSummary, error) {
	insts, err := e.InstanceList(ctx, org)
	if err != nil {
		return nil, err
	}
	bw := &bundleWriter{w: w, sum: sha256.New()}
	sum := &BundleSummary{Version: BundleVersion}
	bw.printf("{\n  \"version\": %d,\n  \"exportedAt\": %d,\n  \"instances\": [", BundleVersion, e.now())
	for i, inst := range insts {
		qs, err := e.store.QueueList(ctx, inst.ID)
		if err != nil {
			return nil, err
		}
		trs, err := e.store.TriggerList(ctx, &store.TriggerListParams{InstanceID: inst.ID})
		if err != nil {
			return nil, err
		}
		if i > 0 {
			bw.printf(",")
		}
		bw.printf("\n    {\n      \"name\": ")
		bw.value(inst.Name, "")
		bw.printf(",\n      \"settings\": ")
		bw.value(BundleSettings(inst.Settings), "      ")
		bw.printf(",\n      \"queues\": [")
		for j, q := range qs {
			bw.item(j, bundleQueue(q), "        ")
		}
		bw.close(len(qs), "      ")
		bw.printf(",\n      \"triggers\": [")
		for j, tr := range trs {
			bw.item(j, bundleTrigger(tr, inst.Name), "        ")
		}
		bw.close(len(trs), "      ")
		bw.printf("\n    }")
		sum.Instances++
		sum.Queues += len(qs)
		sum.Triggers += len(trs)
		if bw.err != nil {
			return nil, bw.err
		}
	}
	bw.close(len(insts), "  ")
	bw.printf("\n}\n")
	if bw.err != nil {
		return nil, bw.err
	}
	sum.Bytes, sum.SHA256 = bw.n, hex.EncodeToString(bw.sum.Sum(nil))
	return sum, nil
}

// ExportBundle returns org's configuration bundle in memory (WriteBundle
// streams it).
func (e *Engine) ExportBundle(ctx context.Context, org string) (*Bundle, error) {
	var buf bytes.Buffer
	if _, err := e.WriteBundle(ctx, org, &buf); err != nil {
		return nil, err
	}
	var b Bundle
	if err := json.Unmarshal(buf.Bytes(), &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// bundleWriter writes JSON pieces, counting and hashing them; the first
// error sticks.
type bundleWriter struct {
	w   io.Writer
	sum hash.Hash
	n   int64
	err error
}

func (bw *bundleWriter) write(p []byte) {
	if bw.err != nil {
		return
	}
	n, err := bw.w.Write(p)
	bw.n += int64(n)
	bw.sum.Write(p[:n])
	bw.err = err
}

func (bw *bundleWriter) printf(format string, args ...any) {
	bw.write(fmt.Appendf(nil, format, args...))
}

// value writes v indented as if it sat at indent.
func (bw *bundleWriter) value(v any, indent string) {
	raw, err := json.MarshalIndent(v, indent, "  ")
	if err != nil && bw.err == nil {
		bw.err = err
	}
	bw.write(raw)
}

// item writes element j of an array at indent.
func (bw *bundleWriter) item(j int, v any, indent string) {
	if j > 0 {
		bw.printf(",")
	}
	bw.printf("\n%s", indent)
	bw.value(v, indent)
}

// close ends an array of n elements whose key sits at indent.
func (bw *bundleWriter) close(n int, indent string) {
	if n > 0 {
		bw.printf("\n%s", indent)
	}
	bw.printf("]")
}

package console

import (
	"strconv"
	"strings"

	"github.com/errandhq/errand/errandapi"
)

// The chart's drawing area, in SVG user units (CSS scales it to the
// page's width).
const (
	chartW = 600
	chartH = 120
)

// chart is a queue's activity over the last hour drawn as three lines of
// an inline SVG, computed here: no script draws it.
type chart struct {
	W, H                     int
	Max                      int
	Added, Succeeded, Failed string // polyline points
	TotalAdded               int
	TotalSucceeded           int
	TotalFailed              int
	From, To                 string
	Capped                   bool
}

func newChart(a *errandapi.QueueActivity) *chart {
	c := &chart{W: chartW, H: chartH, Capped: len(a.Capped) > 0}
	n := len(a.Minutes)
	if n == 0 {
		return c
	}
	for _, m := range a.Minutes {
		c.Max = max(c.Max, m.Added, m.Succeeded, m.Failed)
		c.TotalAdded += m.Added
		c.TotalSucceeded += m.Succeeded
		c.TotalFailed += m.Failed
	}
	c.From, c.To = fmtMillis(a.Minutes[0].At)[11:16], fmtMillis(a.Minutes[n-1].At)[11:16]
	top := max(c.Max, 1)
	line := func(v func(errandapi.ActivityMinute) int) string {
		var b strings.Builder
		for i, m := range a.Minutes {
			x := 0
			if n > 1 {
				x = i * chartW / (n - 1)
			}
			y := chartH - v(m)*(chartH-4)/top - 2
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.Itoa(x) + "," + strconv.Itoa(y))
		}
		return b.String()
	}
	c.Added = line(func(m errandapi.ActivityMinute) int { return m.Added })
	c.Succeeded = line(func(m errandapi.ActivityMinute) int { return m.Succeeded })
	c.Failed = line(func(m errandapi.ActivityMinute) int { return m.Failed })
	return c
}

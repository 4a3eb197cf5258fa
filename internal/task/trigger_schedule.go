package task

import (
	"strings"
	"time"
	_ "time/tzdata" // every IANA zone, even on a host without a zoneinfo database

	"github.com/robfig/cron/v3"
)

// Schedule is a parsed schedule rule: when its next tick after a time is.
//
// Daylight-saving time follows Vixie cron, which is what cron users expect:
//   - An expression whose hour field is `*` (every hour, and anything more
//     frequent, and @hourly) runs by elapsed time: "0 * * * *" fires every
//     real hour, twice in the hour that repeats when clocks go back, and not
//     at a wall time that does not exist when they go forward.
//   - Any other expression runs by the wall clock: a time that falls in the
//     hour skipped when clocks go forward fires once, at the change (e.g.
//     02:30 fires at 03:00); a time in the hour that repeats when clocks go
//     back fires once, at its first occurrence.
//   - @every D runs every D of elapsed time, whatever the zone.
type Schedule struct {
	loc     *time.Location
	elapsed cron.Schedule // real-time schedule, or nil
	wall    cron.Schedule // wall-clock schedule evaluated in UTC, or nil
}

// ParseSchedule parses a cron expression (5 fields, or a descriptor such as
// @hourly or @every 30s) in an IANA time zone. A bad expression is
// INVALID_ARGUMENT naming schedule.cron, a bad zone naming schedule.timeZone.
func ParseSchedule(expr, zone string) (*Schedule, error) {
	if zone == "" {
		zone = DefaultTimeZone
	}
	if len(zone) > maxZoneLen {
		return nil, FieldErrorf(CodeInvalidArgument, "schedule.timeZone", "is %d characters: no IANA time zone is longer than %d", len(zone), maxZoneLen)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "Local" {
		return nil, FieldErrorf(CodeInvalidArgument, "schedule.timeZone", "%q is not an IANA time zone (e.g. Europe/Paris, UTC)", zone)
	}
	expr = strings.TrimSpace(expr)
	switch {
	case expr == "":
		return nil, FieldErrorf(CodeInvalidArgument, "schedule.cron", "is required: 5 fields (\"*/5 * * * *\") or a descriptor (@hourly, @every 30s), at most %d characters", MaxCronLen)
	case len(expr) > MaxCronLen:
		return nil, FieldErrorf(CodeInvalidArgument, "schedule.cron", "is %d characters; the most is %d", len(expr), MaxCronLen)
	}
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, FieldErrorf(CodeInvalidArgument, "schedule.cron", "set the zone with schedule.timeZone, not in the expression")
	}
	if d, ok := strings.CutPrefix(expr, "@every "); ok {
		if dur, err := time.ParseDuration(strings.TrimSpace(d)); err == nil && dur < time.Second {
			return nil, FieldErrorf(CodeInvalidArgument, "schedule.cron", "@every must be at least 1s")
		} else if err == nil && dur%time.Second != 0 {
			// The cron package would round it down without a word.
			return nil, FieldErrorf(CodeInvalidArgument, "schedule.cron", "@every takes whole seconds: %v is not (e.g. @every 90s)", dur)
		}
	}
	// Five fields are read as Vixie cron reads them: a field that starts
	// with * (*/2 as well as *) leaves its day unrestricted, so day-of-month
	// and day-of-week combine with AND unless both are restricted (then OR),
	// and a minute or hour field starting with * makes a "wildcard" job,
	// which runs by elapsed time (below); day-of-week 7 is Sunday.
	// robfig/cron marks only a bare * (or ?). Refusals quote the
	// expression as written.
	written := expr
	fields := strings.Fields(expr)
	var star [5]bool
	if len(fields) == 5 {
		fields[4] = sundayAsZero(fields[4])
		for i, f := range fields {
			star[i] = strings.HasPrefix(f, "*")
		}
		expr = strings.Join(fields, " ")
	}
	parsed, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, FieldErrorf(CodeInvalidArgument, "schedule.cron", "%q does not parse: %v", written, err)
	}
	s := &Schedule{loc: loc}
	switch sch := parsed.(type) {
	case cron.ConstantDelaySchedule:
		if sch.Delay < time.Second {
			return nil, FieldErrorf(CodeInvalidArgument, "schedule.cron", "@every must be at least 1s")
		}
		s.elapsed = sch
	case *cron.SpecSchedule:
		for i, bits := range [5]*uint64{1: &sch.Hour, 2: &sch.Dom, 4: &sch.Dow} {
			if bits != nil && star[i] {
				*bits |= starBit
			}
		}
		if star[0] || sch.Hour&starBit != 0 { // a wildcard job (or @hourly)
			sch.Location = loc
			s.elapsed = sch
		} else {
			sch.Location = time.UTC
			s.wall = sch
		}
	default:
		return nil, FieldErrorf(CodeInvalidArgument, "schedule.cron", "%q is not a supported schedule", written)
	}
	if s.Next(time.Unix(0, 0)).IsZero() {
		return nil, FieldErrorf(CodeInvalidArgument, "schedule.cron", "%q never fires", written)
	}
	return s, nil
}

// maxZoneLen bounds a time zone's name (the longest IANA name,
// America/Argentina/ComodRivadavia, is 32 characters) so that a refusal
// does not echo a long one.
const maxZoneLen = 64

// starBit is robfig/cron's mark of a field that restricts nothing.
const starBit = 1 << 63

// sundayAsZero writes a day-of-week field's 7 (Sunday, as Vixie cron
// takes it) as robfig/cron's 0: "7" and a range ending at 7 ("5-7" is
// "5-6,0"). A step over a range ending at 7 is left as written (and
// refused).
func sundayAsZero(dow string) string {
	parts := strings.Split(dow, ",")
	for i, p := range parts {
		switch lo, hi, isRange := strings.Cut(p, "-"); {
		case p == "7":
			parts[i] = "0"
		case isRange && hi == "7" && lo == "0":
			parts[i] = "0-6"
		case isRange && hi == "7" && len(lo) == 1 && lo >= "1" && lo <= "6":
			parts[i] = lo + "-6,0"
		}
	}
	return strings.Join(parts, ",")
}

// Next returns the first tick strictly after t (zero if none within five
// years, which ParseSchedule refuses).
func (s *Schedule) Next(t time.Time) time.Time {
	if s.elapsed != nil {
		return s.elapsed.Next(t).UTC()
	}
	local := t.In(s.loc)
	// The wall clock of t, read as if it were UTC: no DST there.
	after := time.Date(local.Year(), local.Month(), local.Day(), local.Hour(), local.Minute(), local.Second(), local.Nanosecond(), time.UTC)
	for range 1000 {
		w := s.wall.Next(after)
		if w.IsZero() {
			return time.Time{}
		}
		at := firstOccurrence(w, s.loc)
		if got := at.In(s.loc); got.Hour() != w.Hour() || got.Minute() != w.Minute() || got.Day() != w.Day() {
			// w does not exist here (clocks went forward over it): fire at
			// the change, the edge of the zone period Go moved it into.
			start, end := at.ZoneBounds()
			gotWall := time.Date(got.Year(), got.Month(), got.Day(), got.Hour(), got.Minute(), got.Second(), 0, time.UTC)
			switch {
			case gotWall.Before(w) && !end.IsZero():
				at = end
			case gotWall.After(w) && !start.IsZero():
				at = start
			}
		}
		if at.After(t) {
			return at.UTC()
		}
		// A wall time that repeats (clocks went back) fired at its first
		// occurrence already: move on.
		after = w
	}
	return time.Time{}
}

// firstOccurrence is the earliest instant whose wall clock in loc is w's
// (w read in UTC). time.Date leaves the choice open for a wall time that
// occurs twice (clocks went back), and picks the second east of UTC; each
// offset loc has within 12 hours of it is tried instead. A wall time that
// does not exist in loc is time.Date's, which Next moves to the change.
func firstOccurrence(w time.Time, loc *time.Location) time.Time {
	at := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), 0, loc)
	first := at
	for _, near := range []time.Time{at.Add(-12 * time.Hour), at.Add(12 * time.Hour)} {
		_, offset := near.Zone()
		c := w.Add(-time.Duration(offset) * time.Second).In(loc)
		if c.Before(first) && c.Hour() == w.Hour() && c.Minute() == w.Minute() && c.Second() == w.Second() && c.Day() == w.Day() {
			first = c
		}
	}
	return first
}

// NextTickAfter returns the rule's next tick after ms, or 0 when it is not
// a schedule rule or its schedule does not parse.
func (tr *Trigger) NextTickAfter(ms int64) int64 {
	if tr.Kind != TriggerSchedule {
		return 0
	}
	s, err := ParseSchedule(tr.Cron, tr.TimeZone)
	if err != nil {
		return 0
	}
	n := s.Next(time.UnixMilli(ms))
	if n.IsZero() {
		return 0
	}
	return n.UnixMilli()
}

// Due returns the tick to fire for a schedule rule at now: the latest tick
// at or before now since the last one (missed ticks are not replayed one by
// one: only the latest is added) and the tick after now, which the rule
// waits for next. ok is false when no tick is due.
func (tr *Trigger) Due(now int64) (tick, next int64, ok bool) {
	if tr.Kind != TriggerSchedule || tr.NextTickAt == 0 || tr.NextTickAt > now {
		return 0, tr.NextTickAt, false
	}
	s, err := ParseSchedule(tr.Cron, tr.TimeZone)
	if err != nil {
		return 0, 0, false
	}
	tick = tr.NextTickAt
	if cd, ok := s.elapsed.(cron.ConstantDelaySchedule); ok {
		// @every: ticks keep their phase, NextTickAt + k × delay.
		d := cd.Delay.Milliseconds()
		tick += (now - tick) / d * d
		return tick, tick + d, true
	}
	// The latest tick at or before now: a long outage of a frequent
	// schedule starts the walk two periods before now, not at every missed
	// tick.
	latest := func(from int64) int64 {
		t, cur := int64(0), time.UnixMilli(from)
		for range 100000 {
			n := s.Next(cur)
			if n.IsZero() || n.UnixMilli() > now {
				break
			}
			t, cur = n.UnixMilli(), n
		}
		return t
	}
	if p := s.period(tick); p > 0 && now-tick > 2*p.Milliseconds() {
		if t := latest(now - 2*p.Milliseconds()); t > tick {
			tick = t
		}
	}
	if t := latest(tick); t > tick {
		tick = t
	}
	next = s.Next(time.UnixMilli(now)).UnixMilli()
	return tick, next, true
}

// period estimates the gap between two ticks near ms, for the jump ahead.
func (s *Schedule) period(ms int64) time.Duration {
	a := s.Next(time.UnixMilli(ms))
	b := s.Next(a)
	return b.Sub(a)
}

// TickName is the task name that identifies one tick of a rule: a second
// node, a restart or a retry that fires the same tick adds nothing twice.
func TickName(ruleID string, tick int64) string {
	return ruleTaskName(ruleID, time.UnixMilli(tick).UTC().Format("20060102T150405.000Z"))
}

// ruleTaskName names a task a rule adds: the rule's id, '-', and what
// names the task within the rule (a tick, a hook sender's key).
func ruleTaskName(ruleID, within string) string { return ruleID + "-" + within }

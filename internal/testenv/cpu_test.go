package testenv

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// The fields of proc(5)'s /proc/stat "cpu" line, in USER_HZ: user nice system idle iowait irq
// softirq steal guest guest_nice; guest time is already in user's.
func TestStealSinceIsStealOverAllCPUTime(t *testing.T) {
	before, err := parseCPUTimes("cpu  100 0 50 800 10 0 5 35 7 0")
	if err != nil {
		t.Fatal(err)
	}
	// 400 more jiffies: 100 user, 100 system, 100 idle, 100 steal (and 50 guest, within user).
	after, err := parseCPUTimes("cpu  200 0 150 900 10 0 5 135 57 0")
	if err != nil {
		t.Fatal(err)
	}
	if got := after.StealSince(before); got != 0.25 {
		t.Errorf("steal share = %v, want 0.25 (100 of 400 jiffies)", got)
	}
	if got := before.StealSince(after); got != 0 {
		t.Errorf("steal share of counters going back = %v, want 0", got)
	}
}

func TestParseCPUTimesNamesABadLine(t *testing.T) {
	for _, line := range []string{"intr 1 2 3", "cpu 1 2 3", "cpu 1 2 3 4 5 6 x 8"} {
		if _, err := parseCPUTimes(line); err == nil || !strings.Contains(err.Error(), "/proc/stat") {
			t.Errorf("%q: err = %v, want an error naming /proc/stat", line, err)
		}
	}
}

func TestReadCPUTimesReadsThisMachine(t *testing.T) {
	c, err := ReadCPUTimes()
	if err != nil {
		t.Fatal(err)
	}
	if c.total == 0 || c.steal > c.total {
		t.Errorf("CPU times %+v: want some time, steal within it", c)
	}
}

// stealSequence is a meter whose measurements lose the shares given, in turn.
func stealSequence(shares ...float64) func() func() (float64, error) {
	i := 0
	return func() func() (float64, error) {
		s := shares[i]
		i++
		return func() (float64, error) { return s, nil }
	}
}

func TestMeasureQuietlyMeasuresAgainWhileStolen(t *testing.T) {
	for _, c := range []struct {
		name     string
		shares   []float64
		budget   time.Duration
		runs     int
		returned float64
	}{
		{"quiet at once", []float64{0.02}, time.Minute, 1, 0.02},
		{"at the limit counts as quiet", []float64{StolenLimit}, time.Minute, 1, StolenLimit},
		{"quiet on the third", []float64{0.30, 0.20, 0.05}, time.Minute, 3, 0.05},
		{"stolen every time: three runs", []float64{0.30, 0.25, 0.35, 0.01}, time.Minute, 3, 0.35},
		{"no budget left: one run", []float64{0.30, 0.01}, 0, 1, 0.30},
	} {
		t.Run(c.name, func(t *testing.T) {
			runs, waits := 0, 0
			b := &budget{left: c.budget}
			got := measureQuietly(t, "download", func() { runs++ }, stealSequence(c.shares...), func() { waits++ }, b)
			if got != c.returned || runs != c.runs || waits != c.runs-1 {
				t.Errorf("returned %v after %d runs and %d waits, want %v after %d runs and %d waits", got, runs, waits, c.returned, c.runs, c.runs-1)
			}
		})
	}
}

func TestMeasureQuietlySpendsTheBudgetOnRepeats(t *testing.T) {
	b := &budget{left: time.Hour}
	measureQuietly(t, "download", func() { time.Sleep(20 * time.Millisecond) }, stealSequence(0.5, 0.5, 0.5), func() {}, b)
	// Two repeats of at least 20 ms each; the first run is not the budget's.
	if spent := time.Hour - b.spend(0); spent < 40*time.Millisecond || spent >= time.Hour/2 {
		t.Errorf("budget spent %v, want the two repeats' 40 ms or a little more", spent)
	}
}

func TestJudgedDeclinesBoundsOnStolenMeasurements(t *testing.T) {
	if !Judged(t, "quiet", 0, 0.05, StolenLimit) {
		t.Error("measurements within the limit: not judged, want judged")
	}
	if Judged(t, "one stolen", 0.02, 0.11) {
		t.Error("a measurement that lost 11%: judged, want not judged")
	}
}

// hack/test.sh counts the bounds not judged by the marker's text: a copy, checked here.
func TestTheTestRunnerCountsTheNotJudgedMarker(t *testing.T) {
	b, err := os.ReadFile("../../hack/test.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "grep -c '"+NotJudged+"'") {
		t.Errorf("hack/test.sh does not count lines of %q", NotJudged)
	}
}

// errorRecorder is a testing.TB whose Error is recorded rather than failing the test.
type errorRecorder struct {
	testing.TB
	errors []string
}

func (r *errorRecorder) Error(args ...any) { r.errors = append(r.errors, fmt.Sprint(args...)) }

func TestMissedBoundFailsOnlyOnQuietMeasurements(t *testing.T) {
	quiet := &errorRecorder{TB: t}
	MissedBound(quiet, "download: 40 Mbit/s, want >= 60", 0.02, StolenLimit)
	if len(quiet.errors) != 1 || quiet.errors[0] != "download: 40 Mbit/s, want >= 60" {
		t.Errorf("a bound missed on quiet measurements reported %q, want the bound as the one error", quiet.errors)
	}
	stolen := &errorRecorder{TB: t}
	MissedBound(stolen, "download: 40 Mbit/s, want >= 60", 0.02, 0.30)
	if len(stolen.errors) != 0 {
		t.Errorf("a bound missed on a measurement that lost 30%% failed the test: %q", stolen.errors)
	}
}

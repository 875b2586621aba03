package testenv

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// CPUTimes are the machine's CPU time counters, all CPUs summed (/proc/stat's first line).
type CPUTimes struct {
	total, steal uint64
}

// ReadCPUTimes reads them.
func ReadCPUTimes() (CPUTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUTimes{}, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseCPUTimes(line)
}

func parseCPUTimes(line string) (CPUTimes, error) {
	f := strings.Fields(line)
	// cpu user nice system idle iowait irq softirq steal guest guest_nice: guest time is
	// counted in user's already.
	if len(f) < 9 || f[0] != "cpu" {
		return CPUTimes{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var c CPUTimes
	for i, s := range f[1:9] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return CPUTimes{}, fmt.Errorf("/proc/stat: field %d of %q: %w", i+1, line, err)
		}
		c.total += v
		if i == 7 {
			c.steal = v
		}
	}
	return c, nil
}

// StealSince is the share of the CPU time since before that the hypervisor gave to other guests
// while this machine's CPUs wanted to run (steal).
func (c CPUTimes) StealSince(before CPUTimes) float64 {
	if c.total <= before.total {
		return 0
	}
	return float64(c.steal-before.steal) / float64(c.total-before.total)
}

// StolenAtWakeUps has every CPU sleep 200 µs and wake, over and over, for d, and returns the
// share of that time stolen. That is a packet path's pattern, and the one that shows a busy
// host: steal shows only while a CPU wants to run, and a busy loop on every CPU read 0-1.5% in
// the same minutes that these wake-ups read 5-13% and a scenario 14-33%.
func StolenAtWakeUps(d time.Duration) (float64, error) {
	stolen := StealMeter()
	done := make(chan struct{})
	for range runtime.NumCPU() {
		go func() {
			for end := time.Now().Add(d); time.Now().Before(end); {
				time.Sleep(200 * time.Microsecond)
			}
			done <- struct{}{}
		}()
	}
	for range runtime.NumCPU() {
		<-done
	}
	return stolen()
}

// Stolen CPU: a test that measures rates or delays through links emulated in user space
// measures the CPUs it gets. On the shared test machines the hypervisor takes 10-30% of them,
// for seconds or for minutes (CI runs of the UE testbed's scenarios missed their bounds in such
// minutes and met them in the quiet ones after).
const (
	quietSteal = 0.03 // the most a probe may show stolen for the CPUs to count as ours
	quietProbe = 2 * time.Second
	quietPause = 3 * time.Second
)

// StolenLimit is the share of the CPU time the hypervisor may steal during a measurement of
// rates or delays for it to be a measurement of the code: above it, MeasureQuietly measures
// again and Judged declines to judge a bound on it. In passing CI runs the scenarios' downloads
// lost 0-11%; those that missed their bounds, 16-38% (and Linux MPTCP, beside them, did not).
const StolenLimit = 0.10

// NotJudged starts the log line of a bound that was not judged because the CPU was stolen while
// it was measured; hack/test.sh counts these lines in its summary.
const NotJudged = "BOUND NOT JUDGED"

// quietBudget is the most one test process spends waiting for a quiet CPU and measuring again:
// past it, tests measure once, with the CPUs they get. It bounds what a machine robbed for the
// whole run adds to CI (the scenarios' stage takes about 15 minutes).
var quietBudget = budget{left: 8 * time.Minute}

type budget struct {
	mu   sync.Mutex
	left time.Duration
}

// spend takes d from the budget and reports what is left.
func (b *budget) spend(d time.Duration) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left = max(b.left-d, 0)
	return b.left
}

// WaitForQuietCPU waits, at most limit (and at most what is left of the process's budget),
// until a probe of StolenAtWakeUps shows the hypervisor leaving this machine its CPUs, and logs
// how long it waited and what it saw. After that the test goes on (and says so).
func WaitForQuietCPU(t testing.TB, limit time.Duration) {
	t.Helper()
	limit = min(limit, quietBudget.spend(0))
	start := time.Now()
	defer func() { quietBudget.spend(time.Since(start)) }()
	var seen []string
	for {
		s, err := StolenAtWakeUps(quietProbe)
		if err != nil {
			t.Logf("stolen CPU not measured: %v", err)
			return
		}
		seen = append(seen, fmt.Sprintf("%.0f%%", 100*s))
		if s < quietSteal {
			if len(seen) > 1 {
				t.Logf("waited %s for the hypervisor to leave the CPUs (stolen at wake-ups: %s)", time.Since(start).Round(time.Second), strings.Join(seen, " "))
			}
			return
		}
		if time.Since(start) >= limit {
			t.Logf("the hypervisor kept taking CPU for %s (stolen at wake-ups: %s); the test runs anyway", time.Since(start).Round(time.Second), strings.Join(seen, " "))
			return
		}
		time.Sleep(quietPause)
	}
}

// measureTries is how many times MeasureQuietly measures, at most.
const measureTries = 3

// MeasureQuietly runs measure, which takes one measurement (a download, say), and returns the
// share of the CPU time stolen while it ran. If that is above StolenLimit, it waits for a quiet
// CPU (at most a minute) and runs measure again, up to measureTries times in all and while the
// process's budget lasts; measure must start afresh each time. What it returns is the last
// run's share, for Judged.
func MeasureQuietly(t testing.TB, what string, measure func()) float64 {
	t.Helper()
	return measureQuietly(t, what, measure, StealMeter, func() { t.Helper(); WaitForQuietCPU(t, time.Minute) }, &quietBudget)
}

func measureQuietly(t testing.TB, what string, measure func(), meter func() func() (float64, error), wait func(), b *budget) float64 {
	t.Helper()
	for try := 1; ; try++ {
		stolen, start := meter(), time.Now()
		measure()
		s, err := stolen()
		if err != nil {
			t.Logf("%s: stolen CPU not measured: %v", what, err)
			return 0
		}
		if try > 1 {
			b.spend(time.Since(start)) // a measurement taken again is the budget's
		}
		if s <= StolenLimit || try == measureTries || b.spend(0) == 0 {
			return s
		}
		t.Logf("%s: %.0f%% of the CPU time stolen by the hypervisor, more than the %.0f%% a measurement may lose: measuring again (%d of %d)",
			what, 100*s, 100*StolenLimit, try+1, measureTries)
		wait()
	}
}

// Judged reports whether a bound on measurements that lost these shares of the CPU time
// (MeasureQuietly) can be judged: whether none lost more than StolenLimit. If not, it logs
// that the bound was not judged and why, as a line that starts with NotJudged; a bound that is
// judged and missed still fails the test.
func Judged(t testing.TB, bound string, stolen ...float64) bool {
	t.Helper()
	for _, s := range stolen {
		if s > StolenLimit {
			t.Logf("%s: %s: measured with %.0f%% of the CPU time stolen by the hypervisor (limit %.0f%%)", NotJudged, bound, 100*s, 100*StolenLimit)
			return false
		}
	}
	return true
}

// MissedBound fails t with msg, which says what bound was missed, unless a measurement it reads
// lost more than StolenLimit (Judged).
func MissedBound(t testing.TB, msg string, stolen ...float64) {
	t.Helper()
	if Judged(t, msg, stolen...) {
		t.Error(msg)
	}
}

// StealMeter starts measuring stolen CPU time; what it returns gives the share stolen since,
// or an error if /proc/stat could not be read.
func StealMeter() func() (float64, error) {
	before, err := ReadCPUTimes()
	return func() (float64, error) {
		if err != nil {
			return 0, err
		}
		after, err := ReadCPUTimes()
		return after.StealSince(before), err
	}
}

// LogStolenCPU logs, when t ends, the share of the CPU time stolen while it ran.
func LogStolenCPU(t testing.TB) {
	stolen := StealMeter()
	t.Cleanup(func() {
		if s, err := stolen(); err == nil {
			t.Logf("CPU time stolen by the hypervisor while the test ran: %.1f%%", 100*s)
		}
	})
}
